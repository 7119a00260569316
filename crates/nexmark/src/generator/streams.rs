//! [`Streams`]: generated events split by type, as a source sends them to its outlets.

use crate::model::{Auction, Bid, Event, Person};

/// Events split into persons, auctions and bids, each in the order generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Streams {
    /// The persons.
    pub persons: Vec<Person>,
    /// The auctions.
    pub auctions: Vec<Auction>,
    /// The bids.
    pub bids: Vec<Bid>,
}

impl Streams {
    /// Appends `event` to its stream.
    pub fn push(&mut self, event: Event) {
        match event {
            Event::Person(person) => self.persons.push(person),
            Event::Auction(auction) => self.auctions.push(auction),
            Event::Bid(bid) => self.bids.push(bid),
        }
    }
}
