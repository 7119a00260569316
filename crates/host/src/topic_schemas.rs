//! The schemas kept with each topic, from the instance's side: an outlet registers the
//! schema it writes with before its first record (and names it in each record unless it is
//! the topic's base), an inlet learns every schema written to its topic, and
//! [`check_readable`] refuses, before anything runs, a reader that cannot read them all.

use runnel_backend::{Backend, TopicSchema};
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

/// Registers the Avro `schema` an outlet writes `topic` with, where the backplane keeps
/// schemas; returns whether its records must name it (it is not the topic's base), or
/// `tag` (the blueprint's rule) where the backplane keeps none.
pub(crate) async fn register_outlet(
    backend: &dyn Backend,
    topic: &str,
    schema: Option<SchemaDescriptor>,
    tag: bool,
) -> Result<bool> {
    let Some(schema) = schema.filter(|schema| schema.format == Format::Avro) else {
        return Ok(tag);
    };
    if !backend.keeps_schemas() {
        return Ok(tag);
    }
    let kept = TopicSchema::new(&schema.fingerprint, schema.definition.to_string());
    let schemas = backend
        .register_schema(topic, &kept)
        .await
        .map_err(Error::external)?;
    Ok(schemas
        .first()
        .is_some_and(|base| base.fingerprint != schema.fingerprint))
}

/// The schemas kept for `topic` (definitions, to add to the writer schemas an inlet knows)
/// and its base; nothing where the backplane keeps none.
pub(crate) async fn kept(
    backend: &dyn Backend,
    topic: &str,
) -> Result<(Vec<serde_json::Value>, Option<serde_json::Value>)> {
    if !backend.keeps_schemas() {
        return Ok((Vec::new(), None));
    }
    let schemas = backend
        .topic_schemas(topic)
        .await
        .map_err(Error::external)?;
    let definitions: Vec<serde_json::Value> = schemas
        .iter()
        .filter_map(|schema| serde_json::from_str(&schema.definition).ok())
        .collect();
    let base = definitions.first().cloned();
    Ok((definitions, base))
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
