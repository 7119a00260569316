//! [`MapState`]: a map per key, each of its entries stored (and changelogged) on its own.

use std::marker::PhantomData;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::KeyedEntry;
use super::declared::Declared;
use super::decoders::{DeclaredState, StateDeclaration, StateDecoder};
use crate::{Result, StateError};

/// A map per key, declared once as a constant. Each map entry is a store entry of its own,
/// so changing one writes only that entry to the changelog, however large the map.
///
/// ```
/// use runnel_state::MapState;
/// /// Per card: how often each merchant was paid.
/// const MERCHANTS: MapState<String, u32> = MapState::new("merchants");
/// assert_eq!(MERCHANTS.name(), "merchants");
/// ```
#[derive(Debug)]
pub struct MapState<K, V> {
    declared: Declared,
    _type: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for MapState<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V> Copy for MapState<K, V> {}

impl<K, V> MapState<K, V> {
    /// A map state called `name` (at most 255 bytes, unique among the streamlet's states).
    pub const fn new(name: &'static str) -> Self {
        MapState {
            declared: Declared::new(name),
            _type: PhantomData,
        }
    }

    /// Each map entry expires `ttl` after it was last written (processing time).
    pub const fn expire_after(mut self, ttl: Duration) -> Self {
        self.declared = self.declared.expire_after(ttl);
        self
    }

    /// The state's name.
    pub const fn name(&self) -> &'static str {
        self.declared.name
    }
}

impl<K, V> DeclaredState for MapState<K, V>
where
    K: Serialize + DeserializeOwned,
    V: Serialize + DeserializeOwned,
{
    fn declaration(&self) -> StateDeclaration {
        StateDeclaration(StateDecoder::map::<K, V>(self.name()))
    }
}

/// The map of one key in a [`MapState`]; from [`KeyedEntry::map`].
#[derive(Debug)]
pub struct MapRef<'e, 'a, K, V> {
    entry: &'e mut KeyedEntry<'a>,
    state: MapState<K, V>,
    /// The store key prefix of the map's entries.
    prefix: Vec<u8>,
}

impl<'e, 'a, K, V> MapRef<'e, 'a, K, V>
where
    K: Serialize + DeserializeOwned,
    V: Serialize + DeserializeOwned,
{
    pub(super) fn new(
        entry: &'e mut KeyedEntry<'a>,
        state: MapState<K, V>,
        prefix: Vec<u8>,
    ) -> Self {
        MapRef {
            entry,
            state,
            prefix,
        }
    }

    fn entry_key(&self, key: &K) -> Result<Vec<u8>> {
        let mut entry_key = self.prefix.clone();
        entry_key.extend(self.entry.encode(self.state.declared.name, key)?);
        Ok(entry_key)
    }

    /// The value at `key`.
    ///
    /// # Errors
    ///
    /// When `key` does not serialize or the stored value does not decode.
    pub fn get(&self, key: &K) -> Result<Option<V>> {
        let entry_key = self.entry_key(key)?;
        match self.entry.store.get(&entry_key, self.entry.now) {
            Some(bytes) => self.entry.decode(self.state.declared.name, bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Sets the value at `key`.
    ///
    /// # Errors
    ///
    /// When `key` or `value` does not serialize.
    pub fn insert(&mut self, key: &K, value: &V) -> Result<()> {
        let entry_key = self.entry_key(key)?;
        let bytes = self.entry.encode(self.state.declared.name, value)?;
        let expires = self.entry.expiry(self.state.declared.ttl);
        self.entry.store.put(&entry_key, bytes, expires);
        Ok(())
    }

    /// Deletes the value at `key`.
    ///
    /// # Errors
    ///
    /// When `key` does not serialize.
    pub fn remove(&mut self, key: &K) -> Result<()> {
        let entry_key = self.entry_key(key)?;
        self.entry.store.delete(&entry_key);
        Ok(())
    }

    /// Every entry of the map, in no particular order.
    ///
    /// # Errors
    ///
    /// When a stored key or value does not decode.
    pub fn entries(&self) -> Result<Vec<(K, V)>> {
        let mut entries = Vec::new();
        for (key, value) in self.entry.store.scan(&self.prefix, self.entry.now) {
            let key_bytes =
                key.get(self.prefix.len()..)
                    .ok_or_else(|| StateError::TruncatedMapKey {
                        state: self.state.declared.name.to_owned(),
                    })?;
            entries.push((
                self.entry.decode(self.state.declared.name, key_bytes)?,
                self.entry.decode(self.state.declared.name, value)?,
            ));
        }
        Ok(entries)
    }

    /// Deletes every entry of the map.
    pub fn clear(&mut self) {
        self.entry.store.delete_prefix(&self.prefix);
    }
}
