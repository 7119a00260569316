//! The Nexmark events: [`Person`], [`Auction`] and [`Bid`], with derived Avro schemas, and
//! [`Event`], one of the three.
//!
//! Fields follow the reference model (Beam's `org.apache.beam.sdk.nexmark.model`) in snake
//! case; times are milliseconds since the Unix epoch.

use runnel::prelude::*;

/// A new user of the auction site: registers, then sells and bids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, AvroSchema)]
pub struct Person {
    /// The person's id, unique, from 1000 up.
    pub id: i64,
    /// First and last name.
    pub name: String,
    /// A made-up email address.
    pub email_address: String,
    /// Four groups of four digits.
    pub credit_card: String,
    /// A city in the US north-west.
    pub city: String,
    /// The state of the city (AZ, CA, ID, OR, WA or WY).
    pub state: String,
    /// When the person registered (event time).
    pub date_time: i64,
    /// Padding to the configured average size.
    pub extra: String,
}

/// An item put up for auction by a seller, open from `date_time` until `expires`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, AvroSchema)]
pub struct Auction {
    /// The auction's id, unique, from 1000 up.
    pub id: i64,
    /// The item's name.
    pub item_name: String,
    /// The item's description.
    pub description: String,
    /// The price bidding starts at.
    pub initial_bid: i64,
    /// The lowest price the seller accepts: lower bids do not win.
    pub reserve: i64,
    /// When the auction opened (event time).
    pub date_time: i64,
    /// When it closes: bids at or after this time do not count.
    pub expires: i64,
    /// The id of the [`Person`] selling.
    pub seller: i64,
    /// The item's category, 10 to 14.
    pub category: i64,
    /// Padding to the configured average size.
    pub extra: String,
}

/// A bid by a person on an auction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, AvroSchema)]
pub struct Bid {
    /// The id of the [`Auction`] bid on.
    pub auction: i64,
    /// The id of the [`Person`] bidding.
    pub bidder: i64,
    /// The price offered, in cents.
    pub price: i64,
    /// When the bid was placed (event time).
    pub date_time: i64,
    /// Padding to the configured average size.
    pub extra: String,
}

/// One generated event: a person, an auction or a bid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Event {
    /// A new person.
    Person(Person),
    /// A new auction.
    Auction(Auction),
    /// A bid.
    Bid(Bid),
}

impl Event {
    /// The event's time, milliseconds since the Unix epoch.
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(person) => person.date_time,
            Event::Auction(auction) => auction.date_time,
            Event::Bid(bid) => bid.date_time,
        }
    }
}
