//! Bids (Beam's `BidGenerator`).

use super::JavaRandom;
use super::auction::{last_base0_auction_id, next_base0_auction_id};
use super::config::{FIRST_AUCTION_ID, FIRST_PERSON_ID, GeneratorConfig};
use super::person::{last_base0_person_id, next_base0_person_id};
use super::strings::{next_extra, next_price};
use crate::model::Bid;

/// A hot auction is the first of each batch of this many auctions.
const HOT_AUCTION_BATCH: i64 = 100;
/// A hot bidder is the second of each batch of this many persons (the first sells).
const HOT_BIDDER_BATCH: i64 = 100;

/// The bid of event `event_id`, at `timestamp`.
pub(crate) fn next_bid(
    event_id: i64,
    random: &mut JavaRandom,
    timestamp: i64,
    config: &GeneratorConfig,
) -> Bid {
    let auction = if random.next_int_below(config.hot_auction_ratio as i32) > 0 {
        (last_base0_auction_id(event_id) / HOT_AUCTION_BATCH) * HOT_AUCTION_BATCH
    } else {
        next_base0_auction_id(event_id, random, config)
    } + FIRST_AUCTION_ID;
    let bidder = if random.next_int_below(config.hot_bidders_ratio as i32) > 0 {
        (last_base0_person_id(event_id) / HOT_BIDDER_BATCH) * HOT_BIDDER_BATCH + 1
    } else {
        next_base0_person_id(event_id, random, config)
    } + FIRST_PERSON_ID;
    let price = next_price(random);
    let extra = next_extra(random, 8 + 8 + 8 + 8, config.average_bid_bytes);
    Bid {
        auction,
        bidder,
        price,
        date_time: timestamp,
        extra,
    }
}
