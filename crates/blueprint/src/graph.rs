//! Drawing a blueprint: as text for a terminal, as Graphviz `dot`, or as a Mermaid flowchart.
//!
//! Pure functions over a checked [`Blueprint`], so apps and tools can reuse them.

use std::fmt::Write as _;

use crate::blueprint::{Blueprint, Topic};

/// The graph as indented text: the streamlets with their types, then each topic with the
/// ports that write and read it.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{graph, parse};
/// let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\nlog = \"logger\"\n\
///             [topics.numbers]\nproducers = [\"gen.out\"]\nconsumers = [\"log.in\"]\n";
/// let blueprint = parse(Path::new("b.toml"), text).blueprint.unwrap();
/// assert_eq!(graph::render_text(&blueprint), "\
/// app demo
/// streamlets
///   gen  generator
///   log  logger
/// topics
///   numbers
///     gen.out -> numbers -> log.in
/// ");
/// ```
pub fn render_text(blueprint: &Blueprint) -> String {
    let mut out = format!("app {}\nstreamlets\n", blueprint.name);
    let width = blueprint
        .streamlets
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0);
    for streamlet in &blueprint.streamlets {
        let _ = writeln!(out, "  {:width$}  {}", streamlet.name, streamlet.type_name);
    }
    out.push_str("topics\n");
    for topic in &blueprint.topics {
        let _ = writeln!(out, "  {}{}", topic.id, topic_details(topic));
        let producers = join(
            topic.producers.iter().map(ToString::to_string),
            "(external)",
        );
        let consumers = join(
            topic.consumers.iter().map(ToString::to_string),
            "(external)",
        );
        let _ = writeln!(out, "    {producers} -> {} -> {consumers}", topic.id);
    }
    out
}

/// The graph in Graphviz `dot`: streamlets as boxes, topics as ellipses, edges labelled with
/// port names.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{graph, parse};
/// let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\n[topics.numbers]\nproducers = [\"gen.out\"]\n";
/// let dot = graph::render_dot(&parse(Path::new("b.toml"), text).blueprint.unwrap());
/// assert!(dot.starts_with("digraph \"demo\" {\n"));
/// assert!(dot.contains("  \"s:gen\" -> \"t:numbers\" [label=\"out\"];\n"));
/// ```
pub fn render_dot(blueprint: &Blueprint) -> String {
    let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = format!("digraph {} {{\n  rankdir=LR;\n", quote(&blueprint.name));
    for streamlet in &blueprint.streamlets {
        let label = format!("{}\n{}", streamlet.name, streamlet.type_name).replace('\n', "\\n");
        let _ = writeln!(
            out,
            "  {} [shape=box, label=\"{label}\"];",
            quote(&format!("s:{}", streamlet.name))
        );
    }
    for topic in &blueprint.topics {
        let label = format!("{}{}", topic.id, topic_details(topic));
        let _ = writeln!(
            out,
            "  {} [shape=ellipse, label={}];",
            quote(&format!("t:{}", topic.id)),
            quote(&label)
        );
    }
    for topic in &blueprint.topics {
        let node = quote(&format!("t:{}", topic.id));
        for path in &topic.producers {
            let from = quote(&format!("s:{}", path.streamlet));
            let _ = writeln!(out, "  {from} -> {node} [label={}];", quote(&path.port));
        }
        for path in &topic.consumers {
            let to = quote(&format!("s:{}", path.streamlet));
            let _ = writeln!(out, "  {node} -> {to} [label={}];", quote(&path.port));
        }
    }
    out.push_str("}\n");
    out
}

/// The graph as a Mermaid flowchart (left to right): streamlets as rectangles, topics as
/// stadiums, edges labelled with port names.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{graph, parse};
/// let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\n[topics.numbers]\nproducers = [\"gen.out\"]\n";
/// let mermaid = graph::render_mermaid(&parse(Path::new("b.toml"), text).blueprint.unwrap());
/// assert!(mermaid.starts_with("flowchart LR\n"));
/// assert!(mermaid.contains("  s0 -- \"out\" --> t0\n"));
/// ```
pub fn render_mermaid(blueprint: &Blueprint) -> String {
    // Mermaid ids are positional (names may contain characters ids cannot); labels are quoted
    // with `"` written as an entity.
    let label = |text: &str| format!("\"{}\"", text.replace('"', "#quot;"));
    let streamlet_id = |name: &str| {
        blueprint
            .streamlets
            .iter()
            .position(|s| s.name == name)
            .map_or_else(|| format!("x_{name}"), |index| format!("s{index}"))
    };
    let mut out = String::from("flowchart LR\n");
    for (index, streamlet) in blueprint.streamlets.iter().enumerate() {
        let text = format!("{}<br/>{}", streamlet.name, streamlet.type_name);
        let _ = writeln!(out, "  s{index}[{}]", label(&text));
    }
    for (index, topic) in blueprint.topics.iter().enumerate() {
        let text = format!("{}{}", topic.id, topic_details(topic));
        let _ = writeln!(out, "  t{index}([{}])", label(&text));
    }
    for (index, topic) in blueprint.topics.iter().enumerate() {
        for path in &topic.producers {
            let from = streamlet_id(&path.streamlet);
            let _ = writeln!(out, "  {from} -- {} --> t{index}", label(&path.port));
        }
        for path in &topic.consumers {
            let to = streamlet_id(&path.streamlet);
            let _ = writeln!(out, "  t{index} -- {} --> {to}", label(&path.port));
        }
    }
    out
}

/// ` [name, 3 partitions, unmanaged]`, or nothing when all is default.
fn topic_details(topic: &Topic) -> String {
    let mut details = Vec::new();
    if topic.name != topic.id {
        details.push(format!("name {}", topic.name));
    }
    if let Some(partitions) = topic.partitions {
        details.push(format!("{partitions} partitions"));
    }
    if let Some(replication) = topic.replication {
        details.push(format!("replication {replication}"));
    }
    if !topic.managed {
        details.push("unmanaged".into());
    }
    if let Some(cluster) = &topic.cluster {
        details.push(format!("cluster {cluster}"));
    }
    if details.is_empty() {
        String::new()
    } else {
        format!(" [{}]", details.join(", "))
    }
}

fn join(items: impl Iterator<Item = String>, empty: &str) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        empty.to_owned()
    } else {
        items.join(", ")
    }
}
