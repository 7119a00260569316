//! The checked `Blueprint` that `verify` builds, and the one-pass, deterministic report.

use std::collections::BTreeMap;
use std::path::Path;

use runnel_blueprint::{Code, PortPath, Severity, parse, verify};

use crate::support::{descriptor, fixtures};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

#[test]
fn the_checked_blueprint_carries_every_topic_setting() {
    let text = fixture("valid/all-topic-settings.toml");
    let verification = verify(Path::new("b.toml"), &text, &descriptor("app.json"));
    let blueprint = verification.blueprint.expect("valid");
    assert_eq!(blueprint.name, "sensor-data");
    let topic = blueprint.topic_of("printer", "in").expect("bound");
    assert_eq!(topic.id, "readings");
    assert_eq!(topic.name, "sensor-readings.v1");
    assert_eq!((topic.partitions, topic.replication), (Some(3), Some(1)));
    assert!(topic.managed);
    assert_eq!(topic.cluster.as_deref(), Some("default"));
    assert_eq!(
        topic.config,
        BTreeMap::from([
            ("cleanup.policy".to_owned(), "delete".to_owned()),
            ("retention.ms".to_owned(), "86400000".to_owned()),
        ])
    );
    assert_eq!(topic.producer_config["enable.idempotence"], "true");
    assert_eq!(topic.consumer_config["fetch.min.bytes"], "1");
    assert_eq!(topic.producers, [PortPath::parse("gen.out").unwrap()]);
    assert_eq!(blueprint.topic_of("gen", "out"), Some(topic));
    assert_eq!(blueprint.topic_of("gen", "nope"), None);
}

#[test]
fn defaults_apply_and_suffix_references_resolve_to_the_full_type_name() {
    let text = fixture("valid/suffix-reference.toml");
    let blueprint = verify(Path::new("b.toml"), &text, &descriptor("app.json"))
        .blueprint
        .expect("valid");
    assert_eq!(
        blueprint.streamlet("validate").unwrap().type_name,
        "sensors::Validate"
    );
    let topic = blueprint.topic("valid").unwrap();
    assert_eq!(topic.name, "valid", "the name defaults to the id");
    assert!(topic.managed, "topics are managed by default");
    assert_eq!((topic.partitions, topic.cluster.as_ref()), (None, None));
    let names: Vec<_> = blueprint
        .streamlets
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["gen", "validate", "valid-log", "rejected-log"],
        "file order"
    );
}

#[test]
fn warnings_do_not_withhold_the_blueprint() {
    let text = fixture("invalid/topic-without-consumers.toml");
    let verification = verify(Path::new("b.toml"), &text, &descriptor("app.json"));
    assert!(verification.has_warnings() && !verification.has_errors());
    assert!(verification.blueprint.is_some());
    assert_eq!(verification.count(Severity::Warning), 1);
}

#[test]
fn every_problem_is_reported_in_one_pass_sorted_by_position() {
    let text = r#"name = "Demo App"
[streamlets]
Gen = "generator"
printer = "printr"
log = "logger"
[topics."bad topic"]
producers = ["Gen.out", "nothing"]
consumers = ["log.inn"]
partitions = "two"
colour = "blue"
"#;
    let verification = verify(Path::new("b.toml"), text, &descriptor("app.json"));
    let found: Vec<_> = verification
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().unwrap();
            (d.code, l.line, l.column)
        })
        .collect();
    assert_eq!(
        found,
        [
            (Code::InvalidAppName, 1, 8),
            (Code::InvalidStreamletName, 3, 1),
            (Code::StreamletDescriptorNotFound, 4, 11),
            // log.in is not also unconnected: 'log.inn' on line 8 meant it.
            (Code::InvalidTopicName, 6, 9),
            (Code::InvalidPortPath, 7, 25),
            (Code::PortPathNotFound, 8, 14),
            (Code::BlueprintFormatError, 9, 14),
            (Code::BlueprintFormatError, 10, 1),
        ]
    );
    let again = verify(Path::new("b.toml"), text, &descriptor("app.json"));
    assert_eq!(again, verification, "deterministic");
}

#[test]
fn parse_checks_without_a_descriptor_and_keeps_references_as_written() {
    let text = fixture("valid/suffix-reference.toml");
    let verification = parse(Path::new("b.toml"), &text);
    assert!(
        verification.diagnostics.is_empty(),
        "{:?}",
        verification.diagnostics
    );
    let blueprint = verification.blueprint.unwrap();
    assert_eq!(
        blueprint.streamlet("validate").unwrap().type_name,
        "Validate"
    );

    let broken = parse(
        Path::new("b.toml"),
        "name = \"x\"\n[streamlets]\na = \"t\"\n[topics.t]\nproducers = [\"b.out\"]\n",
    );
    let codes: Vec<_> = broken.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, [Code::TopicWithoutConsumers, Code::PortPathNotFound]);
}
