//! The state of Runnel's stateful streamlets, kept on the log: checkpoint records
//! ([`checkpoint`]) and keyed state, the per-key values, lists, maps and timers a streamlet
//! keeps by input partition ([`ValueState`], [`ListState`], [`MapState`], [`Timer`]).
//!
//! The keyed state of one input partition lives in one in-memory [`store::PartitionStore`].
//! Every checkpoint interval the entries changed since the last checkpoint go to that
//! partition of the instance's changelog topic, then a checkpoint record names the changelog
//! ranges that make up the state; [`changelog::replay`] reads a partition's state back,
//! [`standby::Standbys`] keep warm copies of partitions other members own, and
//! [`StateQueries`] answer reads of a key's state from outside while the streamlet runs.
//!
//! This crate holds the state and its log format, and nothing that reads an inlet:
//! `runnel-streamlet`'s `KeyedState` drives it (restoring a partition when its first message
//! arrives, firing timers, checkpointing), and authors reach everything here through
//! `runnel::state`. `docs/state.md` is the guide.
//!
//! Where to begin: [`KeyedEntry`] for what a streamlet reads and writes, [`store`] for how it
//! is held, [`checkpoint`] for the records.
//!
//! ```
//! use runnel_state::{ListState, MapState, ValueState};
//!
//! /// Per card: the running total, the last ten amounts, and spend per merchant.
//! const TOTAL: ValueState<i64> = ValueState::new("total");
//! const RECENT: ListState<i64> = ListState::new("recent");
//! const BY_MERCHANT: MapState<String, i64> = MapState::new("by-merchant");
//! assert_eq!((TOTAL.name(), RECENT.name(), BY_MERCHANT.name()), ("total", "recent", "by-merchant"));
//! ```
#![deny(missing_docs)]

pub mod changelog;
pub mod checkpoint;
mod declared;
mod decoders;
mod entry;
mod error;
pub mod freeing;
mod list;
mod map;
pub mod query;
pub mod standby;
pub mod store;
mod stored_key;
mod stored_value;
pub mod timers;
mod value;

use runnel_event_time::changelog_entries;

pub use decoders::{DeclaredState, StateDeclaration, StateDecoders};
pub use entry::KeyedEntry;
pub use error::StateError;
pub use list::{ListRef, ListState};
pub use map::{MapRef, MapState};
pub use query::{KeyState, PendingTimer, QueryError, StateEntry, StateQueries, StateSize};
pub use timers::{TimeDomain, Timer};
pub use value::{ValueRef, ValueState};

/// The result of reading or changing state.
pub type Result<T, E = StateError> = std::result::Result<T, E>;
