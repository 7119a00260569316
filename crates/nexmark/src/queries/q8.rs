//! Query 8, monitor new users: persons who registered and opened an auction in the same
//! tumbling window of 10 s: the person's id and name and the auction's reserve, for each
//! such auction (the reference's q8, a windowed join of persons and auctions by seller).
//!
//! A [`Join`] keeping, per window, the persons who registered and the auctions opened in
//! it; when the watermark passes the window's end it emits the matches and forgets the
//! window. Persons or auctions whose window has already been emitted are late. Each window
//! is one entry of the changelog, written when it changed since the last checkpoint.

use std::collections::BTreeMap;

use runnel::checkpoint::{ChangelogEntriesBuilder, ReplayTarget, TrackedMap};
use runnel::prelude::*;

use super::{WATERMARKS, WINDOW_SIZE};
use crate::model::{Auction, Person};
use crate::two_inputs::{Join, JoinState, Taken, TwoInputs};

/// Persons.
pub const PERSONS: Inlet<Person> = Inlet::new("persons");
/// Auctions.
pub const AUCTIONS: Inlet<Auction> = Inlet::new("auctions");
/// The new sellers.
pub const OUT: Outlet<NewSeller> = Outlet::new("out");

/// A person who opened an auction in the window they registered in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct NewSeller {
    /// The person's id.
    pub id: i64,
    /// The person's name.
    pub name: String,
    /// The auction's reserve.
    pub reserve: i64,
    /// The window's first millisecond.
    pub window_start: i64,
}

/// What one window holds.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct WindowContents {
    /// Names of the persons who registered in it, by id.
    persons: BTreeMap<i64, String>,
    /// `(seller, reserve)` of the auctions opened in it.
    auctions: Vec<(i64, i64)>,
}

/// What the join keeps: the open windows by start.
#[derive(Debug, Default)]
pub struct Windows(TrackedMap<i64, WindowContents>);

impl JoinState for Windows {
    fn take_changes(&mut self, snapshot: bool, entries: &mut ChangelogEntriesBuilder) -> u64 {
        self.0.take_changes(&[], snapshot, entries)
    }
}

impl ReplayTarget for Windows {
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        self.0.apply(key, value)
    }

    fn mark_changed(&mut self, key: &[u8]) {
        self.0.mark_changed(key);
    }

    fn held_entries(&self) -> u64 {
        self.0.len() as u64
    }
}

/// The start of the window holding `time`.
pub fn window_start(time: i64) -> i64 {
    let size = WINDOW_SIZE.as_millis() as i64;
    time - time.rem_euclid(size)
}

/// The window join.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewSellers;

impl Join for NewSellers {
    type Left = Person;
    type Right = Auction;
    type Output = NewSeller;
    type State = Windows;

    fn left_time(&self, person: &Person) -> i64 {
        person.date_time
    }

    fn right_time(&self, auction: &Auction) -> i64 {
        auction.date_time
    }

    fn output_time(&self, seller: &NewSeller) -> i64 {
        seller.window_start + WINDOW_SIZE.as_millis() as i64 - 1
    }

    fn left(
        &self,
        windows: &mut Windows,
        person: &Person,
        watermark: i64,
        _: &mut Vec<NewSeller>,
    ) -> Taken {
        let start = window_start(person.date_time);
        if is_closed(start, watermark) {
            return Taken::Late;
        }
        let window = windows.0.change(&start, WindowContents::default);
        window.persons.insert(person.id, person.name.clone());
        Taken::Accepted
    }

    fn right(
        &self,
        windows: &mut Windows,
        auction: &Auction,
        watermark: i64,
        _: &mut Vec<NewSeller>,
    ) -> Taken {
        let start = window_start(auction.date_time);
        if is_closed(start, watermark) {
            return Taken::Late;
        }
        let window = windows.0.change(&start, WindowContents::default);
        window.auctions.push((auction.seller, auction.reserve));
        Taken::Accepted
    }

    fn advance(&self, windows: &mut Windows, watermark: i64, outputs: &mut Vec<NewSeller>) {
        let mut closed: Vec<i64> = (windows.0.iter())
            .map(|(&start, _)| start)
            .filter(|&start| is_closed(start, watermark))
            .collect();
        closed.sort_unstable();
        for start in closed {
            let window = windows.0.remove(&start).unwrap_or_default();
            for (seller, reserve) in window.auctions {
                if let Some(name) = window.persons.get(&seller) {
                    outputs.push(NewSeller {
                        id: seller,
                        name: name.clone(),
                        reserve,
                        window_start: start,
                    });
                }
            }
        }
    }
}

/// Whether the window starting at `start` is complete at `watermark`.
fn is_closed(start: i64, watermark: i64) -> bool {
    start.saturating_add(WINDOW_SIZE.as_millis() as i64) <= watermark
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    TwoInputs::new(NewSellers, PERSONS, AUCTIONS, OUT, WATERMARKS)
        .describe("nexmark q8: persons who opened an auction in the 10 s window they registered in")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::{Generator, GeneratorConfig};
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn new_sellers_are_found_per_window() -> anyhow::Result<()> {
        // Few active people, so that new persons sell soon after registering.
        let config = GeneratorConfig {
            events_per_second: 500,
            active_people: 20,
            ..GeneratorConfig::default()
        };
        let streams = Generator::new(config)?.streams(20_000);
        let run = TestRun::new(streamlet())
            .input(PERSONS, streams.persons.clone())
            .input(AUCTIONS, streams.auctions.clone())
            .run()
            .await?;
        let key = |s: &NewSeller| (s.window_start, s.id, s.reserve);
        let mut streamed = run.output(OUT);
        streamed.sort_by_key(key);

        // The batch computation: a nested-loop join on seller and window.
        let mut expected = Vec::new();
        for auction in &streams.auctions {
            for person in &streams.persons {
                let window = person.date_time - person.date_time.rem_euclid(10_000);
                let same_window =
                    auction.date_time - auction.date_time.rem_euclid(10_000) == window;
                if person.id == auction.seller && same_window {
                    expected.push(NewSeller {
                        id: person.id,
                        name: person.name.clone(),
                        reserve: auction.reserve,
                        window_start: window,
                    });
                }
            }
        }
        expected.sort_by_key(key);
        assert!(expected.len() > 20, "{} new sellers", expected.len());
        assert_eq!(streamed, expected);
        assert_eq!(run.metrics().late(), 0);
        Ok(())
    }
}
