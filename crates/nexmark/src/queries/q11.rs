//! Query 11, user sessions: how many bids each bidder placed per session, a session ending
//! after 10 s without a bid (session windows, as in the reference).

use runnel::prelude::*;
use runnel::window::{Count, Pane, WindowSpec};

use super::{WATERMARKS, WINDOW_SIZE};
use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// One pane per bidder and session: the session's bounds and its number of bids.
pub const OUT: Outlet<Pane<i64, i64>> = Outlet::new("out").keyed_by(|pane| pane.key.to_string());
/// Sessions separated by 10 s of inactivity.
pub const WINDOWS: WindowSpec = WindowSpec::session(WINDOW_SIZE).checked();

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WINDOWS, Count::new())
        .key_by(|bid: &Bid| bid.bidder)
        .event_time(|bid| bid.date_time)
        .watermarks(WATERMARKS)
        .describe("nexmark q11: bids per bidder per session (10 s gap)")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queries::shuffled_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn sessions_count_each_bidders_bursts() -> anyhow::Result<()> {
        // In order, and shuffled within groups of 125 events (up to 0.62 s out of order).
        for group in [1, 125] {
            check_against_batch(group).await?;
        }
        Ok(())
    }

    async fn check_against_batch(group: i64) -> anyhow::Result<()> {
        let streams = shuffled_streams(10_000, 200, group);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        let mut streamed: Vec<(i64, i64, i64, i64)> = run
            .output(OUT)
            .into_iter()
            .map(|pane| (pane.key, pane.window_start, pane.window_end, pane.value))
            .collect();
        streamed.sort_unstable();

        // The batch computation: sort each bidder's bids by time and start a new session
        // where a bid comes 10 s or more after the previous one.
        let mut times: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for bid in &streams.bids {
            times.entry(bid.bidder).or_default().push(bid.date_time);
        }
        let mut expected = Vec::new();
        for (bidder, mut times) in times {
            times.sort_unstable();
            let (mut start, mut last, mut count) = (times[0], times[0], 0);
            for time in times {
                if time >= last + 10_000 {
                    expected.push((bidder, start, last + 10_000, count));
                    (start, count) = (time, 0);
                }
                last = time;
                count += 1;
            }
            expected.push((bidder, start, last + 10_000, count));
        }
        expected.sort_unstable();
        assert!(expected.len() > 100, "{} sessions", expected.len());
        assert_eq!(streamed, expected);
        assert_eq!(run.metrics().late(), 0);
        Ok(())
    }
}
