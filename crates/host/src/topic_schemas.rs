//! The schemas kept with each topic, from the instance's side: an outlet registers the
//! schema it writes with before its first record (and names it in each record: in a header
//! unless it is the topic's base, or by its registry id), an inlet learns every schema
//! written to its topic, and [`check_readable`] and [`check_writable`] refuse, before
//! anything runs, a reader that cannot read them all and a writer whose schema breaks its
//! topic's compatibility rule.

use runnel_backend::{Backend, SchemaNaming, TopicSchema};
use runnel_blueprint::Compatibility;
use runnel_blueprint::SchemaBreak;
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

/// An outlet whose schema breaks its topic's compatibility rule against a schema kept for
/// the topic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "streamlet '{instance}' cannot write topic '{topic}' through outlet '{outlet}' with schema '{schema}': {broken}; give a new field a default and keep removed fields' defaults, or set the topic's `compatibility` in the blueprint (docs/schemas.md)"
)]
pub struct IncompatibleSchema {
    /// The streamlet instance.
    pub instance: String,
    /// Its outlet.
    pub outlet: String,
    /// The topic the outlet writes.
    pub topic: String,
    /// The name of the outlet's schema.
    pub schema: String,
    /// The rule, the version and the field.
    pub broken: SchemaBreak,
}

/// A port of an instance, the topic it is connected to, and the topic's compatibility rule.
#[derive(Clone, Copy, Debug)]
pub struct TopicPort<'a> {
    /// The port's name.
    pub port: &'a str,
    /// The topic.
    pub topic: &'a str,
    /// The rule the topic's schemas keep.
    pub compatibility: Compatibility,
}

/// The Avro schemas kept for `topic`, oldest first, as descriptors; none for a topic not
/// created yet.
async fn kept_descriptors(
    backend: &dyn Backend,
    topic: &str,
) -> std::result::Result<Vec<SchemaDescriptor>, runnel_backend::Error> {
    let schemas = match backend.topic_schemas(topic).await {
        Ok(schemas) => schemas,
        // A topic not created yet holds nothing to read.
        Err(runnel_backend::Error::TopicNotFound { .. }) => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    Ok(schemas
        .into_iter()
        .filter_map(|kept| {
            Some(SchemaDescriptor {
                format: Format::Avro,
                name: String::new(),
                definition: serde_json::from_str(&kept.definition).ok()?,
                fingerprint: kept.fingerprint,
            })
        })
        .collect())
}

/// Checks that the schema of each outlet of `shape` keeps its topic's compatibility rule
/// against the schemas kept for the topic (`outlets`), before the instance `instance`
/// starts; returns every outlet that does not, naming the version and the field.
/// Backplanes that keep no schemas pass.
///
/// # Errors
///
/// When the backplane cannot list a topic's schemas.
pub async fn check_writable(
    instance: &str,
    shape: &Shape,
    outlets: &[TopicPort<'_>],
    backend: &dyn Backend,
) -> std::result::Result<Vec<IncompatibleSchema>, runnel_backend::Error> {
    let mut incompatible = Vec::new();
    if !backend.keeps_schemas() {
        return Ok(incompatible);
    }
    for outlet in outlets {
        let Some(writer) = shape.outlet_schema(outlet.port) else {
            continue;
        };
        if writer.format != Format::Avro || outlet.compatibility == Compatibility::None {
            continue;
        }
        let kept = kept_descriptors(backend, outlet.topic).await?;
        if kept
            .iter()
            .any(|kept| kept.fingerprint == writer.fingerprint)
        {
            continue;
        }
        if let Err(broken) = outlet.compatibility.check(&writer, &kept) {
            incompatible.push(IncompatibleSchema {
                instance: instance.to_owned(),
                outlet: outlet.port.to_owned(),
                topic: outlet.topic.to_owned(),
                schema: writer.name.clone(),
                broken,
            });
        }
    }
    Ok(incompatible)
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

/// Checks that each inlet of `shape` can read every schema kept for its topic (`inlets`),
/// before the instance `instance` starts: records of each may still be on the topic,
/// whatever its rule, unless the rule is NONE. Returns every inlet that cannot, naming the
/// field that breaks resolution. Backplanes that keep no schemas pass.
///
/// # Errors
///
/// When the backplane cannot list a topic's schemas.
pub async fn check_readable(
    instance: &str,
    shape: &Shape,
    inlets: &[TopicPort<'_>],
    backend: &dyn Backend,
) -> std::result::Result<Vec<UnreadableSchema>, runnel_backend::Error> {
    let mut unreadable = Vec::new();
    if !backend.keeps_schemas() {
        return Ok(unreadable);
    }
    for inlet in inlets {
        let Some(reader) = shape.inlet_schema(inlet.port) else {
            continue;
        };
        if reader.format != Format::Avro || inlet.compatibility == Compatibility::None {
            continue;
        }
        let kept = kept_descriptors(backend, inlet.topic).await?;
        for (index, writer) in kept.iter().enumerate() {
            if writer.fingerprint == reader.fingerprint {
                continue;
            }
            if let Err(reason) = reader.can_read(writer) {
                unreadable.push(UnreadableSchema {
                    instance: instance.to_owned(),
                    inlet: inlet.port.to_owned(),
                    topic: inlet.topic.to_owned(),
                    fingerprint: writer.fingerprint.clone(),
                    number: index + 1,
                    reason,
                });
            }
        }
    }
    Ok(unreadable)
}
