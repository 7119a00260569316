//! `generator`: the Nexmark [`Generator`] as a source streamlet. Persons, auctions and bids
//! go to their own outlets, each record stamped with its event time.
//!
//! The number of the next event is checkpointed every second and when the source stops;
//! a checkpoint is written only once every event sent before it is acknowledged by the
//! log. A restarted source (even after `kill -9`) continues from the last checkpoint, so it
//! sends again at most the events of the last second before the crash, identical (events
//! are a function of their number): at-least-once, never a gap.

use std::time::{Duration, Instant};

use runnel::OutletSender;
use runnel::prelude::*;

use crate::generator::{Generator, GeneratorConfig};
use crate::model::{Auction, Bid, Event, Person};

/// New persons.
pub const PERSONS: Outlet<Person> = Outlet::new("persons");
/// New auctions.
pub const AUCTIONS: Outlet<Auction> = Outlet::new("auctions");
/// Bids.
pub const BIDS: Outlet<Bid> = Outlet::new("bids");

/// The outlets events go to, one per type; the sources share them.
pub(crate) struct EventOutlets {
    persons: OutletSender<Person>,
    auctions: OutletSender<Auction>,
    bids: OutletSender<Bid>,
}

impl EventOutlets {
    /// The [`PERSONS`], [`AUCTIONS`] and [`BIDS`] outlets of `ctx`.
    pub(crate) fn of(ctx: &Context) -> Self {
        EventOutlets {
            persons: ctx.outlet(PERSONS),
            auctions: ctx.outlet(AUCTIONS),
            bids: ctx.outlet(BIDS),
        }
    }

    /// Sends `event` to its type's outlet, stamped with its event time.
    pub(crate) async fn send(&self, event: Event) -> Result<()> {
        match event {
            Event::Person(person) => {
                self.persons
                    .send_record(Outgoing::new(&person).timestamp(person.date_time))
                    .await
            }
            Event::Auction(auction) => {
                self.auctions
                    .send_record(Outgoing::new(&auction).timestamp(auction.date_time))
                    .await
            }
            Event::Bid(bid) => {
                self.bids
                    .send_record(Outgoing::new(&bid).timestamp(bid.date_time))
                    .await
            }
        }
    }
}

/// How many events to generate before finishing; negative means endless.
pub const COUNT: Parameter<i64> = Parameter::int("count")
    .describe("events to generate before finishing (the input then ends); negative means endless")
    .default("-1");
/// Events sent per second of wall-clock time; 0 sends as fast as the log takes them.
pub const RECORDS_PER_SECOND: Parameter<i64> = Parameter::int("records-per-second")
    .describe("events sent per second of wall-clock time; 0 means as fast as possible")
    .default("0");
/// Events per second of event time.
pub const EVENTS_PER_SECOND: Parameter<i64> = Parameter::int("events-per-second")
    .describe("events per second of event time: how far apart their timestamps are")
    .default("10000");
/// Out-of-orderness: events are shuffled within groups of this many.
pub const OUT_OF_ORDER_GROUP_SIZE: Parameter<i64> = Parameter::int("out-of-order-group-size")
    .describe("events are shuffled within consecutive groups of this many; 1 means in order")
    .default("1");
/// Event time of the first event.
pub const BASE_TIME: Parameter<i64> = Parameter::int("base-time")
    .describe("event time of event 0, milliseconds since the Unix epoch")
    .default("1704067200000");
/// Added to event numbers to make ids.
pub const FIRST_EVENT_ID: Parameter<i64> = Parameter::int("first-event-id")
    .describe("added to every event number to make its id")
    .default("0");

/// Events generated between checks of the clock and of a stop request when unthrottled.
const BATCH: u64 = 1_024;
/// How often the next event number is checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The generator as a streamlet.
#[derive(Debug, Default)]
pub struct Source;

impl Streamlet for Source {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("generates the Nexmark persons, auctions and bids of the reference generator")
            .outlet(PERSONS)
            .outlet(AUCTIONS)
            .outlet(BIDS)
            .parameter(COUNT)
            .parameter(RECORDS_PER_SECOND)
            .parameter(EVENTS_PER_SECOND)
            .parameter(OUT_OF_ORDER_GROUP_SIZE)
            .parameter(BASE_TIME)
            .parameter(FIRST_EVENT_ID)
            .checkpointed()
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let config = GeneratorConfig {
            base_time: ctx.parameter(BASE_TIME),
            first_event_id: ctx.parameter(FIRST_EVENT_ID),
            events_per_second: ctx.parameter(EVENTS_PER_SECOND),
            out_of_order_group_size: ctx.parameter(OUT_OF_ORDER_GROUP_SIZE),
            ..GeneratorConfig::default()
        };
        let generator = Generator::new(config).map_err(|error| Error::msg(error.to_string()))?;
        let count = u64::try_from(ctx.parameter(COUNT)).ok();
        let rate = ctx.parameter(RECORDS_PER_SECOND);
        let outlets = EventOutlets::of(&ctx);
        let checkpoints = ctx.checkpoints();
        let mut number: u64 = match checkpoints.as_ref().and_then(|c| c.restored()) {
            Some(saved) => serde_json::from_slice(saved).map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of generator '{}' does not decode: {error}",
                    ctx.instance()
                ))
            })?,
            None => 0,
        };
        let resumed_at = number;
        let started = Instant::now();
        let mut next_checkpoint = started + CHECKPOINT_EVERY;
        let not_done = |number: u64| count.is_none_or(|count| number < count);
        while !ctx.is_stopping() && not_done(number) {
            let due = if rate > 0 {
                resumed_at + (started.elapsed().as_secs_f64() * rate as f64) as u64 + 1
            } else {
                number + BATCH
            };
            while number < due && not_done(number) {
                outlets.send(generator.event(number)).await?;
                number += 1;
            }
            if let Some(checkpoints) = &checkpoints
                && Instant::now() >= next_checkpoint
            {
                checkpoints.save(serde_json::to_vec(&number)?);
                next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
            }
            if rate > 0 {
                tokio::select! {
                    () = ctx.stopped() => break,
                    () = tokio::time::sleep(Duration::from_millis(5)) => {}
                }
            }
        }
        if let Some(checkpoints) = &checkpoints {
            checkpoints.save(serde_json::to_vec(&number)?);
        }
        tracing::info!(events = number, resumed_at, "nexmark generator finished");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn the_source_sends_the_generators_events_to_their_outlets() -> anyhow::Result<()> {
        let run = TestRun::new(Source)
            .parameter("count", "500")
            .parameter("out-of-order-group-size", "10")
            .run()
            .await?;
        let generator = Generator::new(GeneratorConfig {
            out_of_order_group_size: 10,
            ..GeneratorConfig::default()
        })?;
        let streams = generator.streams(500);
        assert_eq!(streams.bids.len(), 460);
        assert_eq!(run.output(PERSONS), streams.persons);
        assert_eq!(run.output(AUCTIONS), streams.auctions);
        assert_eq!(run.output(BIDS), streams.bids);
        let stamped = run.records(BIDS);
        assert!(stamped.iter().all(|r| r.timestamp == r.value.date_time));
        Ok(())
    }
}
