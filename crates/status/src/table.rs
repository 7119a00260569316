//! Printing a [`Snapshot`]: tables for people, JSON and YAML for tools.

use std::fmt::Write as _;

use crate::{InstanceSnapshot, Snapshot, StatusError};

/// How `status` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFormat {
    /// Tables of streamlets and topics.
    Table,
    /// The JSON of `/api/status`, pretty-printed.
    Json,
    /// The same as YAML.
    Yaml,
}

impl StatusFormat {
    /// The names `-o` accepts.
    pub const NAMES: [&'static str; 3] = ["table", "json", "yaml"];
}

impl std::str::FromStr for StatusFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "table" => Ok(StatusFormat::Table),
            "json" => Ok(StatusFormat::Json),
            "yaml" => Ok(StatusFormat::Yaml),
            other => Err(format!("'{other}' is not table, json or yaml")),
        }
    }
}

/// The status in `format`: for a table, the app and whether it is ready, a row per
/// streamlet, a line per problem, and a row per topic.
///
/// ```
/// use runnel_status::{Snapshot, StatusFormat, format_status};
/// let snapshot = Snapshot { app: "demo".into(), ..Snapshot::default() };
/// assert!(format_status(&snapshot, StatusFormat::Json)?.contains("\"app\": \"demo\""));
/// # Ok::<(), runnel_status::StatusError>(())
/// ```
///
/// # Errors
///
/// When YAML cannot be written.
pub fn format_status(snapshot: &Snapshot, format: StatusFormat) -> Result<String, StatusError> {
    match format {
        StatusFormat::Json => Ok(serde_json::to_string_pretty(snapshot)
            .expect("a snapshot is always valid json")
            + "\n"),
        StatusFormat::Yaml => serde_norway::to_string(snapshot).map_err(StatusError::Yaml),
        StatusFormat::Table => Ok(full_table(snapshot)),
    }
}

fn full_table(snapshot: &Snapshot) -> String {
    let ready = if snapshot.ready { "ready" } else { "not ready" };
    let mut text = format!("app {} ({ready})\n\n", snapshot.app);
    text.push_str(&render_table(snapshot, ""));
    let width = snapshot
        .topics
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(
        text,
        "{:<width$}  {:>10}  {:>12}  {:>9}",
        "topic", "partitions", "end offsets", "lag"
    );
    for topic in &snapshot.topics {
        let end: u64 = topic.partitions.iter().map(|p| p.end).sum();
        let partitions = if topic.missing {
            "missing".to_owned()
        } else {
            topic.partitions.len().to_string()
        };
        let _ = writeln!(
            text,
            "{:<width$}  {:>10}  {:>12}  {:>9}",
            topic.name,
            partitions,
            grouped(end),
            grouped(topic.lag)
        );
    }
    text
}

/// The streamlets as a table, a row each (state, rates, lag, dead-lettered records,
/// restarts), then a line for each problem or last error, then `footer`. The live view of
/// `run` draws it too.
pub fn render_table(snapshot: &Snapshot, footer: &str) -> String {
    let width = snapshot
        .streamlets
        .iter()
        .map(|i| i.name.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let type_width = snapshot
        .streamlets
        .iter()
        .map(|i| i.type_name.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<width$}  {:<type_width$}  {:<10}  {:>9}  {:>9}  {:>9}  {:>6}  {:>8}",
        "streamlet", "type", "state", "in/s", "out/s", "lag", "dead", "restarts"
    );
    for instance in &snapshot.streamlets {
        let _ = writeln!(
            table,
            "{:<width$}  {:<type_width$}  {:<10}  {:>9}  {:>9}  {:>9}  {:>6}  {:>8}",
            instance.name,
            instance.type_name,
            instance.state.label(),
            grouped(instance.rate_in.round() as u64),
            grouped(instance.rate_out.round() as u64),
            grouped(instance.lag),
            grouped(instance.dead_lettered),
            instance.restarts,
        );
    }
    for instance in &snapshot.streamlets {
        for (name, value) in &instance.details {
            let _ = writeln!(table, "  {}: {name}: {value}", instance.name);
        }
    }
    for instance in &snapshot.streamlets {
        for line in attention(instance) {
            let _ = writeln!(table, "{line}");
        }
    }
    let _ = writeln!(table, "{footer}");
    table
}

/// The lines an instance's problems (or, without any, its last failure) get below the table.
fn attention(instance: &InstanceSnapshot) -> Vec<String> {
    if !instance.problems.is_empty() {
        return instance
            .problems
            .iter()
            .map(|problem| format!("! {}: {problem}", instance.name))
            .collect();
    }
    instance
        .last_error
        .iter()
        .map(|error| format!("  {}: last failure: {error}", instance.name))
        .collect()
}

/// `1234567` as `1,234,567`.
///
/// ```
/// assert_eq!(runnel_status::grouped(1_234_567), "1,234,567");
/// ```
pub fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InstanceState, Problem};

    fn instance(name: &str, rate: f64, lag: u64) -> InstanceSnapshot {
        InstanceSnapshot {
            name: name.into(),
            type_name: "logger".into(),
            state: InstanceState::Running,
            restarts: 1,
            records_in: 10,
            records_out: 0,
            rate_in: rate,
            rate_out: 0.0,
            lag,
            dead_lettered: 3,
            skipped: 0,
            given_up: 0,
            watermark: None,
            problems: Vec::new(),
            last_error: None,
            details: Default::default(),
            keyed_state: None,
            inlets: Vec::new(),
            outlets: Vec::new(),
        }
    }

    #[test]
    fn the_table_has_a_row_per_instance_with_grouped_numbers() {
        let snapshot = Snapshot {
            app: "a".into(),
            ready: true,
            topics: Vec::new(),
            streamlets: vec![instance("valid-log", 12_345.4, 1_000_000)],
        };
        let table = render_table(&snapshot, "Ctrl-C to stop");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[1].starts_with("valid-log  logger  running"),
            "{table}"
        );
        assert!(
            lines[1].contains("12,345") && lines[1].ends_with("1,000,000       3         1"),
            "{table}"
        );
        assert_eq!(lines[2], "Ctrl-C to stop");
    }

    #[test]
    fn problems_are_listed_below_the_table() {
        let mut stalled = instance("to-metrics", 0.0, 12);
        stalled.state = InstanceState::Stalled;
        stalled.problems = vec![Problem::TopicMissing {
            topic: "metrics".into(),
        }];
        let mut failed = instance("log", 1.0, 0);
        failed.last_error = Some("internal error: boom".into());
        let snapshot = Snapshot {
            app: "a".into(),
            streamlets: vec![stalled, failed],
            ..Snapshot::default()
        };
        let table = render_table(&snapshot, "");
        assert!(table.contains("to-metrics  logger  stalled"), "{table}");
        assert!(
            table.contains("! to-metrics: topic 'metrics' does not exist\n"),
            "{table}"
        );
        assert!(
            table.contains("  log: last failure: internal error: boom\n"),
            "{table}"
        );
    }

    #[test]
    fn details_are_listed_below_the_table() {
        let mut scorer = instance("scorer", 5.0, 0);
        scorer.details.insert("model".into(), "fraud@2".into());
        scorer.details.insert(
            "last rejected model".into(),
            "fraud@3: wrong input shape".into(),
        );
        let snapshot = Snapshot {
            app: "a".into(),
            streamlets: vec![scorer, instance("log", 1.0, 0)],
            ..Snapshot::default()
        };
        let table = render_table(&snapshot, "");
        assert!(
            table.contains("  scorer: last rejected model: fraud@3: wrong input shape\n  scorer: model: fraud@2\n"),
            "{table}"
        );
        assert!(!table.contains("log: model"), "{table}");
    }
}
