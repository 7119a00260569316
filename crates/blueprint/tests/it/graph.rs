//! Drawing a checked blueprint as text, dot and mermaid.

use std::path::Path;

use runnel_blueprint::{Blueprint, graph, verify};

use crate::support::{descriptor, fixtures};

fn fan_out() -> Blueprint {
    let text = std::fs::read_to_string(fixtures().join("valid/fan-out.toml")).unwrap();
    verify(Path::new("b.toml"), &text, &descriptor("app.json"))
        .blueprint
        .unwrap()
}

#[test]
fn text_lists_streamlets_and_topics_with_their_ports() {
    assert_eq!(
        graph::render_text(&fan_out()),
        "app sensor-data
streamlets
  gen      generator
  printer  printer
  metrics  to-metrics
  log      logger
topics
  readings
    gen.out -> readings -> printer.in, metrics.in
  metrics
    metrics.out -> metrics -> log.in
"
    );
}

#[test]
fn dot_has_a_node_per_streamlet_and_topic_and_an_edge_per_port() {
    let dot = graph::render_dot(&fan_out());
    assert!(dot.starts_with("digraph \"sensor-data\" {\n  rankdir=LR;\n"));
    assert!(dot.contains("  \"s:metrics\" [shape=box, label=\"metrics\\nto-metrics\"];\n"));
    assert!(dot.contains("  \"t:readings\" [shape=ellipse, label=\"readings\"];\n"));
    assert!(dot.contains("  \"t:readings\" -> \"s:printer\" [label=\"in\"];\n"));
    assert!(dot.contains("  \"s:metrics\" -> \"t:metrics\" [label=\"out\"];\n"));
    assert_eq!(dot.matches(" -> ").count(), 5);
    assert!(dot.ends_with("}\n"));
}

#[test]
fn mermaid_is_a_left_to_right_flowchart() {
    let mermaid = graph::render_mermaid(&fan_out());
    assert!(mermaid.starts_with("flowchart LR\n  s0[\"gen<br/>generator\"]\n"));
    assert!(mermaid.contains("  t0([\"readings\"])\n"));
    assert!(mermaid.contains("  s0 -- \"out\" --> t0\n"));
    assert!(mermaid.contains("  t0 -- \"in\" --> s2\n"));
    assert_eq!(mermaid.matches("-->").count(), 5);
}

#[test]
fn topic_details_show_when_not_default() {
    let text = std::fs::read_to_string(fixtures().join("valid/all-topic-settings.toml")).unwrap();
    let blueprint = verify(Path::new("b.toml"), &text, &descriptor("app.json"))
        .blueprint
        .unwrap();
    assert!(graph::render_text(&blueprint).contains(
        "  readings [name sensor-readings.v1, 3 partitions, replication 1, cluster default]\n"
    ));
}
