//! The Nexmark event generator: event number `n` of a stream, as a pure function of `n` and
//! the [`GeneratorConfig`], with the ids, prices, times and out-of-orderness the reference
//! generator (Apache Beam's `NexmarkGenerator`, also used by Flink's Nexmark) gives it.
//!
//! How event `n` is made, as in the reference:
//!
//! 1. Its *adjusted number* `a` is `n` shuffled within its group of
//!    `out_of_order_group_size` numbers ([`GeneratorConfig::adjusted_number`]); its id is
//!    `first_event_id + a` and its time `base_time + a / events_per_second`.
//! 2. `id % 50` says what it is: 0 a person, 1 to 3 an auction, 4 to 49 a bid.
//! 3. Everything else is drawn from `java.util.Random` seeded with the id ([`JavaRandom`]),
//!    so the same number always gives the same event, in any process, in any order.
//!
//! ```
//! use runnel_nexmark::generator::{Generator, GeneratorConfig};
//! use runnel_nexmark::model::Event;
//!
//! let generator = Generator::new(GeneratorConfig::default()).unwrap();
//! let Event::Person(person) = generator.event(0) else { panic!("event 0 is a person") };
//! assert_eq!(person.id, 1_000);
//! let kinds = generator.events(50).filter(|event| matches!(event, Event::Bid(_))).count();
//! assert_eq!(kinds, 46);
//! ```
//!
//! Exactness: the pseudo-random draws are `java.util.Random`'s bit for bit. Prices go
//! through `10^x`, where Rust's `powf` and Java's `Math.pow` may differ in the last bit,
//! which can move a price by a cent in rare cases. The reference's rate shapes (several
//! rates in turn) and occasional delayed events are not implemented: one rate, and
//! out-of-orderness by groups.

mod auction;
mod bid;
mod config;
mod java_random;
mod person;
mod streams;
mod strings;

pub use config::{
    AUCTION_PROPORTION, BID_PROPORTION, DEFAULT_BASE_TIME, FIRST_AUCTION_ID, FIRST_CATEGORY_ID,
    FIRST_PERSON_ID, GeneratorConfig, PERSON_PROPORTION, PROPORTION_DENOMINATOR,
};
pub use java_random::JavaRandom;
pub use streams::Streams;

use crate::error::ConfigError;
use crate::model::Event;

/// Makes the events of a stream from their numbers.
#[derive(Debug, Clone)]
pub struct Generator {
    config: GeneratorConfig,
}

impl Generator {
    /// A generator with `config`, once it passes [`GeneratorConfig::check`].
    pub fn new(config: GeneratorConfig) -> Result<Self, ConfigError> {
        config.check()?;
        Ok(Generator { config })
    }

    /// The settings.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// The `number`-th event of the stream (from 0).
    pub fn event(&self, number: u64) -> Event {
        let number = number as i64;
        let config = &self.config;
        let adjusted = config.adjusted_number(number);
        let timestamp = config.timestamp_for(adjusted);
        let id = config.first_event_id + adjusted;
        let mut random = JavaRandom::new(id);
        let kind = id % PROPORTION_DENOMINATOR;
        if kind < PERSON_PROPORTION {
            Event::Person(person::next_person(id, &mut random, timestamp, config))
        } else if kind < PERSON_PROPORTION + AUCTION_PROPORTION {
            Event::Auction(auction::next_auction(
                number,
                id,
                &mut random,
                timestamp,
                config,
            ))
        } else {
            Event::Bid(bid::next_bid(id, &mut random, timestamp, config))
        }
    }

    /// The first `count` events, in stream order.
    pub fn events(&self, count: u64) -> impl Iterator<Item = Event> + '_ {
        (0..count).map(|number| self.event(number))
    }

    /// The first `count` events split by type, each stream in stream order: what a
    /// source streamlet sends to each of its outlets.
    pub fn streams(&self, count: u64) -> Streams {
        let mut streams = Streams::default();
        for event in self.events(count) {
            streams.push(event);
        }
        streams
    }

    /// A time no event from the `number`-th on is earlier than (the reference's watermark).
    pub fn watermark_for(&self, number: u64) -> i64 {
        self.config.watermark_for(number as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Auction, Bid, Person};

    fn generator(config: GeneratorConfig) -> Generator {
        Generator::new(config).expect("a valid config")
    }

    #[test]
    fn every_fifty_events_hold_one_person_three_auctions_and_forty_six_bids() {
        let events: Vec<Event> = generator(GeneratorConfig::default())
            .events(5_000)
            .collect();
        let persons: Vec<&Person> = events
            .iter()
            .filter_map(|e| match e {
                Event::Person(p) => Some(p),
                _ => None,
            })
            .collect();
        let auctions: Vec<&Auction> = events
            .iter()
            .filter_map(|e| match e {
                Event::Auction(a) => Some(a),
                _ => None,
            })
            .collect();
        let bids = events.iter().filter(|e| matches!(e, Event::Bid(_))).count();
        assert_eq!((persons.len(), auctions.len(), bids), (100, 300, 4_600));
        // Ids are consecutive from 1000, in order of creation.
        assert!(persons.iter().zip(1_000..).all(|(p, id)| p.id == id));
        assert!(auctions.iter().zip(1_000..).all(|(a, id)| a.id == id));
        assert!(matches!(events[1], Event::Auction(_)) && matches!(events[4], Event::Bid(_)));
    }

    #[test]
    fn events_depend_only_on_their_number() {
        let first = generator(GeneratorConfig::default());
        let again = generator(GeneratorConfig::default());
        for number in [0, 1, 2, 3, 4, 49, 50, 777, 123_456] {
            assert_eq!(first.event(number), again.event(number));
        }
        assert_ne!(first.event(5), first.event(6));
    }

    #[test]
    fn in_order_times_advance_by_the_rate() {
        let config = GeneratorConfig {
            events_per_second: 1_000,
            ..GeneratorConfig::default()
        };
        let in_order = generator(config);
        let events = in_order.events(3_000);
        for (number, event) in events.enumerate() {
            assert_eq!(event.date_time(), DEFAULT_BASE_TIME + number as i64);
        }
        // The default rate, 10,000 per second: ten events per millisecond.
        let fast = generator(GeneratorConfig::default());
        assert_eq!(fast.event(25).date_time(), DEFAULT_BASE_TIME + 2);
    }

    #[test]
    fn out_of_order_groups_shuffle_events_within_the_group_only() {
        let config = GeneratorConfig {
            events_per_second: 1_000,
            out_of_order_group_size: 20,
            ..GeneratorConfig::default()
        };
        let shuffled = generator(config);
        let in_order = generator(GeneratorConfig {
            events_per_second: 1_000,
            ..GeneratorConfig::default()
        });
        let mut times: Vec<i64> = shuffled.events(1_000).map(|e| e.date_time()).collect();
        assert!(
            times.windows(2).any(|pair| pair[1] < pair[0]),
            "some are out of order"
        );
        for (group, chunk) in times.chunks(20).enumerate() {
            let watermark = shuffled.watermark_for(group as u64 * 20);
            assert!(
                chunk
                    .iter()
                    .all(|time| *time >= watermark && *time < watermark + 20)
            );
        }
        times.sort_unstable();
        let ordered: Vec<i64> = in_order.events(1_000).map(|e| e.date_time()).collect();
        assert_eq!(times, ordered, "the same events, in another order");
    }

    #[test]
    fn bids_and_auctions_name_persons_and_auctions_near_the_latest() {
        let events: Vec<Event> = generator(GeneratorConfig::default())
            .events(20_000)
            .collect();
        let (mut last_person, mut last_auction) = (999, 999);
        for event in &events {
            match event {
                Event::Person(p) => last_person = p.id,
                Event::Auction(a) => {
                    last_auction = a.id;
                    assert!(a.seller <= last_person + 10 && a.seller >= 1_000);
                    assert!((10..15).contains(&a.category));
                    assert!(a.expires > a.date_time && a.reserve > a.initial_bid);
                }
                Event::Bid(b @ Bid { .. }) => {
                    assert!(b.auction <= last_auction + 10 && b.auction >= last_auction - 110);
                    assert!(b.bidder <= last_person + 10 && b.price >= 100);
                }
            }
        }
    }

    /// Events 0, 50 (persons), 1, 52 (auctions), 4, 99 and 12345 (bids) with the default
    /// configuration, as printed by a Java program (OpenJDK 17) following the reference
    /// generator's definitions step by step with `java.util.Random`.
    #[test]
    fn events_are_the_reference_generators() {
        let generator = generator(GeneratorConfig::default());
        for (number, expected) in reference_events() {
            assert_eq!(generator.event(number), expected, "event {number}");
        }
    }

    fn reference_events() -> Vec<(u64, Event)> {
        vec![
        (
            0,
            Event::Person(Person {
                id: 1000,
                name: "Peter Jones".into(),
                email_address: "nhd@xcat.com".into(),
                credit_card: "7241 7320 9143 4888".into(),
                city: "Portland".into(),
                state: "WY".into(),
                date_time: 1704067200000,
                extra: "WN_HS_bnpkkiwhwana_L^`KZjdgsid`K]MLU[aaOH`ztxbulvlxtkn_ZZ^T\\mqgdjzvlkymsmfrhkfVYSXK_OY[aVYVKa\\X^]RO]OYguwiduWJNQLLaMLHOTaHY_J[YKWaUOSJN_VHWXZ]`SgbnjqeVVQ\\[[".into(),
            }),
        ),
        (
            50,
            Event::Person(Person {
                id: 1001,
                name: "Sarah Smith".into(),
                email_address: "f  y@yumv.com".into(),
                credit_card: "0892 2755 1923 0591".into(),
                city: "Los Angeles".into(),
                state: "ID".into(),
                date_time: 1704067200005,
                extra: "`RT]WInnxtneWPLPHOywusizasixbmVVHKO_Y_MOYPmoftdguqtxkyXPO_ZNYMaKVQ\\``OOXTNOWIKUOLIaWQN\\H[_cihasyNLOMHLVHKVRIznfdmdeqqvumRMZYKKNRJ[K^IIN`RJM`H[^^vbqrxduih".into(),
            }),
        ),
        (
            1,
            Event::Auction(Auction {
                id: 1000,
                item_name: "wkx mgee".into(),
                description: "eszpqxtdxrvwmmywkmogoahf".into(),
                initial_bid: 28873,
                reserve: 29448,
                date_time: 1704067200000,
                expires: 1704067200011,
                seller: 1000,
                category: 13,
                extra: "zcurskufssowmihzpmZHWQM^fnleramznyyqimoheaRSWV^OjtfjhgXRa`[PVHUOMTbrqqzjyztfwnhstxbu]\\V_XPldnjuo^^PJQMnwhlsenoniir^aNZI__IP[QLYPROSNW]HYP\\L]W^PTkfnbtwuqucwreikflftlgtebaurwml^RMRIPqevmpqsnxmcblfvpfeajfopsHS^U[Jzxwajo_W`RXa[XWI[`VXZOR^lghgmwHITMP[dbwdgtPQJYHLjnubcsjgszqvyzeoeqjcbaazmrqamxoxgrjh`L`]_Y^OQM]ItjxtuwZJS[RTmrkpofsnuysxuvwbuzrqkrkkqpiz".into(),
            }),
        ),
        (
            52,
            Event::Auction(Auction {
                id: 1004,
                item_name: "xjlfszqka".into(),
                description: "rpxbjxpfncaxzsxi mb adejjfgpgmid myvpsualgtjbn psyyfmcermgfoqainkvdtrrvi".into(),
                initial_bid: 614534,
                reserve: 1167108,
                date_time: 1704067200005,
                expires: 1704067200159,
                seller: 1000,
                category: 14,
                extra: "lncqzuI`XHZL\\YaZZTN^\\PNQsvszgmoonejeIMV`TSQQIVPNsilhsztmzywgupcqcoslloftjfceaimstgumwakfqwohvtmlaI\\aYM`VRM]PofrfxrXV^O[JW`WSZNcxxwafrsgtwxfvnmjlattjhv]PWT`PeoywukYPVY\\HWPSMZYa[aZS]`Z^UHOJYSQSPS_IPJa^[^KUMNHUaNRX^\\NTH]][PJ_aPaHY`ZLVPTIzebbwhZO]RWatvqmjgQWM]ULzokhpd]NLaQVajwfheZ]OVU^gtrlxbureugvaWZTJVeceoiasmkqxjsudlrtjzs".into(),
            }),
        ),
        (
            4,
            Event::Bid(Bid {
                auction: 1000,
                bidder: 1001,
                price: 32530001,
                date_time: 1704067200000,
                extra: "fdiysaV^]NLVsbolvyqwgticfdrwdyiyofziYMU\\Z`UaTQO][NX\\RM]WPYTOuwogvszlxjrcNOORM".into(),
            }),
        ),
        (
            99,
            Event::Bid(Bid {
                auction: 1000,
                bidder: 1001,
                price: 12121,
                date_time: 1704067200009,
                extra: "pdmpolYYPQ`KZKW`KQSHQPa[wuukguzcrnmpSQJ[NUfbduku^TJS[UZ]JM`aty".into(),
            }),
        ),
        (
            12345,
            Event::Bid(Bid {
                auction: 1710,
                bidder: 1201,
                price: 31819124,
                date_time: 1704067201234,
                extra: "blklaoshpsbtfxwpdhubxcumcctffwU[HZY]qcsizf`ZJO^\\`HJKMayknk".into(),
            }),
        ),
        ]
    }

    #[test]
    fn invalid_settings_are_refused_with_their_name() {
        let error = Generator::new(GeneratorConfig {
            out_of_order_group_size: 0,
            ..GeneratorConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "nexmark generator setting 'out-of-order-group-size' must be at least 1, was 0"
        );
    }
}
