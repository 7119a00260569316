//! [`Tracked`]: a query's state by key (a join side's rows, an aggregate's groups) that
//! notes which keys changed, so a checkpoint writes only those to the changelog: each as one
//! entry, its key the state's prefix and the key as JSON, its value the key's state as JSON
//! (or a deletion, for a key that is gone).

use std::collections::{HashMap, HashSet};

use runnel_streamlet::checkpoint::ChangelogEntriesBuilder;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::value::Value;

/// State by key, and the keys changed since the changes were last taken.
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    transparent,
    bound(serialize = "V: Serialize", deserialize = "V: DeserializeOwned")
)]
pub(crate) struct Tracked<V> {
    #[serde(with = "crate::pairs")]
    entries: HashMap<Vec<Value>, V>,
    #[serde(skip)]
    changed: HashSet<Vec<Value>>,
}

impl<V> Default for Tracked<V> {
    fn default() -> Self {
        Tracked {
            entries: HashMap::new(),
            changed: HashSet::new(),
        }
    }
}

impl<V: Serialize + DeserializeOwned> Tracked<V> {
    /// The state of `key`, if it has one.
    pub(crate) fn get(&self, key: &[Value]) -> Option<&V> {
        self.entries.get(key)
    }

    /// The state of `key` to change, made with `create` if it has none; the key is noted
    /// changed.
    pub(crate) fn change(&mut self, key: &[Value], create: impl FnOnce() -> V) -> &mut V {
        self.note(key);
        if !self.entries.contains_key(key) {
            self.entries.insert(key.to_vec(), create());
        }
        self.entries.get_mut(key).expect("inserted above")
    }

    /// The state of `key` to change, if it has one; the key is noted changed if so.
    pub(crate) fn change_existing(&mut self, key: &[Value]) -> Option<&mut V> {
        if self.entries.contains_key(key) {
            self.note(key);
        }
        self.entries.get_mut(key)
    }

    /// Forgets the state of `key`.
    pub(crate) fn remove(&mut self, key: &[Value]) {
        if self.entries.remove(key).is_some() {
            self.note(key);
        }
    }

    /// Keeps what `keep` leaves of each key's state (it says whether the state is still
    /// needed, and whether it changed).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> Kept) {
        let changed = &mut self.changed;
        self.entries.retain(|key, state| {
            let kept = keep(state);
            if kept != Kept::Unchanged && !changed.contains(key) {
                changed.insert(key.clone());
            }
            kept != Kept::Gone
        });
    }

    /// How many keys have a state.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every key's state.
    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values()
    }

    fn note(&mut self, key: &[Value]) {
        if !self.changed.contains(key) {
            self.changed.insert(key.to_vec());
        }
    }

    /// Appends an entry per key changed since the last call (per key, for a `snapshot`),
    /// each key after `prefix`; returns how many.
    pub(crate) fn take_changes(
        &mut self,
        prefix: &[u8],
        snapshot: bool,
        entries: &mut ChangelogEntriesBuilder,
    ) -> u64 {
        let mut key_bytes = Vec::new();
        let mut value = Vec::new();
        let mut write = |key: &Vec<Value>, state: Option<&V>| {
            key_bytes.clear();
            key_bytes.extend_from_slice(prefix);
            serde_json::to_writer(&mut key_bytes, key).expect("keys serialize");
            match state {
                Some(state) => {
                    value.clear();
                    serde_json::to_writer(&mut value, state).expect("the state serializes");
                    entries.value(&key_bytes, value.len(), |buffer| {
                        buffer.extend_from_slice(&value);
                    });
                }
                None => entries.deleted(&key_bytes),
            }
        };
        let written;
        if snapshot {
            self.changed.clear();
            for (key, state) in &self.entries {
                write(key, Some(state));
            }
            written = self.entries.len();
        } else {
            written = self.changed.len();
            for key in self.changed.drain() {
                write(&key, self.entries.get(&key));
            }
        }
        written as u64
    }

    /// Applies an entry read back (its key without the prefix): `None` deletes. Returns
    /// whether the entry is one of this state's.
    pub(crate) fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        let Ok(key) = serde_json::from_slice::<Vec<Value>>(key) else {
            return false;
        };
        match value {
            None => {
                self.entries.remove(&key);
            }
            Some(value) => {
                let Ok(state) = serde_json::from_slice::<V>(value) else {
                    return false;
                };
                self.entries.insert(key, state);
            }
        }
        true
    }

    /// Notes the key an entry read back names (without the prefix) as changed, so the next
    /// changes write it as the state has it.
    pub(crate) fn mark_changed(&mut self, key: &[u8]) {
        if let Ok(key) = serde_json::from_slice::<Vec<Value>>(key) {
            self.changed.insert(key);
        }
    }
}

/// What [`Tracked::retain`] leaves of a key's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// As it was.
    Unchanged,
    /// Changed, and still needed.
    Changed,
    /// Nothing: the key is forgotten.
    Gone,
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_streamlet::checkpoint::ReplayTarget;

    /// A tracked state as a replay target, for the test.
    struct Target(Tracked<i64>);

    impl ReplayTarget for Target {
        fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
            self.0.apply(&key[1..], value)
        }
        fn mark_changed(&mut self, key: &[u8]) {
            self.0.mark_changed(&key[1..]);
        }
        fn held_entries(&self) -> u64 {
            self.0.len() as u64
        }
    }

    #[test]
    fn changes_write_the_keys_changed_and_replay_into_the_same_state() {
        let key = |n: i64| vec![Value::Integer(n)];
        let mut state: Tracked<i64> = Tracked::default();
        *state.change(&key(1), || 0) += 5;
        *state.change(&key(2), || 0) += 7;
        let mut first = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut first), 2);
        *state.change_existing(&key(1)).unwrap() += 1;
        state.remove(&key(2));
        state.retain(|_| Kept::Unchanged);
        let mut second = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut second), 2);
        let mut none = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut none), 0);

        let mut restored = Target(Tracked::default());
        for entries in [first.finish(), second.finish()] {
            for entry in entries.iter() {
                let (key, value) = entry.unwrap();
                assert!(restored.apply(key, value));
            }
        }
        assert_eq!(restored.0.get(&key(1)), Some(&6));
        assert_eq!(restored.0.get(&key(2)), None);
        assert_eq!(restored.held_entries(), 1);
        let mut snapshot = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", true, &mut snapshot), 1);
    }
}
