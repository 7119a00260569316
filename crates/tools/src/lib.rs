//! Runnel's topic and offset tools: look at an app's data, feed it, and repair its consumer
//! groups, on the embedded log or on Kafka, from every app binary and the `runnel` command.
//!
//! | command | what it does |
//! |---|---|
//! | `topics` | every topic with partitions, records kept, end offsets and settings |
//! | `tail TOPIC` | records as JSON lines (decoded with the blueprint's schemas), from the start, an offset, a time or the last N, with `--follow` |
//! | `produce TOPIC` | JSON lines from standard input, encoded with the topic's schema (with `--envelope`: keys, headers, timestamps), or raw files |
//! | `dead-letters` | the dead-letter topic: reason, origin and the rejected record |
//! | `groups` | the app's consumer groups: committed offset, end and lag per partition |
//! | `reset-offsets GROUP` | move a group's offsets (earliest, latest, an offset, a time); a dry run unless `--execute` |
//!
//! On the embedded log the reading tools work while the app runs ([`LogInspector`]); the
//! writing ones (`produce`, `reset-offsets --execute`) open the log and so need the app
//! stopped. On Kafka, `reset-offsets` refuses a group that has members.
//!
//! ```
//! use runnel_tools::parse_time;
//! assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
//! ```
//!
//! Where to begin: [`ToolCommand`] for the command lines, [`run`] for what each does,
//! [`Store`] for the backplane access.
//!
//! [`LogInspector`]: runnel_embedded_log::LogInspector
#![deny(missing_docs)]

mod args;
mod context;
mod dead_letters;
mod error;
mod groups;
mod produce;
mod render;
mod schemas;
mod store;
mod tail;
mod time;
mod topics;

pub use args::{
    DeadLetterArgs, GroupsArgs, ProduceArgs, ResetArgs, SourceArgs, TailArgs, ToolCommand,
};
pub use context::{Tools, kept_schemas};
pub use dead_letters::dead_letters;
pub use error::{Result, ToolError};
pub use groups::{GroupPartition, groups, partitions, reset_offsets};
pub use produce::produce;
pub use schemas::{SCHEMA_HEADER, Schemas, avro_to_json};
pub use store::{EncodedWith, Store, TopicListing};
pub use tail::tail;
pub use time::parse_time;
pub use topics::topics;

use runnel_blueprint::descriptor::AppDescriptor;

fn read_descriptor(path: &std::path::Path) -> Result<AppDescriptor> {
    let text = std::fs::read_to_string(path).map_err(|source| ToolError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    AppDescriptor::from_json(&text).map_err(|error| {
        ToolError::Usage(format!(
            "{} is not an app descriptor: {error}",
            path.display()
        ))
    })
}

/// Runs `command` for the app called `app` (when the binary is one) whose streamlets
/// `descriptor` describes (to decode and encode records), printing to standard output.
///
/// # Errors
///
/// See [`ToolError`].
pub async fn run(
    command: &ToolCommand,
    app: Option<&str>,
    descriptor: Option<&AppDescriptor>,
) -> Result<()> {
    use std::io::Write as _;
    let source = command.source();
    let from_file = match (&source.descriptor, descriptor) {
        (Some(path), None) => Some(read_descriptor(path)?),
        _ => None,
    };
    let tools = Tools::open(source, app, descriptor.or(from_file.as_ref())).await?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let text = match command {
        ToolCommand::Topics(_) => topics(&tools).await?,
        ToolCommand::Tail(args) => {
            tail(&tools, args, &mut out).await?;
            return Ok(());
        }
        ToolCommand::DeadLetters(args) => {
            dead_letters(&tools, args, &mut out).await?;
            return Ok(());
        }
        ToolCommand::Produce(args) => {
            let written = produce(&tools, args, &mut std::io::stdin().lock()).await?;
            let mut text = format!(
                "{} records written to topic '{}'",
                written.len(),
                args.topic
            );
            if let (Some(first), Some(last)) = (written.first(), written.last()) {
                text.push_str(&format!(
                    " (first at {}/{}, last at {}/{})",
                    first.0, first.1, last.0, last.1
                ));
            }
            text + "\n"
        }
        ToolCommand::Groups(args) => groups(&tools, args).await?,
        ToolCommand::ResetOffsets(args) => reset_offsets(&tools, args).await?,
    };
    out.write_all(text.as_bytes())
        .map_err(|source| ToolError::Io {
            what: "writing the output".to_owned(),
            source,
        })
}
