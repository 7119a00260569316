//! Query 3, local item suggestion: who sells in category 10 in Oregon, Idaho or
//! California: for every auction in category 10 whose seller lives in OR, ID or CA, the
//! seller's name, city and state and the auction's id (the reference's q3).
//!
//! A [`Join`] of persons and auctions by seller in keyed state, not windowed, as the
//! reference: persons are kept (those in the three states with their details, the others
//! by id only, so that their auctions are dropped at once), and an auction whose seller has
//! not registered yet (the generator names sellers up to 10 persons ahead) waits for them.
//! The state grows with the number of persons, as the reference's and Flink's unbounded
//! join state does; it is checkpointed by the persons and sellers changed since the last
//! checkpoint.

use runnel::checkpoint::{ChangelogEntriesBuilder, ReplayTarget, TrackedMap};
use runnel::prelude::*;

use super::WATERMARKS;
use crate::model::{Auction, Person};
use crate::two_inputs::{Join, JoinState, Taken, TwoInputs};

/// Persons.
pub const PERSONS: Inlet<Person> = Inlet::new("persons");
/// Auctions.
pub const AUCTIONS: Inlet<Auction> = Inlet::new("auctions");
/// The matches.
pub const OUT: Outlet<NameCityStateId> = Outlet::new("out");

/// The category looked for.
pub const CATEGORY: i64 = 10;
/// The states looked for.
pub const STATES: [&str; 3] = ["OR", "ID", "CA"];

/// A seller in one of the states with an auction in the category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, AvroSchema)]
pub struct NameCityStateId {
    /// The seller's name.
    pub name: String,
    /// The seller's city.
    pub city: String,
    /// The seller's state.
    pub state: String,
    /// The auction's id.
    pub id: i64,
    /// The auction's time (the record's timestamp).
    pub date_time: i64,
}

/// What the join keeps.
#[derive(Debug, Default)]
pub struct Sellers {
    /// Every person seen: `Some` with name, city and state for those in the states.
    persons: TrackedMap<i64, Option<(String, String, String)>>,
    /// Auctions in the category waiting for their seller, by seller id.
    waiting: TrackedMap<i64, Vec<(i64, i64)>>,
}

/// The first byte of a person's changelog entry.
const PERSON_ENTRY: u8 = b'p';
/// The first byte of the changelog entry of a seller's waiting auctions.
const WAITING_ENTRY: u8 = b'w';

impl JoinState for Sellers {
    fn take_changes(&mut self, snapshot: bool, entries: &mut ChangelogEntriesBuilder) -> u64 {
        self.persons
            .take_changes(&[PERSON_ENTRY], snapshot, entries)
            + self
                .waiting
                .take_changes(&[WAITING_ENTRY], snapshot, entries)
    }
}

impl ReplayTarget for Sellers {
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        match key.split_first() {
            Some((&PERSON_ENTRY, key)) => self.persons.apply(key, value),
            Some((&WAITING_ENTRY, key)) => self.waiting.apply(key, value),
            _ => false,
        }
    }

    fn mark_changed(&mut self, key: &[u8]) {
        match key.split_first() {
            Some((&PERSON_ENTRY, key)) => self.persons.mark_changed(key),
            Some((&WAITING_ENTRY, key)) => self.waiting.mark_changed(key),
            _ => {}
        }
    }

    fn held_entries(&self) -> u64 {
        (self.persons.len() + self.waiting.len()) as u64
    }
}

fn suggestion(seller: &(String, String, String), auction: (i64, i64)) -> NameCityStateId {
    NameCityStateId {
        name: seller.0.clone(),
        city: seller.1.clone(),
        state: seller.2.clone(),
        id: auction.0,
        date_time: auction.1,
    }
}

/// The join of persons and auctions.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalItems;

impl Join for LocalItems {
    type Left = Person;
    type Right = Auction;
    type Output = NameCityStateId;
    type State = Sellers;

    fn left_time(&self, person: &Person) -> i64 {
        person.date_time
    }

    fn right_time(&self, auction: &Auction) -> i64 {
        auction.date_time
    }

    fn output_time(&self, output: &NameCityStateId) -> i64 {
        output.date_time
    }

    fn left(
        &self,
        state: &mut Sellers,
        person: &Person,
        _: i64,
        outputs: &mut Vec<NameCityStateId>,
    ) -> Taken {
        let details = STATES.contains(&person.state.as_str()).then(|| {
            (
                person.name.clone(),
                person.city.clone(),
                person.state.clone(),
            )
        });
        let waiting = state.waiting.remove(&person.id).unwrap_or_default();
        if let Some(details) = &details {
            outputs.extend(
                waiting
                    .into_iter()
                    .map(|auction| suggestion(details, auction)),
            );
        }
        state.persons.insert(person.id, details);
        Taken::Accepted
    }

    fn right(
        &self,
        state: &mut Sellers,
        auction: &Auction,
        _: i64,
        outputs: &mut Vec<NameCityStateId>,
    ) -> Taken {
        if auction.category != CATEGORY {
            return Taken::Accepted;
        }
        let key = (auction.id, auction.date_time);
        match state.persons.get(&auction.seller) {
            Some(Some(details)) => outputs.push(suggestion(details, key)),
            Some(None) => {}
            None => state.waiting.change(&auction.seller, Vec::new).push(key),
        }
        Taken::Accepted
    }

    fn advance(&self, _: &mut Sellers, _: i64, _: &mut Vec<NameCityStateId>) {}
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    TwoInputs::new(LocalItems, PERSONS, AUCTIONS, OUT, WATERMARKS)
        .describe("nexmark q3: sellers in OR, ID or CA with auctions in category 10")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::test_streams;
    use runnel::testkit::TestRun;

    #[tokio::test]
    async fn every_local_seller_of_the_category_is_suggested() -> anyhow::Result<()> {
        let streams = test_streams(50_000, 10_000);
        let run = TestRun::new(streamlet())
            .input(PERSONS, streams.persons.clone())
            .input(AUCTIONS, streams.auctions.clone())
            .run()
            .await?;
        let mut streamed = run.output(OUT);
        streamed.sort_by_key(|row| row.id);

        // The batch computation: a nested-loop join.
        let mut expected = Vec::new();
        for auction in &streams.auctions {
            for person in &streams.persons {
                let local = ["OR", "ID", "CA"].contains(&person.state.as_str());
                if auction.category == 10 && person.id == auction.seller && local {
                    expected.push(NameCityStateId {
                        name: person.name.clone(),
                        city: person.city.clone(),
                        state: person.state.clone(),
                        id: auction.id,
                        date_time: auction.date_time,
                    });
                }
            }
        }
        expected.sort_by_key(|row| row.id);
        assert!(expected.len() > 50, "{} matches", expected.len());
        assert_eq!(streamed, expected);
        Ok(())
    }

    #[tokio::test]
    async fn an_auction_waits_for_a_seller_who_registers_after_it() -> anyhow::Result<()> {
        let streams = test_streams(2_000, 10_000);
        let mut person = streams.persons[0].clone();
        person.id = 77_777;
        person.state = "OR".to_owned();
        let mut auction = streams.auctions[0].clone();
        auction.seller = 77_777;
        auction.category = 10;
        let run = TestRun::new(streamlet())
            .at(0)
            .input(AUCTIONS, [auction.clone()])
            .at(1_000)
            .input(PERSONS, [person.clone()])
            .run()
            .await?;
        let sent = run.timed_output(OUT)?;
        assert_eq!(sent.len(), 1);
        assert_eq!((sent[0].0, sent[0].1.id), (1_000, auction.id));
        assert_eq!(sent[0].1.name, person.name);
        Ok(())
    }
}
