//! Keyed state for custom streamlets: [`ValueState`], [`ListState`] and [`MapState`] per
//! key, and [`Timer`]s in event and processing time, kept by input partition and
//! checkpointed incrementally.
//!
//! A streamlet whose [`Shape`](crate::Shape) says
//! [`keyed_state`](crate::Shape::keyed_state) gets a [`KeyedState`] from
//! [`Context::keyed_state`](crate::Context::keyed_state) and reads its inlet through it.
//! The state of the keys arriving on input partition `p` lives in one in-memory store
//! ([`KeyedState::entry`] reaches a key's values), so each member of the consumer group
//! holds the partitions assigned to it and the streamlet scales out to the input's
//! partition count.
//!
//! Checkpoints are incremental: every checkpoint interval the entries changed since the last
//! checkpoint go to partition `p` of the changelog topic `<app>.<instance>.changelog`, then a
//! checkpoint record with the input offsets and the changelog ranges that make up the state
//! goes to partition `p` of the checkpoint topic (the mechanism of [`checkpoint`](crate::checkpoint)).
//! When the changes since the last snapshot outgrow twice the state, a checkpoint writes the
//! whole state instead, so a restore reads at most a few times the state. Exactly-once
//! instances write all of it in the checkpoint's transaction.
//!
//! While it runs, the state of a key can be read from outside: the runtime asks through
//! the instance's [`StateQueries`], and [`KeyedState::next`] answers between messages with
//! a [`KeyState`] (the admin endpoint's `/api/state/{instance}`, `runnel state get`).
//!
//! The store, its changelog, queries and standbys are `runnel-state`; this module adds
//! [`KeyedState`], which reads an inlet through them. Start at [`KeyedState`];
//! `docs/state.md` is the guide.

mod keyed;

pub use keyed::{Keyed, KeyedState};
pub use runnel_state::{
    DeclaredState, KeyState, KeyedEntry, ListRef, ListState, MapRef, MapState, PendingTimer,
    QueryError, StateDeclaration, StateEntry, StateError, StateQueries, StateSize, TimeDomain,
    Timer, ValueRef, ValueState,
};
