//! Query 9, winning bids: for every auction, the bid that wins it once it closes, as the
//! reference's `WinningBids` defines it: a bid counts if it was placed while the auction was
//! open (`date_time <= bid time < expires`) at or above the reserve; the highest price
//! wins, and of equal prices the earliest bid (then the lowest bidder id, then the smallest
//! `extra`, so the winner never depends on arrival order). Auctions without a valid bid
//! emit nothing. A winner's event time is its auction's `expires`.
//!
//! A [`Join`] of auctions and bids in keyed state: open auctions with their best bid so
//! far, and bids for auctions not seen yet (the generator names auctions up to 10 ahead of
//! the latest). An auction is emitted when the watermark passes its `expires`; a waiting bid
//! is dropped when the watermark passes its time, since an auction that arrives on time
//! after that opened too late for it. Each open auction and each auction's waiting bids are
//! one entry of the changelog, written when they changed since the last checkpoint; the
//! indexes by time are rebuilt from them on restore.

use std::collections::BTreeSet;

use runnel::checkpoint::{ChangelogEntriesBuilder, ReplayTarget, TrackedMap};
use runnel::prelude::*;

use super::WATERMARKS;
use crate::model::{Auction, Bid};
use crate::two_inputs::{Join, JoinState, Taken, TwoInputs};

/// Auctions.
pub const AUCTIONS: Inlet<Auction> = Inlet::new("auctions");
/// Bids.
pub const BIDS: Inlet<Bid> = Inlet::new("bids");
/// Each closed auction with its winning bid.
pub const OUT: Outlet<WinningBid> = Outlet::new("out");

/// An auction and the bid that won it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct WinningBid {
    /// The auction.
    pub auction: Auction,
    /// Its winning bid.
    pub bid: Bid,
}

/// Whether `bid` may win `auction`.
pub fn is_valid(auction: &Auction, bid: &Bid) -> bool {
    auction.date_time <= bid.date_time
        && bid.date_time < auction.expires
        && bid.price >= auction.reserve
}

/// Whether `challenger` beats `holder`: a higher price, or the same price placed earlier
/// (then a lower bidder id, then a smaller `extra`).
pub fn beats(challenger: &Bid, holder: &Bid) -> bool {
    let rank = |bid: &Bid| (bid.price, -bid.date_time, -bid.bidder);
    match rank(challenger).cmp(&rank(holder)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => challenger.extra < holder.extra,
    }
}

/// What the join keeps.
#[derive(Debug, Default)]
pub struct Auctions {
    /// Open auctions by id, each with its best valid bid so far.
    open: TrackedMap<i64, (Auction, Option<Bid>)>,
    /// `(expires, id)` of the open auctions, in closing order.
    closing: BTreeSet<(i64, i64)>,
    /// Bids on auctions not seen yet, by auction id.
    waiting: TrackedMap<i64, Vec<Bid>>,
    /// `(time, auction id)` of the waiting bids, to drop them once the watermark passes.
    waiting_since: BTreeSet<(i64, i64)>,
}

impl Auctions {
    fn offer(&mut self, bid: &Bid) -> bool {
        let Some((auction, best)) = self.open.get(&bid.auction) else {
            return false;
        };
        if is_valid(auction, bid) && best.as_ref().is_none_or(|holder| beats(bid, holder)) {
            let (_, best) = self.open.change_existing(&bid.auction).expect("open");
            *best = Some(bid.clone());
        }
        true
    }
}

/// The first byte of an open auction's changelog entry.
const OPEN_ENTRY: u8 = b'o';
/// The first byte of the changelog entry of an auction's waiting bids.
const WAITING_ENTRY: u8 = b'w';

impl JoinState for Auctions {
    fn take_changes(&mut self, snapshot: bool, entries: &mut ChangelogEntriesBuilder) -> u64 {
        self.open.take_changes(&[OPEN_ENTRY], snapshot, entries)
            + self
                .waiting
                .take_changes(&[WAITING_ENTRY], snapshot, entries)
    }
}

impl ReplayTarget for Auctions {
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        let (closing, waiting_since) = (&mut self.closing, &mut self.waiting_since);
        match key.split_first() {
            Some((&OPEN_ENTRY, key)) => self.open.apply_with(key, value, |&id, old, new| {
                if let Some((auction, _)) = old {
                    closing.remove(&(auction.expires, id));
                }
                if let Some((auction, _)) = new {
                    closing.insert((auction.expires, id));
                }
            }),
            Some((&WAITING_ENTRY, key)) => self.waiting.apply_with(key, value, |&id, old, new| {
                for bid in old.into_iter().flatten() {
                    waiting_since.remove(&(bid.date_time, id));
                }
                for bid in new.into_iter().flatten() {
                    waiting_since.insert((bid.date_time, id));
                }
            }),
            _ => false,
        }
    }

    fn mark_changed(&mut self, key: &[u8]) {
        match key.split_first() {
            Some((&OPEN_ENTRY, key)) => self.open.mark_changed(key),
            Some((&WAITING_ENTRY, key)) => self.waiting.mark_changed(key),
            _ => {}
        }
    }

    fn held_entries(&self) -> u64 {
        (self.open.len() + self.waiting.len()) as u64
    }
}

/// The join of auctions and bids.
#[derive(Debug, Clone, Copy, Default)]
pub struct WinningBids;

impl Join for WinningBids {
    type Left = Auction;
    type Right = Bid;
    type Output = WinningBid;
    type State = Auctions;

    fn left_time(&self, auction: &Auction) -> i64 {
        auction.date_time
    }

    fn right_time(&self, bid: &Bid) -> i64 {
        bid.date_time
    }

    fn output_time(&self, winner: &WinningBid) -> i64 {
        winner.auction.expires
    }

    fn left(
        &self,
        state: &mut Auctions,
        auction: &Auction,
        watermark: i64,
        _: &mut Vec<WinningBid>,
    ) -> Taken {
        if auction.expires <= watermark {
            return Taken::Late;
        }
        // A replayed auction (at-least-once input) keeps the best bid found so far.
        if !state.open.contains_key(&auction.id) {
            state.open.insert(auction.id, (auction.clone(), None));
        }
        state.closing.insert((auction.expires, auction.id));
        for bid in state.waiting.remove(&auction.id).unwrap_or_default() {
            state.offer(&bid);
        }
        Taken::Accepted
    }

    fn right(
        &self,
        state: &mut Auctions,
        bid: &Bid,
        watermark: i64,
        _: &mut Vec<WinningBid>,
    ) -> Taken {
        if state.offer(bid) {
            return Taken::Accepted;
        }
        if bid.date_time < watermark {
            return Taken::Late;
        }
        state
            .waiting
            .change(&bid.auction, Vec::new)
            .push(bid.clone());
        state.waiting_since.insert((bid.date_time, bid.auction));
        Taken::Accepted
    }

    fn advance(&self, state: &mut Auctions, watermark: i64, outputs: &mut Vec<WinningBid>) {
        while let Some(&(expires, id)) = state.closing.first() {
            if expires > watermark {
                break;
            }
            state.closing.pop_first();
            if let Some((auction, Some(bid))) = state.open.remove(&id) {
                outputs.push(WinningBid { auction, bid });
            }
        }
        while let Some(&(time, auction)) = state.waiting_since.first() {
            if time >= watermark {
                break;
            }
            state.waiting_since.pop_first();
            if let Some(bids) = state.waiting.change_existing(&auction) {
                bids.retain(|bid| bid.date_time >= watermark);
                if bids.is_empty() {
                    state.waiting.remove(&auction);
                }
            }
        }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    TwoInputs::new(WinningBids, AUCTIONS, BIDS, OUT, WATERMARKS)
        .describe("nexmark q9: each auction's winning bid when it closes")
}

/// The batch computation the tests of q9 and q4 check against: every auction with a valid
/// bid, and its best one, by auction id.
#[cfg(test)]
pub(crate) fn batch_winners(auctions: &[Auction], bids: &[Bid]) -> Vec<WinningBid> {
    let mut winners = Vec::new();
    for auction in auctions {
        let mut best: Option<&Bid> = None;
        for bid in bids.iter().filter(|bid| bid.auction == auction.id) {
            let price_ok = bid.price >= auction.reserve;
            let open = bid.date_time >= auction.date_time && bid.date_time < auction.expires;
            let better = match best {
                None => true,
                Some(held) => {
                    bid.price > held.price
                        || (bid.price == held.price
                            && (bid.date_time, bid.bidder, &bid.extra)
                                < (held.date_time, held.bidder, &held.extra))
                }
            };
            if price_ok && open && better {
                best = Some(bid);
            }
        }
        if let Some(bid) = best {
            winners.push(WinningBid {
                auction: auction.clone(),
                bid: bid.clone(),
            });
        }
    }
    winners.sort_by_key(|winner| winner.auction.id);
    winners
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::shuffled_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn every_auction_with_a_valid_bid_has_its_best_bid_as_winner() -> anyhow::Result<()> {
        // In order, and shuffled within groups of 400 events (up to 0.8 s out of order).
        for group in [1, 400] {
            check_against_batch(group).await?;
        }
        Ok(())
    }

    async fn check_against_batch(group: i64) -> anyhow::Result<()> {
        let streams = shuffled_streams(20_000, 500, group);
        let run = TestRun::new(streamlet())
            .input(AUCTIONS, streams.auctions.clone())
            .input(BIDS, streams.bids.clone())
            .run()
            .await?;
        let records = run.records(OUT);
        assert!(
            records
                .iter()
                .all(|r| r.timestamp == r.value.auction.expires)
        );
        let mut streamed = run.output(OUT);
        streamed.sort_by_key(|winner| winner.auction.id);
        let expected = batch_winners(&streams.auctions, &streams.bids);
        assert!(expected.len() > 100, "{} winners", expected.len());
        assert_eq!(streamed, expected);
        assert_eq!(run.metrics().late(), 0);
        Ok(())
    }

    #[tokio::test]
    async fn auctions_close_when_the_watermark_passes_their_end() -> anyhow::Result<()> {
        let auction = |id, date_time, expires| Auction {
            id,
            item_name: String::new(),
            description: String::new(),
            initial_bid: 1,
            reserve: 10,
            date_time,
            expires,
            seller: 1,
            category: 10,
            extra: String::new(),
        };
        let bid = |auction, price, date_time| Bid {
            auction,
            bidder: 7,
            price,
            date_time,
            extra: String::new(),
        };
        let run = TestRun::new(streamlet())
            .at(0)
            .input(AUCTIONS, [auction(1, 0, 5_000), auction(2, 0, 60_000)])
            .input(
                BIDS,
                [bid(1, 20, 1_000), bid(1, 5, 2_000), bid(3, 50, 2_500)],
            )
            .at(500)
            .input(BIDS, [bid(2, 30, 6_500)]) // the auctions still hold the watermark
            .at(1_000)
            .input(AUCTIONS, [auction(4, 7_000, 90_000)]) // watermark 5.5 s: 1 closes
            .at(2_000)
            .input(BIDS, [bid(1, 99, 4_000)]) // too late: auction 1 has closed
            .at(3_000)
            .run()
            .await?;
        let winners: Vec<(i64, i64, i64)> = run
            .timed_output(OUT)?
            .into_iter()
            .map(|(at, winner)| (at, winner.auction.id, winner.bid.price))
            .collect();
        // Auction 1 is won at 20 (5 is under the reserve) when the watermark passes 5 s;
        // auction 2 at the end of the input; the bid on unknown auction 3 waits and goes.
        assert_eq!(winners, [(1_000, 1, 20), (3_000, 2, 30)]);
        assert_eq!(run.metrics().late(), 1);
        Ok(())
    }
}
