//! Query 0, passthrough: every bid, unchanged. Measures the cost of reading, decoding,
//! encoding and writing a record.

use runnel::prelude::*;

use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// The same bids.
pub const OUT: Outlet<Bid> = Outlet::new("out");

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    Processor::new(IN, OUT, |bid: Bid| Some(bid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn every_bid_passes_unchanged() -> anyhow::Result<()> {
        let streams = test_streams(2_000, 10_000);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        assert_eq!(run.output(OUT), streams.bids);
        Ok(())
    }
}
