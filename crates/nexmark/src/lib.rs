//! The Nexmark benchmark on Runnel.
//!
//! Nexmark models an online auction: [`model::Person`]s register, put items up for
//! [`model::Auction`] and place [`model::Bid`]s, in a fixed mix of 1 person, 3 auctions and
//! 46 bids per 50 events. The crate holds
//!
//! - [`generator`]: the reference generator (Apache Beam's, which Flink's Nexmark uses too)
//!   as a function from event number to event, so every engine can produce the same stream;
//! - [`source`]: the generator as a source streamlet with one outlet per event type, rate,
//!   count and out-of-orderness as parameters;
//! - [`events_file`] and [`reader`]: the events as JSON lines (Flink's Nexmark layout), and
//!   a source streamlet reading them, for side-by-side runs with engines that read a file;
//! - [`queries`]: the Nexmark queries as streamlets, each a file;
//! - [`two_inputs`]: the streamlet the joins (q3, q8, q9) share: two inlets, one watermark;
//! - [`exactly_once`]: each query again with exactly-once delivery (`<query>-exactly-once`);
//! - [`app`]: the app binary's streamlet registry; `blueprints/` has one blueprint per query.
//!
//! Guide: `docs/nexmark.md`.

pub mod app;
pub mod error;
pub mod events_file;
pub mod exactly_once;
pub mod generator;
pub mod model;
pub mod queries;
pub mod reader;
pub mod source;
pub mod two_inputs;

pub use error::ConfigError;
