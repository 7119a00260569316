//! The schemas kept with each topic, from the instance's side: an outlet registers the
//! schema it writes with before its first record (and names it in each record: in a header
//! unless it is the topic's base, or by its registry id), an inlet learns every schema
//! written to its topic, and [`check_readable`] refuses, before anything runs, a reader that
//! cannot read them all.

use runnel_backend::{Backend, SchemaNaming, TopicSchema};
use runnel_blueprint::descriptor::{Format, SchemaDescriptor};
use runnel_streamlet::{Error, Result, Shape};

/// An inlet that cannot read records already on its topic: its schema changed in a way
/// that does not resolve a schema they were written with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "streamlet '{instance}' cannot read topic '{topic}' through inlet '{inlet}': records on it were written with schema {fingerprint} (the topic's schema number {number}), and {reason}; give a new field a default (#[serde(default)] with #[avro(default = \"...\")]), or write the changed type to a new topic"
)]
pub struct UnreadableSchema {
    /// The streamlet instance.
    pub instance: String,
    /// Its inlet.
    pub inlet: String,
    /// The topic the inlet reads.
    pub topic: String,
    /// The fingerprint of the schema the inlet cannot read.
    pub fingerprint: String,
    /// Which of the topic's schemas it is, from 1 (the base).
    pub number: usize,
    /// What breaks resolution, naming the field.
    pub reason: String,
}

/// How an outlet's records name the schema they were written with.
#[derive(Debug, Default)]
pub(crate) struct OutletNaming {
    /// In the schema header.
    pub(crate) tag: bool,
    /// By this registry id, in the Confluent wire format.
    pub(crate) registry_id: Option<u32>,
}

/// Registers the Avro `schema` an outlet writes `topic` with, where the backplane keeps
/// schemas; returns how its records name it: in a header where it is not the topic's base,
/// by its registry id where a registry keeps them, else by `tag` (the blueprint's rule).
pub(crate) async fn register_outlet(
    backend: &dyn Backend,
    topic: &str,
    schema: Option<SchemaDescriptor>,
    tag: bool,
) -> Result<OutletNaming> {
    let by_blueprint = OutletNaming {
        tag,
        registry_id: None,
    };
    let Some(schema) = schema.filter(|schema| schema.format == Format::Avro) else {
        return Ok(by_blueprint);
    };
    if !backend.keeps_schemas() {
        return Ok(by_blueprint);
    }
    let kept = TopicSchema::new(&schema.fingerprint, schema.definition.to_string());
    let schemas = backend
        .register_schema(topic, &kept)
        .await
        .map_err(Error::external)?;
    Ok(match backend.schema_naming() {
        SchemaNaming::Header => OutletNaming {
            tag: schemas
                .first()
                .is_some_and(|base| base.fingerprint != schema.fingerprint),
            registry_id: None,
        },
        SchemaNaming::RegistryId => {
            let registered = schemas
                .iter()
                .rev()
                .find(|kept| kept.fingerprint == schema.fingerprint)
                .and_then(|kept| kept.id);
            let Some(id) = registered else {
                return Err(Error::msg(format!(
                    "the schema registry accepted the schema of topic '{topic}' ({}) but does not list it among the topic's schemas",
                    schema.name
                )));
            };
            OutletNaming {
                tag: false,
                registry_id: Some(id),
            }
        }
    })
}

/// The schemas an inlet learns from the backplane about its topic.
#[derive(Debug, Default)]
pub(crate) struct InletSchemas {
    /// Every schema kept for the topic, to add to the writer schemas the inlet knows.
    pub(crate) writers: Vec<serde_json::Value>,
    /// The topic's base schema, where records name theirs in a header.
    pub(crate) base: Option<serde_json::Value>,
    /// The schemas by registry id, where a registry keeps them.
    pub(crate) registry: Option<Vec<(u32, serde_json::Value)>>,
}

/// The schemas kept for `topic`; nothing where the backplane keeps none.
pub(crate) async fn kept(backend: &dyn Backend, topic: &str) -> Result<InletSchemas> {
    if !backend.keeps_schemas() {
        return Ok(InletSchemas::default());
    }
    let schemas = backend
        .topic_schemas(topic)
        .await
        .map_err(Error::external)?;
    let parsed: Vec<(Option<u32>, serde_json::Value)> = schemas
        .iter()
        .filter_map(|schema| Some((schema.id, serde_json::from_str(&schema.definition).ok()?)))
        .collect();
    let writers: Vec<serde_json::Value> = parsed
        .iter()
        .map(|(_, definition)| definition.clone())
        .collect();
    Ok(match backend.schema_naming() {
        SchemaNaming::Header => InletSchemas {
            base: writers.first().cloned(),
            writers,
            registry: None,
        },
        SchemaNaming::RegistryId => InletSchemas {
            registry: Some(
                parsed
                    .into_iter()
                    .filter_map(|(id, definition)| Some((id?, definition)))
                    .collect(),
            ),
            writers,
            base: None,
        },
    })
}

/// Checks that each inlet of `shape` can read every schema kept for its topic
/// (`inlets`: port and topic), before the instance `instance` starts; returns every inlet
/// that cannot, naming the field that breaks resolution. Backplanes that keep no schemas
/// pass.
///
/// # Errors
///
/// When the backplane cannot list a topic's schemas.
pub async fn check_readable(
    instance: &str,
    shape: &Shape,
    inlets: &[(&str, &str)],
    backend: &dyn Backend,
) -> std::result::Result<Vec<UnreadableSchema>, runnel_backend::Error> {
    let mut unreadable = Vec::new();
    if !backend.keeps_schemas() {
        return Ok(unreadable);
    }
    for (inlet, topic) in inlets {
        let Some(reader) = shape.inlet_schema(inlet) else {
            continue;
        };
        if reader.format != Format::Avro {
            continue;
        }
        let schemas = match backend.topic_schemas(topic).await {
            Ok(schemas) => schemas,
            // A topic not created yet holds nothing to read.
            Err(runnel_backend::Error::TopicNotFound { .. }) => continue,
            Err(error) => return Err(error),
        };
        for (index, kept) in schemas.iter().enumerate() {
            if kept.fingerprint == reader.fingerprint {
                continue;
            }
            let Ok(definition) = serde_json::from_str(&kept.definition) else {
                continue;
            };
            let writer = SchemaDescriptor {
                format: Format::Avro,
                name: String::new(),
                definition,
                fingerprint: kept.fingerprint.clone(),
            };
            if let Err(reason) = reader.can_read(&writer) {
                unreadable.push(UnreadableSchema {
                    instance: instance.to_owned(),
                    inlet: (*inlet).to_owned(),
                    topic: (*topic).to_owned(),
                    fingerprint: kept.fingerprint.clone(),
                    number: index + 1,
                    reason,
                });
            }
        }
    }
    Ok(unreadable)
}
