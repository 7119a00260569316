//! Events as JSON lines in the layout of Flink's Nexmark `datagen` table, so other engines
//! can read exactly the events the generator makes: one object per line with `event_type`
//! (0 person, 1 auction, 2 bid) and the event under `person`, `auction` or `bid`.
//!
//! ```
//! use runnel_nexmark::events_file::{EventLine, write_events};
//! use runnel_nexmark::generator::{Generator, GeneratorConfig};
//!
//! let generator = Generator::new(GeneratorConfig::default()).unwrap();
//! let mut file = Vec::new();
//! write_events(&generator, 50, &mut file).unwrap();
//! let text = String::from_utf8(file).unwrap();
//! let first = text.lines().next().unwrap();
//! assert!(first.starts_with(r#"{"event_type":0,"person":{"id":1000,"#), "{first}");
//! let event = EventLine::parse(first, 1).unwrap();
//! assert_eq!(event, generator.event(0));
//! ```

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::generator::Generator;
use crate::model::{Auction, Bid, Event, Person};

/// One line of an events file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventLine {
    /// 0 for a person, 1 for an auction, 2 for a bid.
    pub event_type: u8,
    /// The person, for `event_type` 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<Person>,
    /// The auction, for `event_type` 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auction: Option<Auction>,
    /// The bid, for `event_type` 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bid: Option<Bid>,
}

/// A line of an events file that is not an event.
#[derive(Debug, thiserror::Error)]
pub enum EventLineError {
    /// The line is not JSON of an [`EventLine`].
    #[error("line {line} of the events file is not an event: {source}")]
    Json {
        /// The line number, from 1.
        line: u64,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// `event_type` names no event the line carries.
    #[error(
        "line {line} of the events file has event_type {event_type} without the event it names (0 person, 1 auction, 2 bid)"
    )]
    Missing {
        /// The line number, from 1.
        line: u64,
        /// The event type it gives.
        event_type: u8,
    },
}

impl EventLine {
    /// The line of `event`.
    pub fn of(event: &Event) -> Self {
        match event {
            Event::Person(person) => EventLine {
                event_type: 0,
                person: Some(person.clone()),
                auction: None,
                bid: None,
            },
            Event::Auction(auction) => EventLine {
                event_type: 1,
                person: None,
                auction: Some(auction.clone()),
                bid: None,
            },
            Event::Bid(bid) => EventLine {
                event_type: 2,
                person: None,
                auction: None,
                bid: Some(bid.clone()),
            },
        }
    }

    /// The event on line number `line` (from 1, for the error), whose text is `text`.
    ///
    /// # Errors
    ///
    /// When the text is not an event line, naming the line.
    pub fn parse(text: &str, line: u64) -> Result<Event, EventLineError> {
        let parsed: EventLine =
            serde_json::from_str(text).map_err(|source| EventLineError::Json { line, source })?;
        let event_type = parsed.event_type;
        match parsed {
            EventLine {
                event_type: 0,
                person: Some(person),
                ..
            } => Ok(Event::Person(person)),
            EventLine {
                event_type: 1,
                auction: Some(auction),
                ..
            } => Ok(Event::Auction(auction)),
            EventLine {
                event_type: 2,
                bid: Some(bid),
                ..
            } => Ok(Event::Bid(bid)),
            _ => Err(EventLineError::Missing { line, event_type }),
        }
    }
}

/// Writes events `0..count` of `generator` to `out`, a line each.
///
/// # Errors
///
/// When writing fails.
pub fn write_events(generator: &Generator, count: u64, out: &mut impl Write) -> io::Result<()> {
    for event in generator.events(count) {
        serde_json::to_writer(&mut *out, &EventLine::of(&event))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
