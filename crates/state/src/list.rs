//! [`ListState`]: a list of values per key.

use std::marker::PhantomData;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::KeyedEntry;
use super::declared::Declared;
use super::decoders::{DeclaredState, StateDeclaration, StateDecoder};
use crate::Result;

/// A list of values per key, declared once as a constant. A key's list is stored (and
/// written to the changelog when it changes) as one entry, so keep lists short: recent
/// values, not a history.
///
/// ```
/// use runnel_state::ListState;
/// /// The last amounts seen per card.
/// const RECENT: ListState<f64> = ListState::new("recent");
/// assert_eq!(RECENT.name(), "recent");
/// ```
#[derive(Debug)]
pub struct ListState<T> {
    declared: Declared,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for ListState<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ListState<T> {}

impl<T> ListState<T> {
    /// A list state called `name` (at most 255 bytes, unique among the streamlet's states).
    pub const fn new(name: &'static str) -> Self {
        ListState {
            declared: Declared::new(name),
            _type: PhantomData,
        }
    }

    /// A key's list expires `ttl` after it was last changed (processing time).
    pub const fn expire_after(mut self, ttl: Duration) -> Self {
        self.declared = self.declared.expire_after(ttl);
        self
    }

    /// The state's name.
    pub const fn name(&self) -> &'static str {
        self.declared.name
    }
}

impl<T: Serialize + DeserializeOwned> DeclaredState for ListState<T> {
    fn declaration(&self) -> StateDeclaration {
        StateDeclaration(StateDecoder::list::<T>(self.name()))
    }
}

/// The list of one key in a [`ListState`]; from [`KeyedEntry::list`].
#[derive(Debug)]
pub struct ListRef<'e, 'a, T> {
    entry: &'e mut KeyedEntry<'a>,
    state: ListState<T>,
    key: Vec<u8>,
}

impl<'e, 'a, T: Serialize + DeserializeOwned> ListRef<'e, 'a, T> {
    pub(super) fn new(entry: &'e mut KeyedEntry<'a>, state: ListState<T>, key: Vec<u8>) -> Self {
        ListRef { entry, state, key }
    }

    /// The list; empty when it was never added to, was cleared or expired.
    ///
    /// # Errors
    ///
    /// When the stored bytes do not decode as a list of `T`.
    pub fn get(&self) -> Result<Vec<T>> {
        let now = self.entry.now;
        match self.entry.store.get(&self.key, now) {
            Some(bytes) => self.entry.decode(self.state.declared.name, bytes),
            None => Ok(Vec::new()),
        }
    }

    /// Appends `value`.
    ///
    /// # Errors
    ///
    /// When the stored list does not decode or the new one does not serialize.
    pub fn push(&mut self, value: T) -> Result<()> {
        let mut list = self.get()?;
        list.push(value);
        self.set(&list)
    }

    /// Replaces the list (an empty one deletes it).
    ///
    /// # Errors
    ///
    /// When `list` does not serialize.
    pub fn set(&mut self, list: &[T]) -> Result<()> {
        if list.is_empty() {
            self.clear();
            return Ok(());
        }
        let bytes = self.entry.encode(self.state.declared.name, &list)?;
        let expires = self.entry.expiry(self.state.declared.ttl);
        self.entry.store.put(&self.key, bytes, expires);
        Ok(())
    }

    /// Deletes the list.
    pub fn clear(&mut self) {
        self.entry.store.delete(&self.key);
    }
}
