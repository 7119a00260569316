//! The command lines of the tools, shared by every app binary and the `runnel` command.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// A topic or offset tool.
#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// List the topics with their partitions, offsets and settings.
    Topics(SourceArgs),
    /// Print a topic's records as JSON lines, decoded with the blueprint's schemas.
    Tail(TailArgs),
    /// Append records to a topic: JSON lines from standard input (encoded with the topic's
    /// schema), or raw files.
    Produce(ProduceArgs),
    /// Print the dead-letter topic: why each record was rejected, where it came from, and
    /// the record.
    DeadLetters(DeadLetterArgs),
    /// Show the app's consumer groups with committed offsets and lag per partition.
    Groups(GroupsArgs),
    /// Move a consumer group's committed offsets (while the app is stopped); shows what
    /// would change unless --execute is given.
    ResetOffsets(ResetArgs),
}

impl ToolCommand {
    /// Which app's topics the command works on, on which backplane.
    pub fn source(&self) -> &SourceArgs {
        match self {
            ToolCommand::Topics(source) => source,
            ToolCommand::Tail(args) => &args.source,
            ToolCommand::Produce(args) => &args.source,
            ToolCommand::DeadLetters(args) => &args.source,
            ToolCommand::Groups(args) => &args.source,
            ToolCommand::ResetOffsets(args) => &args.source,
        }
    }
}

/// Which app's topics, on which backplane.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// The blueprint: its topics, schemas and consumer groups.
    #[arg(long, default_value = "blueprint.toml")]
    pub blueprint: PathBuf,
    /// The embedded log's data directory; default: .runnel beside the blueprint.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Use the Kafka cluster with these bootstrap servers instead of the embedded log.
    #[arg(long, value_name = "BOOTSTRAP")]
    pub kafka: Option<String>,
    /// A Kafka client setting (repeatable); the `[kafka]` table of the config file applies too.
    #[arg(long = "kafka-setting", value_name = "KEY=VALUE")]
    pub kafka_settings: Vec<String>,
    /// The config file whose `[kafka]` table holds client settings; default: local.toml
    /// beside the blueprint, if present.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The app descriptor (what `APP describe` prints), to decode and encode records with
    /// the app's schemas; for the `runnel` command (an app binary knows its own).
    #[arg(long, value_name = "FILE")]
    pub descriptor: Option<PathBuf>,
}

/// `tail`.
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    /// The topic.
    pub topic: String,
    /// Which app's topics, on which backplane.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Only this partition.
    #[arg(long, short)]
    pub partition: Option<u32>,
    /// Start at this offset (in each partition read).
    #[arg(long, conflicts_with_all = ["last", "since"])]
    pub offset: Option<u64>,
    /// Start this many records before the end of each partition.
    #[arg(long, conflicts_with_all = ["offset", "since"])]
    pub last: Option<u64>,
    /// Start at the first record with this timestamp or later: RFC 3339
    /// (2026-12-01T10:00:00Z) or milliseconds since the Unix epoch.
    #[arg(long, value_name = "TIME", value_parser = crate::time::parse_time)]
    pub since: Option<i64>,
    /// Stop after this many records.
    #[arg(long, short = 'n')]
    pub count: Option<usize>,
    /// Keep waiting for new records.
    #[arg(long, short)]
    pub follow: bool,
    /// Print each value alone (decoded), one per line, instead of the record with its key,
    /// headers and position.
    #[arg(long, conflicts_with = "raw")]
    pub values: bool,
    /// Write each value's bytes as they are, followed by a newline (a null value, a
    /// tombstone, writes nothing but the newline unless -Z is given).
    #[arg(long)]
    pub raw: bool,
    /// With --raw, print a null value (a tombstone) as `NULL`, so it differs from an empty
    /// one (kcat's -Z).
    #[arg(short = 'Z', long, requires = "raw")]
    pub print_null: bool,
}

/// `produce`.
#[derive(Debug, Clone, Args)]
pub struct ProduceArgs {
    /// The topic.
    pub topic: String,
    /// Which app's topics, on which backplane.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Write every record to this partition (default: by key, else round robin).
    #[arg(long, short)]
    pub partition: Option<u32>,
    /// The key of every record (a JSON envelope's own key wins).
    #[arg(long, short)]
    pub key: Option<String>,
    /// Read JSON envelopes, `{"key": .., "value": .., "headers": {..}, "timestamp": ..}`,
    /// instead of bare values; `"value": null` writes a null value (a tombstone).
    #[arg(long)]
    pub envelope: bool,
    /// Append each file's bytes as one record, unchanged, instead of reading standard input.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub raw: Vec<PathBuf>,
    /// With --raw, write an empty file as a null value (a tombstone) instead of an empty
    /// one (kcat's -Z).
    #[arg(short = 'Z', long, requires = "raw")]
    pub empty_as_null: bool,
}

/// `dead-letters`.
#[derive(Debug, Clone, Args)]
pub struct DeadLetterArgs {
    /// Which app's topics, on which backplane.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Stop after this many dead letters.
    #[arg(long, short = 'n')]
    pub count: Option<usize>,
    /// Keep waiting for new ones.
    #[arg(long, short)]
    pub follow: bool,
}

/// `groups`.
#[derive(Debug, Clone, Args)]
pub struct GroupsArgs {
    /// Only this group.
    pub group: Option<String>,
    /// Which app's topics, on which backplane.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `reset-offsets`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true)))]
pub struct ResetArgs {
    /// The consumer group, `<app>.<instance>.<inlet>`.
    pub group: String,
    /// Which app's topics, on which backplane.
    #[command(flatten)]
    pub source: SourceArgs,
    /// To each partition's first kept offset.
    #[arg(long, group = "target")]
    pub to_earliest: bool,
    /// To each partition's end: skip everything not yet read.
    #[arg(long, group = "target")]
    pub to_latest: bool,
    /// To this offset (clamped to what each partition keeps).
    #[arg(long, group = "target", value_name = "OFFSET")]
    pub to_offset: Option<u64>,
    /// To the first record at this time or later: RFC 3339 or milliseconds since the epoch.
    #[arg(long, group = "target", value_name = "TIME", value_parser = crate::time::parse_time)]
    pub to_time: Option<i64>,
    /// Only this partition.
    #[arg(long, short)]
    pub partition: Option<u32>,
    /// Apply the change; without it, only show it.
    #[arg(long)]
    pub execute: bool,
}
