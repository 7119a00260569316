//! Query 12, processing-time windows: how many bids each bidder placed per 10 s of
//! processing time (Flink's `TUMBLE(PROCTIME(), 10 s)`): one global window per bidder whose
//! trigger fires at every multiple of 10 s of the wall clock with the bids that arrived
//! since, discarding them once emitted.

use std::time::Duration;

use runnel::prelude::*;
use runnel::window::{Accumulation, Count, Pane, Trigger, WindowSpec};

use super::WINDOW_SIZE;
use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// One pane per bidder and 10 s of processing time with bids: the number of bids.
pub const OUT: Outlet<Pane<i64, i64>> = Outlet::new("out").keyed_by(|pane| pane.key.to_string());
/// A global window per bidder firing at each multiple of 10 s of processing time.
pub const WINDOWS: WindowSpec = WindowSpec::global()
    .trigger(Trigger::repeatedly(
        Trigger::after_processing_time(Duration::ZERO).aligned_to(WINDOW_SIZE),
    ))
    .accumulation(Accumulation::Discarding)
    .checked();

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WINDOWS, Count::new())
        .key_by(|bid: &Bid| bid.bidder)
        .event_time(|bid| bid.date_time)
        .describe("nexmark q12: bids per bidder per 10 s of processing time")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn bids_are_counted_per_ten_seconds_of_arrival() -> anyhow::Result<()> {
        let streams = test_streams(5_000, 10_000);
        // Bids arrive in batches of 100, 1.3 s of processing time apart, from 0.7 s.
        let arrivals: Vec<(i64, &[Bid])> = streams
            .bids
            .chunks(100)
            .enumerate()
            .map(|(batch, bids)| (700 + batch as i64 * 1_300, bids))
            .collect();
        let mut run = TestRun::new(streamlet());
        for (at, bids) in &arrivals {
            run = run.at(*at).input(IN, bids.to_vec());
        }
        let end = arrivals.last().unwrap().0 + 20_000;
        let run = run.at(end).run().await?;
        let mut streamed: Vec<(i64, i64, i64)> = run
            .timed_output(OUT)?
            .into_iter()
            .map(|(at, pane)| (at, pane.key, pane.value))
            .collect();
        streamed.sort_unstable();

        // The batch computation: a bid arriving at t counts in the pane fired at the next
        // multiple of 10 s.
        let mut counts: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for (at, bids) in &arrivals {
            let fired = (at / 10_000 + 1) * 10_000;
            for bid in *bids {
                *counts.entry((fired, bid.bidder)).or_default() += 1;
            }
        }
        let expected: Vec<(i64, i64, i64)> = counts
            .into_iter()
            .map(|((fired, bidder), count)| (fired, bidder, count))
            .collect();
        assert!(expected.iter().map(|(fired, ..)| fired).max() > Some(&40_000));
        assert_eq!(streamed, expected);
        Ok(())
    }
}
