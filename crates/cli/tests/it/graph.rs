//! `runnel graph`.

use crate::support::runnel;

#[test]
fn text_is_the_default() {
    let run = runnel(&["graph", "valid/fan-in.toml"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "app sensor-data
streamlets
  gen-a    generator
  gen-b    generator
  printer  printer
topics
  readings
    gen-a.out, gen-b.out -> readings -> printer.in
"
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn dot_and_mermaid() {
    let dot = runnel(&["graph", "--format", "dot", "valid/minimal.toml"]);
    assert_eq!(dot.code, 0, "{dot:?}");
    assert_eq!(
        dot.stdout,
        "digraph \"sensor-data\" {
  rankdir=LR;
  \"s:gen\" [shape=box, label=\"gen\\ngenerator\"];
  \"s:printer\" [shape=box, label=\"printer\\nprinter\"];
  \"t:readings\" [shape=ellipse, label=\"readings\"];
  \"s:gen\" -> \"t:readings\" [label=\"out\"];
  \"t:readings\" -> \"s:printer\" [label=\"in\"];
}
"
    );
    let mermaid = runnel(&["graph", "--format", "mermaid", "valid/minimal.toml"]);
    assert_eq!(mermaid.code, 0, "{mermaid:?}");
    assert!(mermaid.stdout.starts_with("flowchart LR\n"), "{mermaid:?}");
}

#[test]
fn with_a_descriptor_the_blueprint_is_verified_first() {
    let run = runnel(&[
        "graph",
        "--descriptor",
        "descriptors/app.json",
        "valid/suffix-reference.toml",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("  validate      sensors::Validate\n"),
        "{run:?}"
    );

    let broken = runnel(&[
        "graph",
        "--descriptor",
        "descriptors/app.json",
        "invalid/port-path-not-found.toml",
    ]);
    assert_eq!(broken.code, 1, "{broken:?}");
    assert_eq!(broken.stdout, "", "nothing is drawn");
    assert!(
        broken.stderr.starts_with("error[PortPathNotFound]"),
        "{broken:?}"
    );
}

#[test]
fn warnings_go_to_stderr_and_the_graph_is_still_drawn() {
    let run = runnel(&["graph", "invalid/cycle.toml"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.starts_with("warning[CycleInGraph]: records can flow in a cycle: first -[first-out]-> second -[second-out]-> first\n"), "{run:?}");
    assert!(run.stdout.starts_with("app sensor-data\n"), "{run:?}");
}
