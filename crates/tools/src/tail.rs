//! `tail`: a topic's records as JSON lines, from an offset, a time or the end, optionally
//! following new ones.

use std::io::Write;
use std::time::Duration;

use runnel_backend::ConsumedRecord;

use crate::args::TailArgs;
use crate::context::Tools;
use crate::error::{Result, ToolError};
use crate::render;

/// Records read per request.
const BATCH: usize = 1000;
/// How long `--follow` waits between looks for new records.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Writes the records `args` asks for to `out`, partition by partition (round robin when
/// following); returns how many.
///
/// # Errors
///
/// When the topic does not exist, the backplane cannot be read, or `out` cannot be written.
pub async fn tail(tools: &Tools, args: &TailArgs, out: &mut dyn Write) -> Result<usize> {
    let topic = tools.store.topic(&args.topic).await?;
    let partitions: Vec<u32> = match args.partition {
        Some(partition) if partition >= topic.partitions => {
            return Err(ToolError::Usage(format!(
                "topic '{}' has {} partitions; there is no partition {partition}",
                topic.name, topic.partitions
            )));
        }
        Some(partition) => vec![partition],
        None => (0..topic.partitions).collect(),
    };
    let offsets = tools.store.offsets(&topic.name).await?;
    let mut positions = Vec::with_capacity(partitions.len());
    for partition in &partitions {
        let range = offsets[*partition as usize];
        let start = match (args.offset, args.last, args.since) {
            (Some(offset), ..) => offset.max(range.start),
            (_, Some(last), _) => range.end.saturating_sub(last).max(range.start),
            (.., Some(since)) => {
                first_at(tools, &topic.name, *partition, range.start, since).await?
            }
            _ => range.start,
        };
        positions.push((*partition, start));
    }
    let limit = args.count.unwrap_or(usize::MAX);
    let mut written = 0;
    loop {
        let mut progressed = false;
        for (partition, position) in &mut positions {
            while written < limit {
                let wanted = BATCH.min(limit - written);
                let records = tools
                    .store
                    .read(
                        &topic.name,
                        *partition,
                        *position,
                        wanted,
                        Duration::from_millis(200),
                    )
                    .await?;
                let Some(last) = records.last() else { break };
                *position = last.offset + 1;
                progressed = true;
                if !args.raw {
                    tools
                        .learn_schemas(records.iter().map(|consumed| &consumed.record))
                        .await?;
                }
                for record in &records {
                    write_record(tools, args, record, out)?;
                }
                written += records.len();
            }
        }
        out.flush().map_err(output_error)?;
        if written >= limit || (!args.follow && !progressed) {
            return Ok(written);
        }
        if !progressed {
            tokio::time::sleep(FOLLOW_INTERVAL).await;
        }
    }
}

/// The first offset of a partition whose record is at `since` or later (the end if none
/// is), scanning from `start`.
pub(crate) async fn first_at(
    tools: &Tools,
    topic: &str,
    partition: u32,
    start: u64,
    since: i64,
) -> Result<u64> {
    let mut position = start;
    loop {
        let records = tools
            .store
            .read(
                topic,
                partition,
                position,
                BATCH,
                Duration::from_millis(200),
            )
            .await?;
        let Some(last) = records.last() else {
            return Ok(position);
        };
        if let Some(found) = records.iter().find(|r| r.record.timestamp >= since) {
            return Ok(found.offset);
        }
        position = last.offset + 1;
    }
}

fn write_record(
    tools: &Tools,
    args: &TailArgs,
    record: &ConsumedRecord,
    out: &mut dyn Write,
) -> Result<()> {
    let written = if args.raw {
        // As kcat: a null value prints as nothing, or as `NULL` with -Z.
        let value = match &record.record.value {
            Some(value) => &value[..],
            None if args.print_null => b"NULL",
            None => b"",
        };
        out.write_all(value).and_then(|()| out.write_all(b"\n"))
    } else if args.values {
        let (value, _) = render::value(&tools.schemas, &record.topic, &record.record);
        writeln!(out, "{value}")
    } else {
        writeln!(out, "{}", render::record(&tools.schemas, record))
    };
    written.map_err(output_error)
}

fn output_error(source: std::io::Error) -> ToolError {
    ToolError::Io {
        what: "writing the records".to_owned(),
        source,
    }
}
