//! [`TrackedMap`]: state by key that notes which keys changed, so a checkpoint writes only
//! those to the changelog: each as one entry, its key a prefix and the key as JSON, its
//! value the key's state in [postcard](https://postcard.jamesmunns.com/) after a format
//! byte (or a deletion, for a key that is gone).
//!
//! States are binary because a checkpoint writes every changed key's state again: as JSON,
//! escaping the text of a SQL join's kept rows took more instructions than the query's own
//! work. Keys stay JSON, so a key is the same bytes in the entries written before and
//! after, and values written as JSON before still read back.
//!
//! A streamlet whose whole state is a few such maps (a join's two sides, an aggregate's
//! groups) checkpoints in time and bytes proportional to what changed, and no record holds
//! the whole state, so the state may outgrow the log's largest record.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::changelog_entries::ChangelogEntriesBuilder;

/// State by key, and the keys changed since the changes were last taken.
///
/// ```
/// use runnel_event_time::changelog_entries::ChangelogEntriesBuilder;
/// use runnel_event_time::tracked_map::TrackedMap;
///
/// let mut counts: TrackedMap<String, u64> = TrackedMap::default();
/// *counts.change("apple", || 0) += 1;
/// *counts.change("pear", || 0) += 1;
/// let mut entries = ChangelogEntriesBuilder::default();
/// assert_eq!(counts.take_changes(b"c", false, &mut entries), 2);
///
/// // Only what changed since goes to the next checkpoint.
/// *counts.change("apple", || 0) += 1;
/// let mut entries = ChangelogEntriesBuilder::default();
/// assert_eq!(counts.take_changes(b"c", false, &mut entries), 1);
/// let entries = entries.finish();
/// let (key, value) = entries.iter().next().unwrap().unwrap();
/// assert_eq!((key, value), (&b"c\"apple\""[..], Some(&[1, 2][..])));
///
/// // Read back into an empty map, the entries give the state.
/// let mut restored: TrackedMap<String, u64> = TrackedMap::default();
/// assert!(restored.apply(&key[1..], value));
/// assert_eq!(restored.get("apple"), Some(&2));
/// ```
#[derive(Debug)]
pub struct TrackedMap<K, V> {
    entries: HashTable<Slot<K, V>>,
    hasher: Hasher,
    /// The hashes of the keys changed since the changes were last taken, each once as long
    /// as its key keeps a state (its slot says it is listed). A key is not copied to be
    /// noted: a checkpoint finds it by its hash.
    changed: Vec<u64>,
    /// The keys forgotten since the changes were last taken, moved out of the map, each
    /// written as a deletion before the states of `changed` (a key forgotten and set again
    /// is written deleted, then with its state).
    deleted: Vec<K>,
}

/// The first byte of a state written in postcard: never the first byte of JSON text, which
/// states were written as before.
const POSTCARD: u8 = 1;

/// Postcard's output appended to a vector. `postcard::to_io` makes an `io::Write` call for
/// every byte and slice it writes: a q7 in SQL's checkpoints took 7% fewer instructions
/// without them.
struct Appended<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Appended<'_> {
    type Output = ();

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends `value` in postcard to `out`: what [`TrackedMap::take_changes`] writes each state
/// as, for a `write_state` of [`TrackedMap::take_changes_written`] that keeps serde's.
///
/// ```
/// let mut out = vec![1];
/// runnel_event_time::tracked_map::append_postcard(&(300u16, "a"), &mut out);
/// assert_eq!(out, [1, 0xac, 0x02, 1, b'a']);
/// ```
pub fn append_postcard<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    postcard::serialize_with_flavor(value, Appended(out)).expect("the state serializes");
}

/// Keys are hashed with foldhash, seeded per map: several times faster than the standard
/// library's SipHash on the short keys of a query's state, and still not predictable from
/// outside.
type Hasher = foldhash::fast::RandomState;

/// A key, its hash (so growing the table and finding a changed key hash nothing again), its
/// state, and whether the key is in the changed list.
#[derive(Debug)]
struct Slot<K, V> {
    hash: u64,
    key: K,
    state: V,
    listed: bool,
}

impl<K, V> Default for TrackedMap<K, V> {
    fn default() -> Self {
        TrackedMap {
            entries: HashTable::new(),
            hasher: Hasher::default(),
            changed: Vec::new(),
            deleted: Vec::new(),
        }
    }
}

/// What [`TrackedMap::retain`] leaves of a key's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// As it was.
    Unchanged,
    /// Changed, and still needed.
    Changed,
    /// Nothing: the key is forgotten.
    Gone,
}

/// Reads a state as [`TrackedMap::take_changes`] writes it (postcard after a format byte),
/// or as JSON, as states were written before: what [`TrackedMap::apply`] reads, for a
/// `read` of [`TrackedMap::apply_read`] that reads the same and keeps it otherwise.
///
/// ```
/// use runnel_event_time::tracked_map::read_state;
///
/// assert_eq!(read_state::<(u16, String)>(&[1, 0xac, 0x02, 1, b'a']), Some((300, "a".into())));
/// assert_eq!(read_state::<Vec<u8>>(b"[4,5]"), Some(vec![4, 5]));
/// ```
pub fn read_state<V: DeserializeOwned>(value: &[u8]) -> Option<V> {
    match value.split_first() {
        Some((&POSTCARD, state)) => postcard::from_bytes(state).ok(),
        _ => serde_json::from_slice(value).ok(),
    }
}

impl<K, V> TrackedMap<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
{
    /// The slot of `key`, if it has a state.
    fn slot<Q>(&self, key: &Q) -> Option<&Slot<K, V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.entries
            .find(hash, |slot| slot.hash == hash && slot.key.borrow() == key)
    }

    /// The state of `key`, if it has one.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.slot(key).map(|slot| &slot.state)
    }

    /// Whether `key` has a state.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.slot(key).is_some()
    }

    /// The state of `key` to change, made with `create` if it has none; the key is noted
    /// changed.
    pub fn change<Q>(&mut self, key: &Q, create: impl FnOnce() -> V) -> &mut V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // One lookup, the key copied only when it is new.
        let hash = self.hasher.hash_one(key);
        let entry = self.entries.entry(
            hash,
            |slot| slot.hash == hash && slot.key.borrow() == key,
            |slot| slot.hash,
        );
        let slot = match entry {
            Entry::Occupied(occupied) => occupied.into_mut(),
            Entry::Vacant(vacant) => vacant
                .insert(Slot {
                    hash,
                    key: key.to_owned(),
                    state: create(),
                    listed: false,
                })
                .into_mut(),
        };
        list(slot, &mut self.changed);
        &mut slot.state
    }

    /// The state of `key` to change, if it has one; the key is noted changed if so.
    pub fn change_existing<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let slot = self
            .entries
            .find_mut(hash, |slot| slot.hash == hash && slot.key.borrow() == key)?;
        list(slot, &mut self.changed);
        Some(&mut slot.state)
    }

    /// Sets the state of `key`, returning the one it replaces; the key is noted changed.
    pub fn insert(&mut self, key: K, state: V) -> Option<V> {
        let hash = self.hasher.hash_one(&key);
        let entry = self.entries.entry(
            hash,
            |slot| slot.hash == hash && slot.key == key,
            |slot| slot.hash,
        );
        let (slot, old) = match entry {
            Entry::Occupied(occupied) => {
                let slot = occupied.into_mut();
                let old = std::mem::replace(&mut slot.state, state);
                (slot, Some(old))
            }
            Entry::Vacant(vacant) => {
                let slot = Slot {
                    hash,
                    key,
                    state,
                    listed: false,
                };
                (vacant.insert(slot).into_mut(), None)
            }
        };
        list(slot, &mut self.changed);
        old
    }

    /// Forgets the state of `key`, returning it.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let found = self
            .entries
            .find_entry(hash, |slot| slot.hash == hash && slot.key.borrow() == key)
            .ok()?;
        let (slot, _) = found.remove();
        self.deleted.push(slot.key);
        Some(slot.state)
    }

    /// Keeps what `keep` leaves of each key's state (it says whether the state is still
    /// needed, and whether it changed).
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> Kept) {
        let changed = &mut self.changed;
        let gone = self.entries.extract_if(|slot| {
            let kept = keep(&slot.key, &mut slot.state);
            if kept == Kept::Changed {
                list(slot, changed);
            }
            kept == Kept::Gone
        });
        self.deleted.extend(gone.map(|slot| slot.key));
    }

    /// How many keys have a state.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key has a state.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every key with its state, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|slot| (&slot.key, &slot.state))
    }

    /// Every key's state, to change without noting the keys changed: only for changes a
    /// checkpoint does not see (where a state keeps its bytes elsewhere and they move).
    pub fn states_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|slot| &mut slot.state)
    }

    /// Appends an entry per key changed since the last call (per key, for a `snapshot`),
    /// each key after `prefix`; returns how many.
    pub fn take_changes(
        &mut self,
        prefix: &[u8],
        snapshot: bool,
        entries: &mut ChangelogEntriesBuilder,
    ) -> u64
    where
        V: Serialize,
    {
        self.take_changes_with(prefix, snapshot, entries, append_postcard)
    }

    /// As [`take_changes`](Self::take_changes), with `write_state` appending each state's
    /// postcard bytes to the buffer it is given: for a state that keeps them ready, or
    /// writes them faster than serde. [`apply`](Self::apply) reads them back with serde, so
    /// they must be the bytes `postcard::to_allocvec` gives.
    ///
    /// ```
    /// use runnel_event_time::changelog_entries::ChangelogEntriesBuilder;
    /// use runnel_event_time::tracked_map::TrackedMap;
    ///
    /// let mut counts: TrackedMap<String, u8> = TrackedMap::default();
    /// *counts.change("apple", || 0) += 3;
    /// let mut entries = ChangelogEntriesBuilder::default();
    /// // Postcard writes a `u8` as its byte.
    /// counts.take_changes_with(b"c", false, &mut entries, |count, out| out.push(*count));
    /// let entries = entries.finish();
    /// let (key, value) = entries.iter().next().unwrap().unwrap();
    /// let mut restored: TrackedMap<String, u8> = TrackedMap::default();
    /// assert!(restored.apply(&key[1..], value));
    /// assert_eq!(restored.get("apple"), Some(&3));
    /// ```
    pub fn take_changes_with(
        &mut self,
        prefix: &[u8],
        snapshot: bool,
        entries: &mut ChangelogEntriesBuilder,
        write_state: impl FnMut(&V, &mut Vec<u8>),
    ) -> u64 {
        let write_key = |key: &K, out: &mut Vec<u8>| {
            serde_json::to_writer(out, key).expect("keys serialize");
        };
        self.take_changes_written(prefix, snapshot, entries, write_key, write_state)
    }

    /// As [`take_changes_with`](Self::take_changes_with), with `write_key` appending each
    /// key's JSON to the buffer it is given: for keys a writer of their own puts faster than
    /// serde. [`apply`](Self::apply) reads keys back with serde, and a key must be the same
    /// bytes in every entry (the changelog keeps a key's last entry), so they must be the
    /// bytes `serde_json::to_vec` gives.
    ///
    /// ```
    /// use runnel_event_time::changelog_entries::ChangelogEntriesBuilder;
    /// use runnel_event_time::tracked_map::TrackedMap;
    ///
    /// let mut counts: TrackedMap<u32, u8> = TrackedMap::default();
    /// *counts.change(&7, || 0) += 3;
    /// let mut entries = ChangelogEntriesBuilder::default();
    /// counts.take_changes_written(
    ///     b"c",
    ///     false,
    ///     &mut entries,
    ///     |key, out| out.extend_from_slice(key.to_string().as_bytes()),
    ///     |count, out| out.push(*count),
    /// );
    /// let entries = entries.finish();
    /// let (key, _) = entries.iter().next().unwrap().unwrap();
    /// assert_eq!(key, b"c7");
    /// ```
    pub fn take_changes_written(
        &mut self,
        prefix: &[u8],
        snapshot: bool,
        entries: &mut ChangelogEntriesBuilder,
        mut write_key: impl FnMut(&K, &mut Vec<u8>),
        mut write_state: impl FnMut(&V, &mut Vec<u8>),
    ) -> u64 {
        let mut key_bytes = Vec::new();
        let mut value = Vec::new();
        let mut write = |key: &K, state: Option<&V>| {
            key_bytes.clear();
            key_bytes.extend_from_slice(prefix);
            write_key(key, &mut key_bytes);
            match state {
                Some(state) => {
                    value.clear();
                    value.push(POSTCARD);
                    write_state(state, &mut value);
                    entries.value(&key_bytes, value.len(), |buffer| {
                        buffer.extend_from_slice(&value);
                    });
                }
                None => entries.deleted(&key_bytes),
            }
        };
        let changed = std::mem::take(&mut self.changed);
        let deleted = std::mem::take(&mut self.deleted);
        if snapshot {
            for slot in &mut self.entries {
                slot.listed = false;
                write(&slot.key, Some(&slot.state));
            }
            return self.entries.len() as u64;
        }
        let mut written = deleted.len();
        for key in &deleted {
            write(key, None);
        }
        for hash in changed {
            // A key forgotten since it was listed has no listed slot: its deletion is written.
            if let Some(slot) = self
                .entries
                .find_mut(hash, |slot| slot.hash == hash && slot.listed)
            {
                slot.listed = false;
                write(&slot.key, Some(&slot.state));
                written += 1;
            }
        }
        written as u64
    }

    /// Applies an entry read back (its key without the prefix): `None` deletes. Returns
    /// whether the entry is one of this map's; nothing changes if not.
    pub fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool
    where
        V: DeserializeOwned,
    {
        self.apply_with(key, value, |_, _, _| {})
    }

    /// As [`apply`](Self::apply), also calling `applied` with the key, the state it had
    /// and the state it has, for indexes kept beside the map.
    pub fn apply_with(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        applied: impl FnOnce(&K, Option<&V>, Option<&V>),
    ) -> bool
    where
        V: DeserializeOwned,
    {
        self.apply_read(key, value, read_state, |key, old, new| {
            applied(key, old.as_ref(), new);
        })
    }

    /// As [`apply_with`](Self::apply_with), with `read` making the state from the entry's
    /// value (with its format byte, see [`read_state`]) and `applied` given the state the
    /// key had to keep: for a state that keeps its bytes outside the map, which `read`
    /// puts there and `applied` releases.
    ///
    /// ```
    /// use runnel_event_time::tracked_map::{TrackedMap, read_state};
    ///
    /// // Each state an index into rows kept beside the map.
    /// let mut rows: Vec<String> = Vec::new();
    /// let mut map: TrackedMap<String, usize> = TrackedMap::default();
    /// let read = |value: &[u8]| {
    ///     rows.push(read_state::<String>(value)?);
    ///     Some(rows.len() - 1)
    /// };
    /// assert!(map.apply_read(br#""k""#, Some(br#""row""#), read, |_, old, _| assert!(old.is_none())));
    /// assert_eq!(rows[*map.get("k").unwrap()], "row");
    /// ```
    pub fn apply_read(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        read: impl FnOnce(&[u8]) -> Option<V>,
        applied: impl FnOnce(&K, Option<V>, Option<&V>),
    ) -> bool {
        let Ok(key) = serde_json::from_slice::<K>(key) else {
            return false;
        };
        let hash = self.hasher.hash_one(&key);
        let found = self
            .entries
            .find_entry(hash, |slot| slot.hash == hash && slot.key == key);
        match value {
            None => {
                let old = found.ok().map(|found| found.remove().0.state);
                applied(&key, old, None);
            }
            Some(value) => {
                let Some(state) = read(value) else {
                    return false;
                };
                match found {
                    Ok(mut found) => {
                        let slot = found.get_mut();
                        let old = std::mem::replace(&mut slot.state, state);
                        applied(&key, Some(old), Some(&slot.state));
                    }
                    Err(absent) => {
                        let slot = Slot {
                            hash,
                            key,
                            state,
                            listed: false,
                        };
                        let slot = absent
                            .into_table()
                            .insert_unique(hash, slot, |slot| slot.hash);
                        let slot = slot.get();
                        applied(&slot.key, None, Some(&slot.state));
                    }
                }
            }
        }
        true
    }

    /// Notes the key an entry read back names (without the prefix) as changed, so the next
    /// changes write it as the state has it.
    pub fn mark_changed(&mut self, key: &[u8]) {
        let Ok(key) = serde_json::from_slice::<K>(key) else {
            return;
        };
        let hash = self.hasher.hash_one(&key);
        match self
            .entries
            .find_mut(hash, |slot| slot.hash == hash && slot.key == key)
        {
            Some(slot) => list(slot, &mut self.changed),
            None => self.deleted.push(key),
        }
    }
}

/// Notes `slot`'s key changed, once until the changes are taken.
fn list<K, V>(slot: &mut Slot<K, V>, changed: &mut Vec<u64>) {
    if !slot.listed {
        slot.listed = true;
        changed.push(slot.hash);
    }
}

/// Serialized as its entries, a list of `[key, state]` pairs (JSON maps name keys only by
/// strings); the changed keys are not part of it.
impl<K: Serialize, V: Serialize> Serialize for TrackedMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.entries.iter().map(|slot| (&slot.key, &slot.state)))
    }
}

impl<'de, K, V> Deserialize<'de> for TrackedMap<K, V>
where
    K: Deserialize<'de> + Hash + Eq,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pairs = Vec::<(K, V)>::deserialize(deserializer)?;
        let mut map = TrackedMap::default();
        for (key, state) in pairs {
            // The last state of a key listed twice wins, as a map's would.
            let hash = map.hasher.hash_one(&key);
            let slot = Slot {
                hash,
                key,
                state,
                listed: false,
            };
            match map.entries.entry(
                hash,
                |kept| kept.hash == hash && kept.key == slot.key,
                |kept| kept.hash,
            ) {
                Entry::Occupied(mut occupied) => *occupied.get_mut() = slot,
                Entry::Vacant(vacant) => {
                    vacant.insert(slot);
                }
            }
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_write_the_keys_changed_and_replay_into_the_same_state() {
        let key = |n: i64| vec![n];
        let mut state: TrackedMap<Vec<i64>, i64> = TrackedMap::default();
        *state.change(&key(1)[..], || 0) += 5;
        *state.change(&key(2)[..], || 0) += 7;
        let mut first = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut first), 2);
        *state.change_existing(&key(1)[..]).unwrap() += 1;
        state.remove(&key(2)[..]);
        state.retain(|_, _| Kept::Unchanged);
        let mut second = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut second), 2);
        let mut none = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", false, &mut none), 0);

        let mut restored: TrackedMap<Vec<i64>, i64> = TrackedMap::default();
        for entries in [first.finish(), second.finish()] {
            for entry in entries.iter() {
                let (key, value) = entry.unwrap();
                assert!(restored.apply(&key[1..], value));
            }
        }
        assert_eq!(restored.get(&key(1)[..]), Some(&6));
        assert_eq!(restored.get(&key(2)[..]), None);
        assert_eq!(restored.len(), 1);
        let mut snapshot = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"a", true, &mut snapshot), 1);
    }

    #[test]
    fn retain_notes_what_it_changes_and_drops() {
        let mut state: TrackedMap<i64, i64> = TrackedMap::default();
        for key in 0..4 {
            state.insert(key, key);
        }
        state.take_changes(b"", false, &mut ChangelogEntriesBuilder::default());
        state.retain(|key, value| match key {
            0 => Kept::Gone,
            1 => {
                *value += 10;
                Kept::Changed
            }
            _ => Kept::Unchanged,
        });
        let mut entries = ChangelogEntriesBuilder::default();
        assert_eq!(state.take_changes(b"", false, &mut entries), 2);
        let entries = entries.finish();
        let mut written: Vec<_> = entries.iter().map(Result::unwrap).collect();
        written.sort();
        // 11 in postcard: zigzag 22, one byte of varint.
        assert_eq!(
            written,
            [(&b"0"[..], None), (&b"1"[..], Some(&[POSTCARD, 22][..]))]
        );
    }

    #[test]
    fn the_last_entry_of_a_key_is_its_state_however_it_changed() {
        let mut state: TrackedMap<i64, i64> = TrackedMap::default();
        state.insert(1, 10);
        state.insert(2, 20);
        state.take_changes(b"", false, &mut ChangelogEntriesBuilder::default());
        state.remove(&1);
        state.insert(1, 11); // removed and set again
        *state.change(&2, || 0) += 1;
        state.remove(&2); // changed, then gone
        let mut entries = ChangelogEntriesBuilder::default();
        state.take_changes(b"", false, &mut entries);
        let mut restored: TrackedMap<i64, i64> = TrackedMap::default();
        restored.insert(2, 20);
        for entry in entries.finish().iter() {
            let (key, value) = entry.unwrap();
            assert!(restored.apply(key, value));
        }
        assert_eq!(restored.get(&1), Some(&11));
        assert_eq!(restored.get(&2), None);

        // A key marked changed on replay is written as the state has it, or deleted.
        restored.take_changes(b"", false, &mut ChangelogEntriesBuilder::default());
        restored.mark_changed(b"1");
        restored.mark_changed(b"3");
        let mut entries = ChangelogEntriesBuilder::default();
        assert_eq!(restored.take_changes(b"", false, &mut entries), 2);
        let entries = entries.finish();
        let mut written: Vec<_> = entries.iter().map(Result::unwrap).collect();
        written.sort();
        assert_eq!(
            written,
            [(&b"1"[..], Some(&[POSTCARD, 22][..])), (&b"3"[..], None)]
        );
    }

    #[test]
    fn an_entry_of_another_shape_is_refused_and_changes_nothing() {
        let mut state: TrackedMap<i64, String> = TrackedMap::default();
        assert!(!state.apply(b"\"not a number\"", Some(b"\"x\"")));
        assert!(!state.apply(b"1", Some(b"2")));
        // Postcard text of 5 bytes, cut short.
        assert!(!state.apply(b"1", Some(&[POSTCARD, 5, b'a'])));
        assert!(state.is_empty());
    }

    #[test]
    fn states_written_as_json_before_still_read_back() {
        let mut state: TrackedMap<Vec<i64>, (String, f64)> = TrackedMap::default();
        assert!(state.apply(b"[1]", Some(br#"["old",0.1]"#)));
        assert_eq!(state.get(&[1][..]), Some(&("old".to_owned(), 0.1)));
    }

    #[test]
    fn states_read_back_as_they_were_written() {
        type State = Vec<(String, f64, Option<i64>)>;
        let written: State = vec![
            ("quoted \"text\"\n".to_owned(), 0.1 + 0.2, Some(-3)),
            (String::new(), f64::MAX, None),
        ];
        let mut state: TrackedMap<u64, State> = TrackedMap::default();
        state.insert(7, written.clone());
        let mut entries = ChangelogEntriesBuilder::default();
        state.take_changes(b"", false, &mut entries);
        let mut restored: TrackedMap<u64, State> = TrackedMap::default();
        for entry in entries.finish().iter() {
            let (key, value) = entry.unwrap();
            assert_eq!(value.and_then(<[u8]>::first), Some(&POSTCARD));
            assert!(restored.apply(key, value));
        }
        assert_eq!(restored.get(&7), Some(&written));
    }

    #[test]
    fn the_map_serializes_as_pairs() {
        let mut state: TrackedMap<Vec<i64>, String> = TrackedMap::default();
        state.insert(vec![1, 2], "x".to_owned());
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(json, r#"[[[1,2],"x"]]"#);
        let back: TrackedMap<Vec<i64>, String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.get(&[1, 2][..]), Some(&"x".to_owned()));
    }
}
