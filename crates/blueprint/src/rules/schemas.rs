//! Schemas on a topic: `IncompatibleSchema`.
//!
//! For every producer and consumer of a topic, the consumer must read what the producer
//! writes: the same format and, by Avro schema resolution, a reader schema that can read the
//! writer's data. JSON ports carry the Avro schema of the same Rust type, and are checked by
//! the same resolution (serde reads JSON by the same field and type rules, near enough). All
//! producers of a topic must also write one format, or its consumers could not decode it. A
//! topic's declared `schema` is what clients outside the blueprint write it with: one more
//! writer, in Avro.

use std::collections::HashMap;

use crate::code::Code;
use crate::descriptor::SchemaDescriptor;
use crate::facts::Facts;
use crate::report::Report;
use crate::rules::{Binding, Context, Port, Role};

/// Checks every producer against every consumer of every topic. Each pair of schemas is
/// resolved once, however many ports share them.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let mut on_topic: Vec<(Vec<_>, Vec<_>)> = vec![(Vec::new(), Vec::new()); cx.file.topics.len()];
    for binding in &cx.bindings {
        if let Some(schema) = schema_of(binding) {
            let (producers, consumers) = &mut on_topic[binding.topic];
            match binding.role {
                Role::Producer => producers.push((binding, schema)),
                Role::Consumer => consumers.push((binding, schema)),
            }
        }
    }
    let mut resolved: HashMap<
        (*const SchemaDescriptor, *const SchemaDescriptor),
        Result<(), String>,
    > = HashMap::new();
    let declared: Vec<Option<SchemaDescriptor>> = cx
        .file
        .topics
        .iter()
        .map(|topic| {
            let schema = topic.schema.as_ref()?;
            Some(crate::rules::kept_schemas::descriptor(
                "",
                schema.value.clone(),
            ))
        })
        .collect();
    for ((topic, (producers, consumers)), declared) in
        cx.file.topics.iter().zip(&on_topic).zip(&declared)
    {
        let id = &topic.id.value;
        // One topic carries one format: every producer's must be the first writer's (the
        // declared schema, else the first producer).
        let (first, others) = match (declared, producers.split_first()) {
            (Some(declared), _) => (Some((None, declared)), producers.as_slice()),
            (None, Some(((producer, schema), others))) => {
                (Some((Some(producer.path), *schema)), others)
            }
            (None, None) => (None, producers.as_slice()),
        };
        if let Some((first_path, first_schema)) = first {
            for (producer, schema) in others {
                if schema.format == first_schema.format {
                    continue;
                }
                let first_writes = match first_path {
                    Some(path) => format!(" but '{path}' writes {}", first_schema.format),
                    None => format!(
                        ", whose declared 'schema' says its other writers write {}",
                        first_schema.format
                    ),
                };
                let facts = Facts::new()
                    .topic(id)
                    .producer(producer.path)
                    .writer_schema(&schema.name);
                report.at(
                    Code::IncompatibleSchema,
                    producer.span.clone(),
                    format!(
                        "'{}' writes {} to topic '{id}'{first_writes}; one topic carries one format",
                        producer.path, schema.format
                    ),
                    match first_path {
                        Some(path) => facts.other_producer(path),
                        None => facts,
                    },
                );
            }
        }
        if let Some(declared) = declared {
            for (consumer, reader) in consumers {
                if let Err(reason) = reader.can_read(declared) {
                    report.at(
                        Code::IncompatibleSchema,
                        consumer.span.clone(),
                        format!(
                            "'{}' cannot read what topic '{id}' is written with by its declared 'schema': {reason}",
                            consumer.path
                        ),
                        Facts::new()
                            .topic(id)
                            .consumer(consumer.path)
                            .writer_schema(&declared.name)
                            .reader_schema(&reader.name),
                    );
                }
            }
        }
        for (consumer, reader) in consumers {
            for (producer, writer) in producers {
                let verdict = resolved
                    .entry((std::ptr::from_ref(*writer), std::ptr::from_ref(*reader)))
                    .or_insert_with(|| compatible(writer, reader));
                if let Err(reason) = verdict {
                    report.at(
                        Code::IncompatibleSchema,
                        consumer.span.clone(),
                        format!(
                            "'{}' cannot read what '{}' writes to topic '{id}': {reason}",
                            consumer.path, producer.path
                        ),
                        Facts::new()
                            .topic(id)
                            .producer(producer.path)
                            .consumer(consumer.path)
                            .writer_schema(&writer.name)
                            .reader_schema(&reader.name),
                    );
                }
            }
        }
    }
}

fn schema_of<'a>(binding: &Binding<'a>) -> Option<&'a SchemaDescriptor> {
    match binding.port? {
        Port::Inlet(inlet) => Some(&inlet.schema),
        Port::Outlet(outlet) => Some(&outlet.schema),
    }
}

/// Whether a port with the `reader` schema reads what a port with the `writer` schema writes.
fn compatible(writer: &SchemaDescriptor, reader: &SchemaDescriptor) -> Result<(), String> {
    reader.can_read(writer)
}
