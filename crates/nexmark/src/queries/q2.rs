//! Query 2, selection: the auction and price of the bids on every 123rd auction
//! (`auction % 123 == 0`).

use runnel::prelude::*;

use crate::model::Bid;

/// Bids.
pub const IN: Inlet<Bid> = Inlet::new("in");
/// Auction and price of the selected bids.
pub const OUT: Outlet<AuctionPrice> = Outlet::new("out");

/// Bids on auctions whose id is a multiple of this are selected.
pub const AUCTION_SKIP: i64 = 123;

/// A selected bid: the auction and the price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct AuctionPrice {
    /// The auction's id.
    pub auction: i64,
    /// The bid's price.
    pub price: i64,
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    Processor::new(IN, OUT, |bid: Bid| {
        (bid.auction % AUCTION_SKIP == 0).then_some(AuctionPrice {
            auction: bid.auction,
            price: bid.price,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn only_bids_on_every_123rd_auction_pass() -> anyhow::Result<()> {
        let streams = test_streams(20_000, 10_000);
        let run = TestRun::new(streamlet())
            .input(IN, streams.bids.clone())
            .run()
            .await?;
        let mut expected = Vec::new();
        for bid in &streams.bids {
            if bid.auction % 123 == 0 {
                expected.push(AuctionPrice {
                    auction: bid.auction,
                    price: bid.price,
                });
            }
        }
        assert!(!expected.is_empty(), "the run selects something");
        assert_eq!(run.output(OUT), expected);
        Ok(())
    }
}
