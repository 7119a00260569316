//! Query 1, currency conversion: every bid with its price converted from dollars to euros
//! at the reference's fixed rate, `price * 89 / 100` in integer cents.

use runnel::prelude::*;

use crate::model::Bid;

/// Bids in dollars.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// The same bids in euros.
pub const OUT: Outlet<Bid> = Outlet::new("out");

/// The price in euro cents of a price in dollar cents.
pub fn dollars_to_euros(price: i64) -> i64 {
    price * 89 / 100
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    Processor::new(IN, OUT, |bid: Bid| {
        Some(Bid {
            price: dollars_to_euros(bid.price),
            ..bid
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn every_bid_comes_out_in_euros() -> anyhow::Result<()> {
        let streams = test_streams(2_000, 10_000);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        let mut expected = streams.bids;
        for bid in &mut expected {
            bid.price = (bid.price as f64 * 0.89).floor() as i64;
        }
        assert_eq!(run.output(OUT), expected);
        assert_eq!(dollars_to_euros(1_000), 890);
        Ok(())
    }
}
