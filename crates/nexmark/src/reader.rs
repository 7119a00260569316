//! `reader`: Nexmark events from a JSON-lines file (see [`events_file`](crate::events_file))
//! as a source streamlet with the generator's outlets, so Runnel can read exactly the file
//! other engines read in a side-by-side run.
//!
//! The byte offset of the next line is checkpointed every second and at the end, once
//! every event before it is acknowledged by the log; a restarted reader continues there
//! (at-least-once: it may send the events of the last second again, never skip one).

use std::time::{Duration, Instant};

use runnel::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncSeekExt, BufReader};

use crate::events_file::EventLine;
use crate::model::Event;
use crate::source::{AUCTIONS, BIDS, PERSONS};

/// The events file.
pub const INPUT: Parameter<String> = Parameter::string("input")
    .describe("the JSON-lines events file to read (as nexmark-events writes it)");

/// How often the position in the file is checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Where the reader is in its file.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Position {
    /// The byte offset of the next line.
    offset: u64,
    /// The number of the next line, from 1.
    line: u64,
}

/// The events-file reader as a streamlet.
#[derive(Debug, Default)]
pub struct Reader;

impl Streamlet for Reader {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("reads Nexmark persons, auctions and bids from a JSON-lines events file")
            .outlet(PERSONS)
            .outlet(AUCTIONS)
            .outlet(BIDS)
            .parameter(INPUT)
            .checkpointed()
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let path = ctx.parameter(INPUT);
        let (persons, auctions, bids) =
            (ctx.outlet(PERSONS), ctx.outlet(AUCTIONS), ctx.outlet(BIDS));
        let checkpoints = ctx.checkpoints();
        let mut position: Position = match checkpoints.as_ref().and_then(|c| c.restored()) {
            Some(saved) => serde_json::from_slice(saved).map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of reader '{}' does not decode: {error}",
                    ctx.instance()
                ))
            })?,
            None => Position { offset: 0, line: 1 },
        };
        let unreadable = |error: std::io::Error| {
            Error::external(std::io::Error::new(
                error.kind(),
                format!("cannot read the events file {path}: {error}"),
            ))
        };
        let mut file = tokio::fs::File::open(&path).await.map_err(unreadable)?;
        file.seek(std::io::SeekFrom::Start(position.offset))
            .await
            .map_err(unreadable)?;
        let mut lines = BufReader::with_capacity(1 << 20, file);
        let mut text = String::new();
        let mut next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
        while !ctx.is_stopping() {
            text.clear();
            let read = lines.read_line(&mut text).await.map_err(unreadable)?;
            if read == 0 {
                break;
            }
            let event = EventLine::parse(text.trim_end(), position.line)
                .map_err(|error| Error::bad_data(format!("{path}: {error}")))?;
            match event {
                Event::Person(person) => {
                    persons
                        .send_record(Outgoing::new(&person).timestamp(person.date_time))
                        .await?
                }
                Event::Auction(auction) => {
                    auctions
                        .send_record(Outgoing::new(&auction).timestamp(auction.date_time))
                        .await?
                }
                Event::Bid(bid) => {
                    bids.send_record(Outgoing::new(&bid).timestamp(bid.date_time))
                        .await?
                }
            }
            position.offset += read as u64;
            position.line += 1;
            if let Some(checkpoints) = &checkpoints
                && position.line.is_multiple_of(1024)
                && Instant::now() >= next_checkpoint
            {
                checkpoints.save(serde_json::to_vec(&position)?);
                next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
            }
        }
        if let Some(checkpoints) = &checkpoints {
            checkpoints.save(serde_json::to_vec(&position)?);
        }
        tracing::info!(lines = position.line - 1, "nexmark reader finished {path}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events_file::write_events;
    use crate::generator::{Generator, GeneratorConfig};
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn the_reader_sends_the_files_events_to_their_outlets() -> anyhow::Result<()> {
        let generator = Generator::new(GeneratorConfig {
            out_of_order_group_size: 10,
            ..GeneratorConfig::default()
        })?;
        let file = tempfile::NamedTempFile::new()?;
        write_events(&generator, 500, &mut std::fs::File::create(file.path())?)?;
        let run = TestRun::new(Reader)
            .parameter("input", &file.path().display().to_string())
            .run()
            .await?;
        let streams = generator.streams(500);
        assert_eq!(run.output(PERSONS), streams.persons);
        assert_eq!(run.output(AUCTIONS), streams.auctions);
        assert_eq!(run.output(BIDS), streams.bids);
        let stamped = run.records(BIDS);
        assert!(stamped.iter().all(|r| r.timestamp == r.value.date_time));
        Ok(())
    }

    #[tokio::test]
    async fn a_line_that_is_not_an_event_fails_the_reader_naming_file_and_line()
    -> anyhow::Result<()> {
        let file = tempfile::NamedTempFile::new()?;
        std::fs::write(file.path(), "{\"event_type\":2,\"bid\":null}\n")?;
        let error = TestRun::new(Reader)
            .parameter("input", &file.path().display().to_string())
            .run()
            .await
            .expect_err("the line is not an event")
            .to_string();
        assert!(
            error.contains("line 1 of the events file has event_type 2 without the event it names"),
            "{error}"
        );
        assert!(
            error.contains(&file.path().display().to_string()),
            "{error}"
        );
        Ok(())
    }
}
