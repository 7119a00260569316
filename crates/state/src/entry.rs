//! [`KeyedEntry`]: the state of one key, and how state names and keys are laid out in the
//! store.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::decoders::StateDecoders;
use super::store::PartitionStore;
use super::timers::{TimeDomain, timer_key};
use super::{ListRef, ListState, MapRef, MapState, ValueRef, ValueState};
use crate::{Result, StateError};

/// The state of one key on one input partition: its values, lists, maps and timers.
///
/// Get it from `KeyedState::entry` with the partition of the
/// message (or timer) being handled and the key the state is kept by.
#[derive(Debug)]
pub struct KeyedEntry<'a> {
    pub(super) store: &'a mut PartitionStore,
    pub(super) partition: u32,
    pub(super) key: Vec<u8>,
    /// Processing time, for time to live.
    pub(super) now: i64,
    /// The states used so far, which queries show.
    pub(super) decoders: &'a mut StateDecoders,
}

impl<'a> KeyedEntry<'a> {
    /// The state of `key` on input `partition`, held in `store`, at processing time `now`
    /// (milliseconds since the epoch, for time to live); the states it uses are noted in
    /// `decoders` for queries. For what drives keyed state (`KeyedState::entry` in
    /// `runnel::state`); a streamlet gets its entries from there.
    pub fn new(
        store: &'a mut PartitionStore,
        partition: u32,
        key: Vec<u8>,
        now: i64,
        decoders: &'a mut StateDecoders,
    ) -> Self {
        KeyedEntry {
            store,
            partition,
            key,
            now,
            decoders,
        }
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The input partition the key's state is kept in.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The key's value in `state`.
    pub fn value<T: Serialize + DeserializeOwned>(
        &mut self,
        state: ValueState<T>,
    ) -> ValueRef<'_, 'a, T> {
        self.decoders.value::<T>(state.name());
        let key = self.composite(b'v', state.name(), &[]);
        ValueRef::new(self, state, key)
    }

    /// The key's list in `state`.
    pub fn list<T: Serialize + DeserializeOwned>(
        &mut self,
        state: ListState<T>,
    ) -> ListRef<'_, 'a, T> {
        self.decoders.list::<T>(state.name());
        let key = self.composite(b'l', state.name(), &[]);
        ListRef::new(self, state, key)
    }

    /// The key's map in `state`.
    pub fn map<K, V>(&mut self, state: MapState<K, V>) -> MapRef<'_, 'a, K, V>
    where
        K: Serialize + DeserializeOwned,
        V: Serialize + DeserializeOwned,
    {
        self.decoders.map::<K, V>(state.name());
        let key = self.composite(b'm', state.name(), &(self.key.len() as u32).to_be_bytes());
        MapRef::new(self, state, key)
    }

    /// Sets a timer for the key at `time`: it fires (as
    /// `Keyed::Timer` from `KeyedState::next`)
    /// once the partition's watermark (event time) or the clock (processing time) reaches
    /// `time`. A key has at most one timer per domain and time; setting it again does
    /// nothing more.
    pub fn set_timer(&mut self, domain: TimeDomain, time: i64) {
        let key = timer_key(domain, time, &self.key);
        self.store.put(&key, Vec::new(), None);
    }

    /// Deletes the key's timer at `time`, if set.
    pub fn delete_timer(&mut self, domain: TimeDomain, time: i64) {
        let key = timer_key(domain, time, &self.key);
        self.store.delete(&key);
    }

    /// The store key of this key's entry in state `name` of `kind`: the kind, the name
    /// (length first), `infix`, then the key.
    fn composite(&self, kind: u8, name: &str, infix: &[u8]) -> Vec<u8> {
        composite_key(kind, name, infix, &self.key)
    }

    /// The expiry of an entry written now with time to live `ttl`.
    pub(super) fn expiry(&self, ttl: Option<std::time::Duration>) -> Option<i64> {
        ttl.map(|ttl| {
            self.now
                .saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
        })
    }

    /// Encodes a value of state `name`.
    pub(super) fn encode<T: Serialize>(&self, name: &str, value: &T) -> Result<Vec<u8>> {
        postcard::to_allocvec(value).map_err(|source| StateError::Encode {
            state: name.to_owned(),
            key: describe_key(&self.key),
            partition: self.partition,
            source,
        })
    }

    /// Decodes a value of state `name`.
    pub(super) fn decode<T: DeserializeOwned>(&self, name: &str, bytes: &[u8]) -> Result<T> {
        postcard::from_bytes(bytes).map_err(|source| StateError::Decode {
            state: name.to_owned(),
            key: describe_key(&self.key),
            partition: self.partition,
            source,
        })
    }
}

/// The store key of `key`'s entry in state `name` of `kind`: the kind, the name (length
/// first), `infix`, then the key.
pub(super) fn composite_key(kind: u8, name: &str, infix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(2 + name.len() + infix.len() + key.len());
    stored.push(kind);
    stored.push(name.len() as u8);
    stored.extend_from_slice(name.as_bytes());
    stored.extend_from_slice(infix);
    stored.extend_from_slice(key);
    stored
}

/// A key as text when it is printable UTF-8, otherwise as hexadecimal.
pub(super) fn describe_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) if !text.chars().any(char::is_control) => format!("'{text}'"),
        _ => {
            let hex: String = key.iter().map(|byte| format!("{byte:02x}")).collect();
            format!("0x{hex}")
        }
    }
}
