//! Auctions, and which auction a bid is on (Beam's `AuctionGenerator`).

use super::JavaRandom;
use super::config::{
    AUCTION_PROPORTION, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, GeneratorConfig,
    PERSON_PROPORTION, PROPORTION_DENOMINATOR,
};
use super::person::{last_base0_person_id, next_base0_person_id};
use super::strings::{next_extra, next_long_below, next_price, next_string};
use crate::model::Auction;

/// Categories are 10 to 14.
const CATEGORIES: i32 = 5;
/// Ids of auctions not yet created that bids may name.
const AUCTION_ID_LEAD: i64 = 10;
/// A hot seller is the first of each batch of this many persons.
const HOT_SELLER_BATCH: i64 = 100;

/// The auction of event `event_id`, the `number`-th event of the stream, at `timestamp`.
pub(crate) fn next_auction(
    number: i64,
    event_id: i64,
    random: &mut JavaRandom,
    timestamp: i64,
    config: &GeneratorConfig,
) -> Auction {
    let id = last_base0_auction_id(event_id) + FIRST_AUCTION_ID;
    let seller = if random.next_int_below(config.hot_sellers_ratio as i32) > 0 {
        (last_base0_person_id(event_id) / HOT_SELLER_BATCH) * HOT_SELLER_BATCH
    } else {
        next_base0_person_id(event_id, random, config)
    } + FIRST_PERSON_ID;
    let category = FIRST_CATEGORY_ID + i64::from(random.next_int_below(CATEGORIES));
    let initial_bid = next_price(random);
    let expires = timestamp + next_auction_length(number, random, timestamp, config);
    let item_name = next_string(random, 20);
    let description = next_string(random, 100);
    let reserve = initial_bid + next_price(random);
    let size = 8 + item_name.len() + description.len() + 8 + 8 + 8 + 8 + 8;
    let extra = next_extra(random, size as i64, config.average_auction_bytes);
    Auction {
        id,
        item_name,
        description,
        initial_bid,
        reserve,
        date_time: timestamp,
        expires,
        seller,
        category,
        extra,
    }
}

/// The latest auction created at or before event `event_id` (base 0).
pub(crate) fn last_base0_auction_id(event_id: i64) -> i64 {
    let mut epoch = event_id / PROPORTION_DENOMINATOR;
    let mut offset = event_id % PROPORTION_DENOMINATOR;
    if offset < PERSON_PROPORTION {
        // A person: the last auction is the previous epoch's last.
        epoch -= 1;
        offset = AUCTION_PROPORTION - 1;
    } else if offset >= PERSON_PROPORTION + AUCTION_PROPORTION {
        // A bid: the last auction is this epoch's last.
        offset = AUCTION_PROPORTION - 1;
    } else {
        offset -= PERSON_PROPORTION;
    }
    epoch * AUCTION_PROPORTION + offset
}

/// A random auction among those likely still open, or one of the few not created yet.
pub(crate) fn next_base0_auction_id(
    event_id: i64,
    random: &mut JavaRandom,
    config: &GeneratorConfig,
) -> i64 {
    let latest = last_base0_auction_id(event_id);
    let earliest = (latest - config.in_flight_auctions).max(0);
    earliest + next_long_below(random, latest - earliest + 1 + AUCTION_ID_LEAD)
}

/// How long an auction stays open: on average as long as it takes to create
/// `in_flight_auctions` more auctions.
fn next_auction_length(
    number: i64,
    random: &mut JavaRandom,
    timestamp: i64,
    config: &GeneratorConfig,
) -> i64 {
    let current = config.adjusted_number(number);
    let events_for_auctions =
        (config.in_flight_auctions * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION;
    let horizon = config.timestamp_for(current + events_for_auctions) - timestamp;
    1 + next_long_below(random, (horizon * 2).max(1))
}
