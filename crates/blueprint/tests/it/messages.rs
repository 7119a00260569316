//! What the diagnostics say, beyond their codes and positions (which the golden fixtures
//! check): the exact rules, the suggestions, the hints and the facts.

use std::path::Path;

use runnel_blueprint::{Code, Diagnostic, render_human, verify};

use crate::support::{descriptor, descriptor_for, fixtures};

/// The diagnostics of an invalid fixture.
fn diagnostics_of(case: &str) -> Vec<Diagnostic> {
    let path = fixtures().join("invalid").join(format!("{case}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    verify(Path::new("b.toml"), &text, &descriptor_for(&path, &text)).diagnostics
}

fn only(case: &str) -> Diagnostic {
    let mut diagnostics = diagnostics_of(case);
    assert_eq!(diagnostics.len(), 1, "{case}: {diagnostics:?}");
    diagnostics.remove(0)
}

#[test]
fn name_rules_are_stated_exactly() {
    assert_eq!(
        only("non-ascii-streamlet-name").message,
        "invalid streamlet instance name 'journal-é': 'é' is not allowed: a DNS label has only lowercase ASCII letters (a-z), digits (0-9) and '-'"
    );
    let type_name = only("non-ascii-type-name");
    assert_eq!(
        type_name.message,
        "invalid streamlet type name 'sensors::Édition': segment 'Édition' starts with 'É'; a segment must start with an ASCII letter (a-z, A-Z) or '_'"
    );
    assert_eq!(type_name.facts.character.as_deref(), Some("É"));
}

#[test]
fn an_unknown_type_lists_the_registered_ones_and_suggests_the_nearest() {
    let problem = only("streamlet-descriptor-not-found");
    assert!(
        problem.message.starts_with(
            "no streamlet type 'genrator' in app 'sensor-data'; did you mean 'generator'? (it registers generator, to-metrics, logger, sensors::Validate, printer,"
        ),
        "{}",
        problem.message
    );
    assert_eq!(problem.facts.suggestions, ["generator"]);
    assert_eq!(
        problem.facts.registered_types[..2],
        ["generator", "to-metrics"]
    );
    assert_eq!(problem.facts.registered_type_count, Some(14));
}

#[test]
fn a_misspelt_path_names_the_port_meant_and_that_it_is_on_no_topic() {
    for case in [
        "misspelt-port-is-not-also-unconnected",
        "misspelt-instance-is-not-also-unconnected",
    ] {
        let problem = only(case);
        assert!(
            problem
                .message
                .ends_with("; did you mean 'gen.out', which is on no topic?"),
            "{case}: {}",
            problem.message
        );
    }
    let wrong_way = only("wrong-direction-is-not-also-unconnected");
    assert_eq!(wrong_way.code, Code::InvalidProducerPortPath);
    assert_eq!(wrong_way.facts.suggestions, ["m.out"]);
}

#[test]
fn a_misspelt_path_still_leaves_other_unconnected_ports_reported() {
    // 'gen.outt' meant 'gen.out'; the printer's inlet is on no topic at all and is still
    // reported.
    let text = "name = \"x\"\n[streamlets]\ngen = \"generator\"\nprinter = \"printer\"\n\
                [topics.t]\nproducers = [\"gen.outt\"]\n";
    let codes: Vec<Code> = verify(Path::new("b.toml"), text, &descriptor("app.json"))
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(
        codes,
        [
            Code::UnconnectedInlets,
            Code::TopicWithoutConsumers,
            Code::PortPathNotFound
        ]
    );
}

#[test]
fn a_cloudflow_connections_table_gets_the_equivalent_topics() {
    let problem = only("cloudflow-connections");
    assert!(
        problem
            .message
            .starts_with("[connections] is Cloudflow 1.x syntax: use topics instead"),
        "{}",
        problem.message
    );
    assert_eq!(
        problem.help.as_deref(),
        Some(
            "replace [connections] with topics:\n\n\
             [topics.gen-out]\nproducers = [\"gen.out\"]\nconsumers = [\"printer.in\", \"metrics.in\"]\n\n\
             [topics.metrics-out]\nproducers = [\"metrics.out\"]\nconsumers = [\"log.in\"]"
        )
    );
    assert_eq!(problem.facts.key.as_deref(), Some("connections"));
}

#[test]
fn the_help_is_rendered_under_the_quote() {
    let path = fixtures().join("invalid/cloudflow-connections.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let verification = verify(Path::new("b.toml"), &text, &descriptor("app.json"));
    let report = render_human(&verification.diagnostics, &text);
    assert!(
        report.contains(
            "11 | [connections]\n   |  ^^^^^^^^^^^\n   = help: replace [connections] with topics:\n\n           [topics.gen-out]\n"
        ),
        "{report}"
    );
}

#[test]
fn parameter_constraints_name_the_value_and_what_is_allowed() {
    assert_eq!(
        only("default-outside-range").message,
        "the default of int parameter 'batch' of streamlet type 'widget' is invalid: '500' is outside the allowed range 1 to 100"
    );
    let not_allowed = only("default-not-an-allowed-value");
    assert!(
        not_allowed
            .message
            .ends_with("'loud' is not one of the allowed values: debug, info, warn"),
        "{}",
        not_allowed.message
    );
    assert_eq!(not_allowed.facts.allowed_values, ["debug", "info", "warn"]);
    assert_eq!(not_allowed.facts.value.as_deref(), Some("loud"));
    assert_eq!(
        only("invalid-config-parameter-constraint").message,
        "the constraints of duration parameter 'timeout' of streamlet type 'widget' are invalid: min '5 s' is above max '1 s'"
    );
    assert!(
        only("ambiguous-memory-size-default")
            .message
            .ends_with("'KB' is ambiguous; write kB (1000 bytes) or KiB (1024 bytes)")
    );
}

#[test]
fn backtracking_is_reported_for_relative_paths_too() {
    let messages: Vec<String> = diagnostics_of("relative-backtracking-volume-mount-path")
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert_eq!(
        messages,
        [
            "volume mount 'data' of streamlet type 'widget': the path '../data' is not absolute (it must start with '/')",
            "volume mount 'data' of streamlet type 'widget': the path '../data' has a '..' component",
        ]
    );
}

#[test]
fn each_group_of_cycles_is_reported_once_with_its_shortest_cycle() {
    let cycles: Vec<(String, Vec<String>)> = diagnostics_of("cycles-reported-once-per-group")
        .into_iter()
        .map(|d| (d.message, d.facts.cycle))
        .collect();
    assert_eq!(
        cycles,
        [
            (
                "records can flow in a cycle: first -[first-out]-> second -[back]-> first".into(),
                vec!["first".into(), "second".into(), "first".into()]
            ),
            (
                "records can flow in a cycle: alone -[alone-out]-> alone".into(),
                vec!["alone".into(), "alone".into()]
            ),
        ]
    );
}
