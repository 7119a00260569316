//! Persons, and which person a seller or bidder is (Beam's `PersonGenerator`).

use super::JavaRandom;
use super::config::{FIRST_PERSON_ID, GeneratorConfig, PERSON_PROPORTION, PROPORTION_DENOMINATOR};
use super::strings::{next_extra, next_long_below, next_string};
use crate::model::Person;

/// Ids of persons not yet created that bids and auctions may name.
const PERSON_ID_LEAD: i64 = 10;
/// Few states, so that queries find matches in small runs.
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];

/// The person of event `event_id`, at `timestamp`.
pub(crate) fn next_person(
    event_id: i64,
    random: &mut JavaRandom,
    timestamp: i64,
    config: &GeneratorConfig,
) -> Person {
    let id = last_base0_person_id(event_id) + FIRST_PERSON_ID;
    let name = format!(
        "{} {}",
        pick(random, &FIRST_NAMES),
        pick(random, &LAST_NAMES)
    );
    let email_address = format!("{}@{}.com", next_string(random, 7), next_string(random, 5));
    let credit_card = (0..4)
        .map(|_| format!("{:04}", random.next_int_below(10_000)))
        .collect::<Vec<_>>()
        .join(" ");
    let city = pick(random, &US_CITIES).to_owned();
    let state = pick(random, &US_STATES).to_owned();
    let size = 8 + name.len() + email_address.len() + credit_card.len() + city.len() + state.len();
    let extra = next_extra(random, size as i64, config.average_person_bytes);
    Person {
        id,
        name,
        email_address,
        credit_card,
        city,
        state,
        date_time: timestamp,
        extra,
    }
}

/// A random active person (base 0), or one of the few not created yet.
pub(crate) fn next_base0_person_id(
    event_id: i64,
    random: &mut JavaRandom,
    config: &GeneratorConfig,
) -> i64 {
    let people = last_base0_person_id(event_id) + 1;
    let active = people.min(config.active_people);
    people - active + next_long_below(random, active + PERSON_ID_LEAD)
}

/// The latest person created at or before event `event_id` (base 0).
pub(crate) fn last_base0_person_id(event_id: i64) -> i64 {
    let epoch = event_id / PROPORTION_DENOMINATOR;
    let offset = (event_id % PROPORTION_DENOMINATOR).min(PERSON_PROPORTION - 1);
    epoch * PERSON_PROPORTION + offset
}

fn pick<'a>(random: &mut JavaRandom, choices: &[&'a str]) -> &'a str {
    choices[random.next_int_below(choices.len() as i32) as usize]
}
