//! [`ValueState`]: one value per key.

use std::marker::PhantomData;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::KeyedEntry;
use super::declared::Declared;
use super::decoders::{DeclaredState, StateDeclaration, StateDecoder};
use crate::Result;

/// A value per key, declared once as a constant; values are stored in a compact binary
/// form of their serde representation.
///
/// ```
/// use runnel_state::ValueState;
/// use std::time::Duration;
///
/// /// Running count per card, forgotten an hour after its last update.
/// const COUNT: ValueState<u64> = ValueState::new("count").expire_after(Duration::from_secs(3600));
/// assert_eq!(COUNT.name(), "count");
/// ```
#[derive(Debug)]
pub struct ValueState<T> {
    declared: Declared,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for ValueState<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ValueState<T> {}

impl<T> ValueState<T> {
    /// A value state called `name` (at most 255 bytes, unique among the streamlet's states).
    pub const fn new(name: &'static str) -> Self {
        ValueState {
            declared: Declared::new(name),
            _type: PhantomData,
        }
    }

    /// Values expire `ttl` after they were last written (processing time): they read as
    /// absent from then on, and are deleted at the next checkpoint.
    pub const fn expire_after(mut self, ttl: Duration) -> Self {
        self.declared = self.declared.expire_after(ttl);
        self
    }

    /// The state's name.
    pub const fn name(&self) -> &'static str {
        self.declared.name
    }
}

impl<T: Serialize + DeserializeOwned> DeclaredState for ValueState<T> {
    fn declaration(&self) -> StateDeclaration {
        StateDeclaration(StateDecoder::value::<T>(self.name()))
    }
}

/// The value of one key in a [`ValueState`]; from [`KeyedEntry::value`].
#[derive(Debug)]
pub struct ValueRef<'e, 'a, T> {
    entry: &'e mut KeyedEntry<'a>,
    state: ValueState<T>,
    key: Vec<u8>,
}

impl<'e, 'a, T: Serialize + DeserializeOwned> ValueRef<'e, 'a, T> {
    pub(super) fn new(entry: &'e mut KeyedEntry<'a>, state: ValueState<T>, key: Vec<u8>) -> Self {
        ValueRef { entry, state, key }
    }

    /// The value; `None` when it was never set, was cleared or expired.
    ///
    /// # Errors
    ///
    /// When the stored bytes do not decode as `T`.
    pub fn get(&self) -> Result<Option<T>> {
        let now = self.entry.now;
        match self.entry.store.get(&self.key, now) {
            Some(bytes) => self.entry.decode(self.state.declared.name, bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Sets the value.
    ///
    /// # Errors
    ///
    /// When `value` does not serialize.
    pub fn set(&mut self, value: &T) -> Result<()> {
        let bytes = self.entry.encode(self.state.declared.name, value)?;
        let expires = self.entry.expiry(self.state.declared.ttl);
        self.entry.store.put(&self.key, bytes, expires);
        Ok(())
    }

    /// Sets the value to what `update` makes of the current one (`None` when unset), and
    /// returns it.
    ///
    /// # Errors
    ///
    /// When the stored value does not decode or the new one does not serialize.
    pub fn update(&mut self, update: impl FnOnce(Option<T>) -> T) -> Result<T> {
        let value = update(self.get()?);
        self.set(&value)?;
        Ok(value)
    }

    /// Deletes the value.
    pub fn clear(&mut self) {
        self.entry.store.delete(&self.key);
    }
}
