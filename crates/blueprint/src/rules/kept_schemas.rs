//! The blueprint's schemas against those a backplane keeps for its topics (`verify --against`):
//! `IncompatibleSchemaChange` where a consumer cannot read a schema records of its topic were
//! written with, or a producer's schema breaks its topic's compatibility rule.

use crate::code::Code;
use crate::compatibility::Compatibility;
use crate::descriptor::{Format, SchemaDescriptor};
use crate::facts::Facts;
use crate::report::Report;
use crate::rules::{Context, Port, Role};
use crate::verify::KeptSchemas;

/// Checks every Avro port bound to a topic with kept schemas, unless the topic's rule is
/// NONE: a consumer must read every kept schema (records of each may still be on the topic),
/// a producer's schema must keep the rule against them.
pub(crate) fn check(cx: &Context<'_>, kept: &KeptSchemas, report: &mut Report<'_>) {
    for binding in &cx.bindings {
        let topic = &cx.file.topics[binding.topic];
        let name = &topic.effective_name().value;
        let Some(registered) = kept.get(name).filter(|kept| !kept.is_empty()) else {
            continue;
        };
        let rule = topic
            .compatibility
            .as_ref()
            .map_or_else(Compatibility::default, |rule| rule.value);
        let schema = match binding.port {
            Some(Port::Inlet(inlet)) => &inlet.schema,
            Some(Port::Outlet(outlet)) => &outlet.schema,
            None => continue,
        };
        if schema.format != Format::Avro || rule == Compatibility::None {
            continue;
        }
        let facts = Facts::new().topic(&topic.id.value);
        match binding.role {
            Role::Consumer => {
                for (index, writer) in registered.iter().enumerate() {
                    if writer.fingerprint == schema.fingerprint {
                        continue;
                    }
                    if let Err(reason) = schema.can_read(writer) {
                        report.at(
                            Code::IncompatibleSchemaChange,
                            binding.span.clone(),
                            format!(
                                "'{}' cannot read records on topic '{name}' written with its schema version {}: {reason}",
                                binding.path,
                                index + 1
                            ),
                            facts
                                .clone()
                                .consumer(binding.path)
                                .writer_schema(&writer.name)
                                .reader_schema(&schema.name),
                        );
                    }
                }
            }
            Role::Producer => {
                if registered
                    .iter()
                    .any(|kept| kept.fingerprint == schema.fingerprint)
                {
                    continue;
                }
                if let Err(broken) = rule.check(schema, registered) {
                    report.at(
                        Code::IncompatibleSchemaChange,
                        binding.span.clone(),
                        format!(
                            "'{}' cannot write topic '{name}' with schema '{}': {broken}",
                            binding.path, schema.name
                        ),
                        facts
                            .clone()
                            .producer(binding.path)
                            .writer_schema(&schema.name)
                            .reader_schema(&registered[broken.version - 1].name),
                    );
                }
            }
        }
    }
}

/// A kept schema as a descriptor, for [`KeptSchemas`]: `name` is its Avro full name.
pub(crate) fn descriptor(fingerprint: &str, definition: serde_json::Value) -> SchemaDescriptor {
    let name = apache_avro::Schema::parse(&definition)
        .ok()
        .and_then(|schema| schema.name().map(|name| name.fullname(None)))
        .unwrap_or_default();
    SchemaDescriptor {
        format: Format::Avro,
        name,
        definition,
        fingerprint: fingerprint.to_owned(),
    }
}
