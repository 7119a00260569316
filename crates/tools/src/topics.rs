//! `topics`: every topic with its partitions, offsets and settings.

use std::fmt::Write as _;

use crate::context::Tools;
use crate::error::Result;

/// The topics as a table: name, partitions, records kept (end minus start, summed), the end
/// offsets, and the settings set on the topic.
///
/// # Errors
///
/// When the backplane cannot be read.
pub async fn topics(tools: &Tools) -> Result<String> {
    let listed = tools.store.topics().await?;
    let width = listed
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<width$}  {:>10}  {:>10}  {:<20}  settings",
        "topic", "partitions", "records", "end offsets"
    );
    for topic in &listed {
        let offsets = tools.store.offsets(&topic.name).await?;
        let kept: u64 = offsets.iter().map(|range| range.end - range.start).sum();
        let ends = offsets
            .iter()
            .map(|range| range.end.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let settings = topic
            .settings
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(
            table,
            "{:<width$}  {:>10}  {:>10}  {:<20}  {}",
            topic.name,
            topic.partitions,
            kept,
            ends,
            if settings.is_empty() { "-" } else { &settings }
        );
    }
    Ok(table)
}
