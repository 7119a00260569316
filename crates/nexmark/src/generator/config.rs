//! [`GeneratorConfig`]: what the generator draws from, and where event number `n` sits in
//! event time and in the stream's order (Beam's `GeneratorConfig`).

use crate::error::ConfigError;

/// One person in every 50 events.
pub const PERSON_PROPORTION: i64 = 1;
/// Three auctions in every 50 events.
pub const AUCTION_PROPORTION: i64 = 3;
/// Forty-six bids in every 50 events.
pub const BID_PROPORTION: i64 = 46;
/// The length of the repeating mix of persons, auctions and bids.
pub const PROPORTION_DENOMINATOR: i64 = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
/// The first person's id.
pub const FIRST_PERSON_ID: i64 = 1_000;
/// The first auction's id.
pub const FIRST_AUCTION_ID: i64 = 1_000;
/// The first category's id.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// The default event time of event 0: 2024-01-01T00:00:00Z, so that runs repeat exactly (the
/// reference generator uses this mode too, with a base time in the past).
pub const DEFAULT_BASE_TIME: i64 = 1_704_067_200_000;

/// The settings of the generator, with the reference generator's defaults
/// (`NexmarkConfiguration`): 10,000 events per second of event time, in order, 1,000 active
/// people, 100 auctions in flight, half the bids on hot auctions, a quarter of the sellers
/// and bidders hot, average sizes 200 (person), 500 (auction) and 100 (bid) bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Event time of event number 0, milliseconds since the Unix epoch.
    pub base_time: i64,
    /// Added to every event number to make its id (non-zero to give parallel generators
    /// disjoint ids).
    pub first_event_id: i64,
    /// Events per second of event time: event `n` happens `n / rate` seconds after
    /// `base_time` (before out-of-order adjustment).
    pub events_per_second: i64,
    /// Out-of-orderness: events are shuffled within consecutive groups of this many event
    /// numbers, so an event's time can be up to `group - 1` events behind its position. 1
    /// means in order.
    pub out_of_order_group_size: i64,
    /// How many of the latest persons sellers and bidders are drawn from.
    pub active_people: i64,
    /// How many of the latest auctions bids are spread over.
    pub in_flight_auctions: i64,
    /// One bid in this many is on a random in-flight auction; the others are on a hot one.
    pub hot_auction_ratio: i64,
    /// One auction in this many is by a random active seller; the others by a hot one.
    pub hot_sellers_ratio: i64,
    /// One bid in this many is by a random active bidder; the others by a hot one.
    pub hot_bidders_ratio: i64,
    /// Average size of a person, bytes (padding in `extra`).
    pub average_person_bytes: i64,
    /// Average size of an auction, bytes.
    pub average_auction_bytes: i64,
    /// Average size of a bid, bytes.
    pub average_bid_bytes: i64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            base_time: DEFAULT_BASE_TIME,
            first_event_id: 0,
            events_per_second: 10_000,
            out_of_order_group_size: 1,
            active_people: 1_000,
            in_flight_auctions: 100,
            hot_auction_ratio: 2,
            hot_sellers_ratio: 4,
            hot_bidders_ratio: 4,
            average_person_bytes: 200,
            average_auction_bytes: 500,
            average_bid_bytes: 100,
        }
    }
}

impl GeneratorConfig {
    /// Checks that every setting that must be positive is.
    pub fn check(&self) -> Result<(), ConfigError> {
        let positive = [
            ("events-per-second", self.events_per_second),
            ("out-of-order-group-size", self.out_of_order_group_size),
            ("active-people", self.active_people),
            ("in-flight-auctions", self.in_flight_auctions),
            ("hot-auction-ratio", self.hot_auction_ratio),
            ("hot-sellers-ratio", self.hot_sellers_ratio),
            ("hot-bidders-ratio", self.hot_bidders_ratio),
        ];
        match positive.into_iter().find(|(_, value)| *value < 1) {
            Some((setting, value)) => Err(ConfigError::NotPositive { setting, value }),
            None => Ok(()),
        }
    }

    /// Microseconds of event time between consecutive events, rounded to the nearest.
    pub fn inter_event_delay_micros(&self) -> i64 {
        (1_000_000 + self.events_per_second / 2) / self.events_per_second
    }

    /// The event time of event number `number` in the in-order timeline.
    pub fn timestamp_for(&self, number: i64) -> i64 {
        self.base_time + number * self.inter_event_delay_micros() / 1_000
    }

    /// The event number whose id, kind and time the `number`-th event of the stream takes:
    /// `number` itself when in order, otherwise a permutation within its group of
    /// `out_of_order_group_size` (953 times the number, modulo the group size).
    pub fn adjusted_number(&self, number: i64) -> i64 {
        let group = self.out_of_order_group_size;
        (number / group) * group + (number * 953) % group
    }

    /// A time no later than that of any event from the `number`-th on: the first event time
    /// of `number`'s group.
    pub fn watermark_for(&self, number: i64) -> i64 {
        let group = self.out_of_order_group_size;
        self.timestamp_for((number / group) * group)
    }
}
