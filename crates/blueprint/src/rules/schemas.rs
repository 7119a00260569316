//! Schemas on a topic: `IncompatibleSchema`.
//!
//! For every producer and consumer of a topic, the consumer must read what the producer
//! writes: the same format and, by Avro schema resolution, a reader schema that can read the
//! writer's data. JSON ports carry the Avro schema of the same Rust type, and are checked by
//! the same resolution (serde reads JSON by the same field and type rules, near enough). All
//! producers of a topic must also write one format, or its consumers could not decode it.

use apache_avro::Schema;

use crate::avro::can_read;
use crate::code::Code;
use crate::descriptor::SchemaDescriptor;
use crate::report::Report;
use crate::rules::{Binding, Context, Port, Role};

/// Checks every producer against every consumer of every topic.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    for (index, topic) in cx.file.topics.iter().enumerate() {
        let on_topic = |role| {
            cx.bindings
                .iter()
                .filter(move |b| b.topic == index && b.role == role)
                .filter_map(|b| Some((b, schema_of(b)?)))
                .collect::<Vec<_>>()
        };
        let producers = on_topic(Role::Producer);
        let consumers = on_topic(Role::Consumer);
        let id = &topic.id.value;

        if let Some((first, first_schema)) = producers.first() {
            for (producer, schema) in &producers[1..] {
                if schema.format != first_schema.format {
                    report.at(
                        Code::IncompatibleSchema,
                        producer.span.clone(),
                        format!(
                            "'{}' writes {} to topic '{id}' but '{}' writes {}; one topic carries one format",
                            producer.path, schema.format, first.path, first_schema.format
                        ),
                    );
                }
            }
        }
        for (consumer, reader) in &consumers {
            for (producer, writer) in &producers {
                if let Err(reason) = compatible(writer, reader) {
                    report.at(
                        Code::IncompatibleSchema,
                        consumer.span.clone(),
                        format!(
                            "'{}' cannot read what '{}' writes to topic '{id}': {reason}",
                            consumer.path, producer.path
                        ),
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
    if writer.format != reader.format {
        return Err(format!(
            "it reads {} ('{}') but the producer writes {} ('{}')",
            reader.format, reader.name, writer.format, writer.name
        ));
    }
    if writer.definition == reader.definition {
        return Ok(());
    }
    let parse = |schema: &SchemaDescriptor, side: &str| {
        Schema::parse(&schema.definition).map_err(|error| {
            format!(
                "the {side}'s schema '{}' is not a valid avro schema: {error}",
                schema.name
            )
        })
    };
    let writer_schema = parse(writer, "writer")?;
    let reader_schema = parse(reader, "reader")?;
    can_read(&writer_schema, &reader_schema)
}
