//! `groups` and `reset-offsets`: the app's consumer groups, their committed offsets and lag
//! per partition, and moving them (while the app is stopped).

use std::fmt::Write as _;

use serde_json::json;

use crate::args::{GroupsArgs, ResetArgs};
use crate::context::Tools;
use crate::error::{Result, ToolError};
use crate::tail::first_at;

/// One partition of one group's topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPartition {
    /// The consumer group.
    pub group: String,
    /// The topic it reads.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The next offset the group reads, if it committed one.
    pub committed: Option<u64>,
    /// The partition's first kept offset.
    pub start: u64,
    /// The partition's end.
    pub end: u64,
}

impl GroupPartition {
    /// Records not yet read by the group.
    pub fn lag(&self) -> u64 {
        self.end
            .saturating_sub(self.committed.unwrap_or(self.start).max(self.start))
    }
}

/// Every partition of the app's groups (or of `only`), as found now.
///
/// # Errors
///
/// When the backplane cannot be read, or `only` is not one of the app's groups.
pub async fn partitions(tools: &Tools, only: Option<&str>) -> Result<Vec<GroupPartition>> {
    let groups = tools.groups();
    if let Some(only) = only
        && !groups.iter().any(|(group, _)| group == only)
    {
        let known: Vec<&str> = groups.iter().map(|(group, _)| group.as_str()).collect();
        return Err(ToolError::Usage(format!(
            "'{only}' is not a consumer group of the app; its groups are: {}",
            known.join(", ")
        )));
    }
    let mut found = Vec::new();
    for (group, topic) in groups.iter().filter(|(g, _)| only.is_none_or(|o| o == g)) {
        let offsets = tools.store.offsets(topic).await?;
        let committed = tools.store.committed(group, topic).await?;
        for (partition, range) in offsets.iter().enumerate() {
            found.push(GroupPartition {
                group: group.clone(),
                topic: topic.clone(),
                partition: partition as u32,
                committed: committed.get(partition).copied().flatten(),
                start: range.start,
                end: range.end,
            });
        }
    }
    Ok(found)
}

/// The groups as a table (or JSON lines), a row per partition.
///
/// # Errors
///
/// As [`partitions`].
pub async fn groups(tools: &Tools, args: &GroupsArgs) -> Result<String> {
    let found = partitions(tools, args.group.as_deref()).await?;
    if args.json {
        return Ok(found
            .iter()
            .map(|p| {
                json!({"group": p.group, "topic": p.topic, "partition": p.partition,
                    "committed": p.committed, "start": p.start, "end": p.end, "lag": p.lag()})
                .to_string()
                    + "\n"
            })
            .collect());
    }
    let width = found
        .iter()
        .map(|p| p.group.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let topic_width = found
        .iter()
        .map(|p| p.topic.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<width$}  {:<topic_width$}  {:>9}  {:>10}  {:>10}  {:>10}",
        "group", "topic", "partition", "committed", "end", "lag"
    );
    for p in &found {
        let committed = p
            .committed
            .map_or_else(|| "-".to_owned(), |c| c.to_string());
        let _ = writeln!(
            table,
            "{:<width$}  {:<topic_width$}  {:>9}  {:>10}  {:>10}  {:>10}",
            p.group,
            p.topic,
            p.partition,
            committed,
            p.end,
            p.lag()
        );
    }
    Ok(table)
}

/// Works out the new offsets `args` asks for and, with `--execute`, commits them; returns
/// the report of what changes (or changed).
///
/// # Errors
///
/// When the group is not the app's, the backplane cannot be read, or (with `--execute`)
/// the app still runs or the offsets are refused.
pub async fn reset_offsets(tools: &Tools, args: &ResetArgs) -> Result<String> {
    let found = partitions(tools, Some(&args.group)).await?;
    let mut changes = Vec::new();
    for p in found
        .iter()
        .filter(|p| args.partition.is_none_or(|only| only == p.partition))
    {
        let target = if args.to_earliest {
            p.start
        } else if args.to_latest {
            p.end
        } else if let Some(offset) = args.to_offset {
            offset.clamp(p.start, p.end)
        } else if let Some(time) = args.to_time {
            first_at(tools, &p.topic, p.partition, p.start, time).await?
        } else {
            return Err(ToolError::Usage(
                "say where to: --to-earliest, --to-latest, --to-offset or --to-time".to_owned(),
            ));
        };
        changes.push((p.clone(), target));
    }
    if changes.is_empty() {
        return Err(ToolError::Usage(format!(
            "group '{}' has no partition {}",
            args.group,
            args.partition.unwrap_or_default()
        )));
    }
    let mut report = String::new();
    let _ = writeln!(
        report,
        "{:<10}  {:>9}  {:>10}  {:>10}  {:>10}",
        "topic", "partition", "committed", "new", "lag after"
    );
    for (p, target) in &changes {
        let committed = p
            .committed
            .map_or_else(|| "-".to_owned(), |c| c.to_string());
        let _ = writeln!(
            report,
            "{:<10}  {:>9}  {:>10}  {:>10}  {:>10}",
            p.topic,
            p.partition,
            committed,
            target,
            p.end - target
        );
    }
    if !args.execute {
        let _ = writeln!(
            report,
            "dry run: nothing changed; add --execute to commit these offsets for group '{}'",
            args.group
        );
        return Ok(report);
    }
    let offsets: Vec<(String, u32, u64)> = changes
        .iter()
        .map(|(p, target)| (p.topic.clone(), p.partition, *target))
        .collect();
    tools.store.set_committed(&args.group, &offsets).await?;
    let _ = writeln!(report, "committed for group '{}'", args.group);
    Ok(report)
}
