//! Query 4, average price per category: the average winning price of the auctions of each
//! category that closed in each sliding window of 10 s every 5 s (the reference's q4:
//! winning bids as in [`q9`](super::q9), then a sliding mean per category, rounded to the
//! nearest cent).
//!
//! In the app the winning bids come from a `q9` instance through a topic
//! (`blueprints/q4.toml`); this streamlet is the windowed average over them, keyed by
//! category, each winning bid at its auction's closing time.

use runnel::prelude::*;
use runnel::window::{Aggregate, Pane, WindowSpec};

use super::q9::WinningBid;
use super::{WATERMARKS, WINDOW_PERIOD, WINDOW_SIZE};

/// Winning bids.
pub const IN: Inlet<WinningBid> = Inlet::new("in");
/// One pane per category and window: the average winning price, in cents.
pub const OUT: Outlet<Pane<i64, i64>> = Outlet::new("out").keyed_by(|pane| pane.key.to_string());
/// Sliding windows of 10 s every 5 s.
pub const WINDOWS: WindowSpec = WindowSpec::sliding(WINDOW_SIZE, WINDOW_PERIOD).checked();

/// The mean of winning prices, kept as an exact integer sum and count and rounded half up
/// when a pane fires (Java's `Math.round` of the mean, as the reference).
#[derive(Debug, Clone, Copy, Default)]
pub struct AveragePrice;

impl Aggregate for AveragePrice {
    type Input = WinningBid;
    /// Sum of prices and number of auctions.
    type Accumulator = (i64, i64);
    type Output = i64;

    fn create(&self) -> (i64, i64) {
        (0, 0)
    }

    fn add(&self, (sum, count): &mut (i64, i64), winner: &WinningBid) {
        *sum += winner.bid.price;
        *count += 1;
    }

    fn merge(&self, (sum, count): &mut (i64, i64), other: &(i64, i64)) {
        *sum += other.0;
        *count += other.1;
    }

    fn subtract(&self, (sum, count): &mut (i64, i64), other: &(i64, i64)) -> bool {
        *sum -= other.0;
        *count -= other.1;
        true
    }

    fn result(&self, &(sum, count): &(i64, i64)) -> i64 {
        rounded_mean(sum, count)
    }
}

/// `sum / count` rounded half up.
pub fn rounded_mean(sum: i64, count: i64) -> i64 {
    (2 * sum + count).div_euclid(2 * count.max(1))
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WINDOWS, AveragePrice)
        .key_by(|winner: &WinningBid| winner.auction.category)
        .event_time(|winner| winner.auction.expires)
        .watermarks(WATERMARKS)
        .describe("nexmark q4: average winning price per category per sliding window")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queries::q9::{self, batch_winners};
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn each_category_and_window_averages_its_winning_prices() -> anyhow::Result<()> {
        let streams = test_streams(20_000, 500);
        // The app's two stages: winning bids, then the average over them.
        let winners = TestRun::new(q9::streamlet())
            .input(q9::AUCTIONS, streams.auctions.clone())
            .input(q9::BIDS, streams.bids.clone())
            .run()
            .await?
            .output(q9::OUT);
        let run = TestRun::new(streamlet()).input(IN, winners).run().await?;
        let streamed: BTreeMap<(i64, i64), i64> = run
            .output(OUT)
            .into_iter()
            .map(|pane| ((pane.key, pane.window_start), pane.value))
            .collect();

        // The batch computation: the winners, each in the two windows holding its closing
        // time, averaged per category and window.
        let mut prices: BTreeMap<(i64, i64), Vec<i64>> = BTreeMap::new();
        for winner in batch_winners(&streams.auctions, &streams.bids) {
            let closed = winner.auction.expires;
            let last_start = closed - closed.rem_euclid(5_000);
            for start in [last_start - 5_000, last_start] {
                prices
                    .entry((winner.auction.category, start))
                    .or_default()
                    .push(winner.bid.price);
            }
        }
        let expected: BTreeMap<(i64, i64), i64> = prices
            .into_iter()
            .map(|(key, prices)| {
                let mean = prices.iter().sum::<i64>() as f64 / prices.len() as f64;
                (key, (mean + 0.5).floor() as i64)
            })
            .collect();
        assert!(expected.len() > 20, "{} category windows", expected.len());
        assert_eq!(streamed, expected);
        assert_eq!(rounded_mean(5, 2), 3);
        assert_eq!(rounded_mean(4, 3), 1);
        Ok(())
    }
}
