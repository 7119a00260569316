//! Query 5, hot items: per sliding window of 10 s starting every 5 s, the auctions with the
//! most bids, and how many bids that is (all of them when several tie), as in the reference.
//!
//! One [`WindowedAggregate`] over sliding windows: its accumulator counts bids per auction,
//! so each bid updates one 5 s slice and a window's pane merges its two slices and picks
//! the maximum when the watermark passes its end.

use std::collections::BTreeMap;

use runnel::prelude::*;
use runnel::window::{Aggregate, Pane, WindowSpec};

use super::{WATERMARKS, WINDOW_PERIOD, WINDOW_SIZE};
use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// One pane per window: the hot auctions (the key is always empty: one group).
pub const OUT: Outlet<Pane<String, HotItems>> = Outlet::new("out");
/// Sliding windows of 10 s every 5 s.
pub const WINDOWS: WindowSpec = WindowSpec::sliding(WINDOW_SIZE, WINDOW_PERIOD).checked();

/// The auctions with the most bids in a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct HotItems {
    /// Their ids, ascending.
    pub auctions: Vec<i64>,
    /// How many bids each had.
    pub bids: i64,
}

/// Counts bids per auction; the result is the auctions with the highest count.
#[derive(Debug, Clone, Copy, Default)]
pub struct HottestAuctions;

impl Aggregate for HottestAuctions {
    type Input = Bid;
    /// Bids per auction.
    type Accumulator = BTreeMap<i64, i64>;
    type Output = HotItems;

    fn create(&self) -> Self::Accumulator {
        BTreeMap::new()
    }

    fn add(&self, counts: &mut Self::Accumulator, bid: &Bid) {
        *counts.entry(bid.auction).or_insert(0) += 1;
    }

    fn merge(&self, counts: &mut Self::Accumulator, other: &Self::Accumulator) {
        for (auction, count) in other {
            *counts.entry(*auction).or_insert(0) += count;
        }
    }

    fn result(&self, counts: &Self::Accumulator) -> HotItems {
        let bids = counts.values().copied().max().unwrap_or(0);
        let auctions = counts
            .iter()
            .filter(|(_, count)| **count == bids)
            .map(|(auction, _)| *auction)
            .collect();
        HotItems { auctions, bids }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WINDOWS, HottestAuctions)
        .event_time(|bid| bid.date_time)
        .watermarks(WATERMARKS)
        .describe("nexmark q5: the auctions with the most bids per sliding window")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::queries::shuffled_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn each_window_names_the_auctions_with_the_most_bids() -> anyhow::Result<()> {
        // 8,000 events at 200 per second: 40 s of event time, 9 windows; in order, and
        // shuffled within groups of 160 events (up to 0.8 s out of order).
        for group in [1, 160] {
            check_against_batch(group).await?;
        }
        Ok(())
    }

    async fn check_against_batch(group: i64) -> anyhow::Result<()> {
        let streams = shuffled_streams(8_000, 200, group);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        let streamed: HashMap<i64, HotItems> = run
            .output(OUT)
            .into_iter()
            .map(|pane| (pane.window_start, pane.value))
            .collect();

        // The batch computation: every bid counts in the two windows that hold it.
        let mut counts: HashMap<i64, HashMap<i64, i64>> = HashMap::new();
        for bid in &streams.bids {
            let last_start = bid.date_time - bid.date_time.rem_euclid(5_000);
            for start in [last_start - 5_000, last_start] {
                *counts
                    .entry(start)
                    .or_default()
                    .entry(bid.auction)
                    .or_default() += 1;
            }
        }
        let mut expected = HashMap::new();
        for (start, per_auction) in counts {
            let most = *per_auction.values().max().unwrap();
            let mut auctions: Vec<i64> = per_auction
                .iter()
                .filter(|(_, count)| **count == most)
                .map(|(auction, _)| *auction)
                .collect();
            auctions.sort_unstable();
            expected.insert(
                start,
                HotItems {
                    auctions,
                    bids: most,
                },
            );
        }
        assert_eq!(expected.len(), 9);
        assert_eq!(streamed, expected);
        assert_eq!(run.output(OUT).len(), 9, "one pane per window");
        assert_eq!(run.metrics().late(), 0);
        Ok(())
    }
}
