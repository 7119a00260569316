//! Query 7, highest bid: per tumbling window of 10 s, the bids with the highest price (all
//! of them when several tie), as in the reference.

use runnel::prelude::*;
use runnel::window::{Aggregate, Pane, WindowSpec};

use super::{WATERMARKS, WINDOW_SIZE};
use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// One pane per window with its highest bids (the key is always empty: one group).
pub const OUT: Outlet<Pane<String, HighestBids>> = Outlet::new("out");
/// Tumbling windows of 10 s.
pub const WINDOWS: WindowSpec = WindowSpec::tumbling(WINDOW_SIZE).checked();

/// The highest bids of a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct HighestBids {
    /// The highest price.
    pub price: i64,
    /// Every bid at that price, by time, then auction, then bidder.
    pub bids: Vec<Bid>,
}

/// Keeps the bids at the highest price seen.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaximumPrice;

impl Aggregate for MaximumPrice {
    type Input = Bid;
    /// The bids at the highest price so far.
    type Accumulator = Vec<Bid>;
    type Output = HighestBids;

    fn create(&self) -> Self::Accumulator {
        Vec::new()
    }

    fn add(&self, highest: &mut Self::Accumulator, bid: &Bid) {
        match highest.first().map(|top| top.price) {
            Some(price) if price > bid.price => {}
            Some(price) if price == bid.price => highest.push(bid.clone()),
            _ => *highest = vec![bid.clone()],
        }
    }

    fn merge(&self, highest: &mut Self::Accumulator, other: &Self::Accumulator) {
        for bid in other {
            self.add(highest, bid);
        }
    }

    fn result(&self, highest: &Self::Accumulator) -> HighestBids {
        let mut bids = highest.clone();
        bids.sort_by_key(|bid| (bid.date_time, bid.auction, bid.bidder));
        HighestBids {
            price: bids.first().map_or(0, |bid| bid.price),
            bids,
        }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WINDOWS, MaximumPrice)
        .event_time(|bid| bid.date_time)
        .watermarks(WATERMARKS)
        .describe("nexmark q7: the highest bids per 10 s window")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn each_window_holds_its_highest_bids() -> anyhow::Result<()> {
        // 10,000 events at 200 per second: 50 s of event time, 5 windows.
        let streams = test_streams(10_000, 200);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        let streamed: BTreeMap<i64, HighestBids> = run
            .output(OUT)
            .into_iter()
            .map(|pane| (pane.window_start, pane.value))
            .collect();

        // The batch computation: group by window, take the maximum, keep the bids at it.
        let mut windows: BTreeMap<i64, Vec<Bid>> = BTreeMap::new();
        for bid in &streams.bids {
            let start = bid.date_time - bid.date_time.rem_euclid(10_000);
            windows.entry(start).or_default().push(bid.clone());
        }
        let mut expected = BTreeMap::new();
        for (start, bids) in windows {
            let price = bids.iter().map(|bid| bid.price).max().unwrap();
            let mut top: Vec<Bid> = bids.into_iter().filter(|bid| bid.price == price).collect();
            top.sort_by_key(|bid| (bid.date_time, bid.auction, bid.bidder));
            expected.insert(start, HighestBids { price, bids: top });
        }
        assert_eq!(expected.len(), 5);
        assert_eq!(streamed, expected);
        Ok(())
    }
}
