//! [`Schemas`]: the schema of every topic of a blueprint, from the app descriptor, to show
//! records as JSON and to encode JSON as records.
//!
//! A topic's writer schemas are those of the outlets that produce it, and, where the
//! backplane keeps them, every schema ever written to it ([`Schemas::keep`]): a record names
//! its writer's fingerprint in the `runnel.schema` header unless it was written with the
//! topic's base schema (the first kept), or, where no schemas are kept, unless the topic has
//! a single writer schema. A topic's declared `schema` is one more writer schema, and the
//! one new records are written with; a topic nothing in the blueprint produces and that
//! declares none (an input from outside) is read and written with the schema of the inlets
//! that consume it. Where a schema registry keeps the schemas
//! ([`Schemas::framed_by_registry`]), every Avro value starts with its writer schema's
//! registry id (the Confluent wire format), and is shown with that schema whatever the
//! topic, blueprint or not.

use std::collections::HashMap;
use std::sync::RwLock;

use apache_avro::Schema;
use apache_avro::types::Value;
use runnel_backend::{Record, TopicSchema};
use runnel_blueprint::Blueprint;
use runnel_blueprint::descriptor::{AppDescriptor, Format, SchemaDescriptor};
use runnel_codec::{REGISTRY_PREFIX, registry_id};

/// The header naming a record's writer schema (its Rabin fingerprint, in hex).
pub const SCHEMA_HEADER: &str = "runnel.schema";

/// How a record's value was written.
enum Written<'r> {
    Json(&'r [u8]),
    /// The writer schema, the Avro body, and the registry id the value seemed to name
    /// that the registry does not have (then it is read as written before the registry).
    Avro(Schema, &'r [u8], Option<u32>),
}

/// The schemas of the topics of one blueprint.
#[derive(Debug, Default)]
pub struct Schemas {
    topics: HashMap<String, TopicSchemas>,
    /// Where a schema registry keeps the topics' schemas: the schemas known by id so far
    /// (learned as records name them, so tools that only read share the cache).
    registry: Option<RwLock<HashMap<u32, Schema>>>,
    /// Ids the registry said it does not have, so they are not asked for again.
    missing_ids: RwLock<std::collections::HashSet<u32>>,
}

#[derive(Debug)]
struct TopicSchemas {
    format: Format,
    /// Writer schemas by fingerprint, in blueprint order.
    writers: Vec<(String, Schema)>,
    /// What new records are written with: the declared schema, else the consumers', else
    /// the first writer's.
    preferred: (String, Schema),
    /// The definition of `preferred`, to register it where the backplane keeps schemas.
    preferred_definition: String,
    /// The fingerprint of the topic's base schema, where the backplane keeps schemas:
    /// records without a header were written with it.
    base: Option<String>,
}

impl Schemas {
    /// The schemas of `blueprint`'s topics, as `descriptor` declares its ports. Ports whose
    /// schema does not parse are left out (their records show undecoded).
    pub fn new(blueprint: &Blueprint, descriptor: &AppDescriptor) -> Self {
        let port_schema = |streamlet: &str, port: &str, outlet: bool| -> Option<SchemaDescriptor> {
            let instance = blueprint.streamlets.iter().find(|s| s.name == streamlet)?;
            let described = descriptor
                .streamlets
                .iter()
                .find(|s| s.type_name == instance.type_name)?;
            if outlet {
                described
                    .outlets
                    .iter()
                    .find(|o| o.name == port)
                    .map(|o| o.schema.clone())
            } else {
                described
                    .inlets
                    .iter()
                    .find(|i| i.name == port)
                    .map(|i| i.schema.clone())
            }
        };
        let mut topics = HashMap::new();
        for topic in &blueprint.topics {
            let declared = topic
                .schema
                .as_ref()
                .and_then(|definition| runnel_codec::avro_schema_descriptor(definition).ok());
            let writers: Vec<SchemaDescriptor> = declared
                .iter()
                .cloned()
                .chain(
                    topic
                        .producers
                        .iter()
                        .filter_map(|path| port_schema(&path.streamlet, &path.port, true)),
                )
                .collect();
            let readers: Vec<SchemaDescriptor> = topic
                .consumers
                .iter()
                .filter_map(|path| port_schema(&path.streamlet, &path.port, false))
                .collect();
            let Some(first) = declared.as_ref().or(readers.first()).or(writers.first()) else {
                continue;
            };
            let parse = |schema: &SchemaDescriptor| {
                Schema::parse(&schema.definition)
                    .ok()
                    .map(|parsed| (schema.fingerprint.clone(), parsed))
            };
            let Some(preferred) = parse(first) else {
                continue;
            };
            let mut parsed_writers: Vec<(String, Schema)> = Vec::new();
            for writer in writers.iter().filter_map(parse) {
                if !parsed_writers.iter().any(|(known, _)| *known == writer.0) {
                    parsed_writers.push(writer);
                }
            }
            topics.insert(
                topic.name.clone(),
                TopicSchemas {
                    format: first.format,
                    writers: parsed_writers,
                    preferred,
                    preferred_definition: first.definition.to_string(),
                    base: None,
                },
            );
        }
        Schemas {
            topics,
            registry: None,
            missing_ids: RwLock::default(),
        }
    }

    /// Reads every Avro value as in the Confluent wire format: the magic byte 0, the
    /// registry id of its writer schema, then the value.
    pub fn framed_by_registry(&mut self) {
        self.registry.get_or_insert_with(RwLock::default);
    }

    /// The registry ids `records` name that are not known yet, to
    /// [learn](Schemas::learn); none unless values are framed by a registry.
    pub fn unknown_registry_ids<'a>(
        &self,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Vec<u32> {
        let Some(registry) = &self.registry else {
            return Vec::new();
        };
        let known = registry.read().expect("the schema cache is never poisoned");
        let missing = self
            .missing_ids
            .read()
            .expect("the schema cache is never poisoned");
        let mut unknown = Vec::new();
        for record in records {
            if let Some(id) = record.value.as_deref().and_then(registry_id)
                && !known.contains_key(&id)
                && !missing.contains(&id)
                && !unknown.contains(&id)
            {
                unknown.push(id);
            }
        }
        unknown
    }

    /// Remembers that the registry has no schema with `id`.
    pub fn learn_missing(&self, id: u32) {
        self.missing_ids
            .write()
            .expect("the schema cache is never poisoned")
            .insert(id);
    }

    /// Adds a schema the registry keeps, by its id.
    pub fn learn(&self, schema: &TopicSchema) {
        let (Some(registry), Some(id)) = (&self.registry, schema.id) else {
            return;
        };
        let parsed = serde_json::from_str(&schema.definition)
            .ok()
            .and_then(|definition: serde_json::Value| Schema::parse(&definition).ok());
        if let Some(parsed) = parsed {
            registry
                .write()
                .expect("the schema cache is never poisoned")
                .insert(id, parsed);
        }
    }

    /// Adds the schemas the backplane keeps for `topic` (oldest, the base, first), so that
    /// records written with any of them decode, whatever the blueprint says now. Call
    /// [`framed_by_registry`](Schemas::framed_by_registry) first where a registry keeps them.
    pub fn keep(&mut self, topic: &str, kept: &[TopicSchema]) {
        if self.registry.is_some() {
            // Values name their schema by id; those without one predate the registry.
            for schema in kept {
                self.learn(schema);
            }
            return;
        }
        let Some(schemas) = self.topics.get_mut(topic) else {
            return;
        };
        for schema in kept {
            let parsed = serde_json::from_str(&schema.definition)
                .ok()
                .and_then(|definition: serde_json::Value| Schema::parse(&definition).ok());
            let Some(parsed) = parsed else { continue };
            if !schemas
                .writers
                .iter()
                .any(|(known, _)| *known == schema.fingerprint)
            {
                schemas.writers.push((schema.fingerprint.clone(), parsed));
            }
        }
        schemas.base = kept.first().map(|base| base.fingerprint.clone());
    }

    /// The Avro schema new records of `topic` are written with, to register where the
    /// backplane keeps schemas.
    pub fn writer_schema(&self, topic: &str) -> Option<TopicSchema> {
        let schemas = self.topics.get(topic)?;
        (schemas.format == Format::Avro)
            .then(|| TopicSchema::new(&schemas.preferred.0, schemas.preferred_definition.clone()))
    }

    /// The topics whose schemas are known.
    pub fn topics(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }

    /// Whether the topic's schema is known.
    pub fn knows(&self, topic: &str) -> bool {
        self.topics.contains_key(topic)
    }

    /// The record's value as JSON, decoded with its topic's schema: `Err` says why not (an
    /// unknown topic, bytes that do not decode, a null value).
    ///
    /// # Errors
    ///
    /// When the topic's schema is unknown, the value is null (a tombstone) or it does not
    /// decode with the schema.
    pub fn decode(&self, topic: &str, record: &Record) -> Result<serde_json::Value, String> {
        match self.written(topic, record)? {
            Written::Json(value) => serde_json::from_slice(value)
                .map_err(|error| format!("the value is not JSON: {error}")),
            Written::Avro(writer, body, None) => avro_json(&writer, body),
            Written::Avro(writer, body, Some(id)) => avro_json(&writer, body)
                .map_err(|_| format!("the schema registry has no schema with id {id}")),
        }
    }

    /// The Avro body of the record's value (without a registry's prefix) and the schema it
    /// was written with, as JSON: what a SQL query over the topic reads.
    ///
    /// # Errors
    ///
    /// As [`decode`](Self::decode), and when the topic holds JSON.
    pub fn avro_body<'r>(
        &self,
        topic: &str,
        record: &'r Record,
    ) -> Result<(&'r [u8], serde_json::Value), String> {
        match self.written(topic, record)? {
            Written::Json(_) => Err(format!("topic '{topic}' holds JSON, not Avro")),
            Written::Avro(writer, body, _) => Ok((
                body,
                serde_json::to_value(&writer).expect("a parsed schema serializes"),
            )),
        }
    }

    /// The schema new records of `topic` are written with, as JSON, when it is Avro.
    pub fn avro_definition(&self, topic: &str) -> Option<serde_json::Value> {
        let schemas = self.topics.get(topic)?;
        (schemas.format == Format::Avro).then(|| {
            serde_json::from_str(&schemas.preferred_definition).expect("a definition is JSON")
        })
    }

    /// How the record's value was written: as JSON, or in Avro with which schema.
    fn written<'r>(&self, topic: &str, record: &'r Record) -> Result<Written<'r>, String> {
        let value = record
            .value
            .as_deref()
            .ok_or_else(|| "the value is null (a tombstone)".to_owned())?;
        let schemas = self.topics.get(topic);
        // Where a registry keeps the schemas, a value names its writer schema by id; one
        // without the magic byte was written before, and reads as below.
        let mut unknown_id = None;
        if let Some(registry) = &self.registry
            && schemas.is_none_or(|schemas| schemas.format == Format::Avro)
            && let Some(id) = registry_id(value)
        {
            let known = registry.read().expect("the schema cache is never poisoned");
            match known.get(&id) {
                Some(writer) => {
                    return Ok(Written::Avro(
                        writer.clone(),
                        &value[REGISTRY_PREFIX..],
                        None,
                    ));
                }
                None => unknown_id = Some(id),
            }
        }
        let unknown = |reason: String| match unknown_id {
            Some(id) => format!("the schema registry has no schema with id {id}"),
            None => reason,
        };
        let schemas =
            schemas.ok_or_else(|| unknown(format!("no schema is known for topic '{topic}'")))?;
        if schemas.format == Format::Json {
            return Ok(Written::Json(value));
        }
        let writer = match record.headers.get_str(SCHEMA_HEADER) {
            Some(fingerprint) => schemas
                .writers
                .iter()
                .find(|(known, _)| known == fingerprint)
                .map(|(_, schema)| schema)
                .ok_or_else(|| format!("unknown writer schema {fingerprint}"))?,
            None => {
                let base = schemas.base.as_ref().and_then(|base| {
                    schemas
                        .writers
                        .iter()
                        .find(|(known, _)| known == base)
                        .map(|(_, schema)| schema)
                });
                base.or(schemas.writers.first().map(|(_, schema)| schema))
                    .unwrap_or(&schemas.preferred.1)
            }
        };
        Ok(Written::Avro(writer.clone(), value, unknown_id))
    }

    /// `value` encoded for `topic`, with the header naming its schema when the topic's
    /// readers need it.
    ///
    /// # Errors
    ///
    /// When the topic's schema is unknown or `value` does not fit it, saying where.
    pub fn encode(
        &self,
        topic: &str,
        value: &serde_json::Value,
    ) -> Result<(Vec<u8>, Option<String>), String> {
        let schemas = self
            .topics
            .get(topic)
            .ok_or_else(|| format!("no schema is known for topic '{topic}'"))?;
        if schemas.format == Format::Json {
            let bytes = serde_json::to_vec(value).map_err(|error| error.to_string())?;
            return Ok((bytes, None));
        }
        let (fingerprint, schema) = &schemas.preferred;
        let avro = Value::from(value.clone())
            .resolve(schema)
            .map_err(|error| format!("the value does not fit the topic's schema: {error}"))?;
        let bytes = apache_avro::to_avro_datum(schema, avro)
            .map_err(|error| format!("encoding the value failed: {error}"))?;
        // Where schemas are kept the producer decides once it knows the base; elsewhere a
        // topic with several writer schemas names each record's.
        let tag = (schemas.writers.len() > 1).then(|| fingerprint.clone());
        Ok((bytes, tag))
    }
}

/// `bytes`, the Avro encoding of a value of `writer`, as JSON.
fn avro_json(writer: &Schema, mut bytes: &[u8]) -> Result<serde_json::Value, String> {
    let value = apache_avro::from_avro_datum(writer, &mut bytes, None)
        .map_err(|error| format!("the value does not decode as Avro: {error}"))?;
    if !bytes.is_empty() {
        return Err(format!(
            "the value does not decode as Avro: {} bytes left over",
            bytes.len()
        ));
    }
    Ok(avro_to_json(&value))
}

/// An Avro value as plain JSON: records as objects, unions as their branch's value, enums
/// as their symbol, bytes and fixed as `{"base64": ...}`, logical types as their underlying
/// numbers or strings.
pub fn avro_to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        Value::Null => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Int(n) | Value::Date(n) | Value::TimeMillis(n) => Json::from(*n),
        Value::Long(n)
        | Value::TimeMicros(n)
        | Value::TimestampMillis(n)
        | Value::TimestampMicros(n)
        | Value::TimestampNanos(n)
        | Value::LocalTimestampMillis(n)
        | Value::LocalTimestampMicros(n)
        | Value::LocalTimestampNanos(n) => Json::from(*n),
        Value::Float(x) => float(f64::from(*x)),
        Value::Double(x) => float(*x),
        Value::Bytes(bytes) | Value::Fixed(_, bytes) => base64_of(bytes),
        Value::String(text) | Value::Enum(_, text) => Json::String(text.clone()),
        Value::Uuid(uuid) => Json::String(uuid.to_string()),
        Value::Union(_, inner) => avro_to_json(inner),
        Value::Array(items) => Json::Array(items.iter().map(avro_to_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(key, value)| (key.clone(), avro_to_json(value)))
                .collect(),
        ),
        Value::Record(fields) => Json::Object(
            fields
                .iter()
                .map(|(name, value)| (name.clone(), avro_to_json(value)))
                .collect(),
        ),
        other => Json::String(format!("{other:?}")),
    }
}

fn float(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or_else(
        || serde_json::Value::String(x.to_string()),
        serde_json::Value::Number,
    )
}

/// Bytes as `{"base64": "..."}`.
pub(crate) fn base64_of(bytes: &[u8]) -> serde_json::Value {
    use base64::Engine as _;
    serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(bytes) })
}
