//! [`PartitionStore`]: the keyed state of one input partition, in memory, with the keys
//! changed since the last checkpoint.
//!
//! Entries live in a hash map: point reads and writes are what a streamlet does per record,
//! and a hash map does them about four times faster than an ordered map (docs/benchmarks.md,
//! "Local state store: candidates compared"). The keys that are scanned (a map's entries, by
//! the map's prefix; timers, in time order) are also kept in an ordered set.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::changelog_entries::{ChangelogEntries, ChangelogEntriesBuilder};
use super::stored_key::StoredKey;
use super::stored_value::StoredValue;

/// Changes since the last snapshot beyond this (and twice the live state) make the next
/// checkpoint a snapshot, so a restore reads at most about three times the state.
const SNAPSHOT_SLACK_BYTES: u64 = 1 << 20;

/// An entry: its encoded value and when it expires (processing time, milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    value: StoredValue,
    /// When it expires, or [`Stored::NEVER`]: an `Option<i64>` would take 16 bytes, and
    /// millions of entries each pay for the field.
    expires_at: i64,
}

impl Stored {
    /// `expires_at` of an entry that does not expire.
    const NEVER: i64 = i64::MIN;

    /// An entry holding `value`, to expire at `expires` if given. An expiry of `i64::MIN`,
    /// long past whatever the clock says, is held as `i64::MIN + 1`, as long past.
    fn new(value: StoredValue, expires: Option<i64>) -> Stored {
        Stored {
            value,
            expires_at: expires.map_or(Stored::NEVER, |expires| expires.max(i64::MIN + 1)),
        }
    }

    /// When it expires, if it does.
    fn expires(&self) -> Option<i64> {
        (self.expires_at != Stored::NEVER).then_some(self.expires_at)
    }

    /// Appends the changelog encoding to `buffer`: a flag byte, the expiry if flagged, the
    /// value.
    fn encode_into(&self, buffer: &mut bytes::BytesMut) {
        buffer.reserve(self.encoded_len());
        match self.expires() {
            None => buffer.extend_from_slice(&[0]),
            Some(expires) => {
                buffer.extend_from_slice(&[1]);
                buffer.extend_from_slice(&expires.to_le_bytes());
            }
        }
        buffer.extend_from_slice(&self.value);
    }

    /// The length of the changelog encoding.
    fn encoded_len(&self) -> usize {
        1 + if self.expires().is_some() { 8 } else { 0 } + self.value.len()
    }

    fn decode(encoded: &[u8]) -> Option<Stored> {
        match encoded.split_first()? {
            (0, value) => Some(Stored::new(StoredValue::from_slice(value), None)),
            (1, rest) if rest.len() >= 8 => {
                let (expires, value) = rest.split_at(8);
                let expires = i64::from_le_bytes(expires.try_into().ok()?);
                Some(Stored::new(StoredValue::from_slice(value), Some(expires)))
            }
            _ => None,
        }
    }

    fn size(key: &[u8], value: &[u8]) -> u64 {
        (key.len() + value.len()) as u64
    }
}

/// Whether `key` is also kept in order, for scans: map entries and timers (see
/// [`entry`](super::entry) and [`timers`](super::timers) for the layout).
fn is_ordered(key: &[u8]) -> bool {
    matches!(key.first(), Some(b'm' | b't'))
}

/// A key as the map and the sets beside it hold it (copied when short, shared when long).
type Key = StoredKey;

/// The hasher of the maps: fast, seeded at random per map (keys come from input records).
type Hasher = foldhash::fast::RandomState;

/// The keyed state of one input partition: encoded keys to encoded values, with the set of
/// keys changed (written or deleted) since the last checkpoint.
#[derive(Debug, Default)]
pub struct PartitionStore {
    entries: HashMap<Key, Stored, Hasher>,
    /// The keys of map entries and timers, in order, for scans.
    ordered: BTreeSet<Key>,
    changed: HashSet<Key, Hasher>,
    /// Entries with a time to live, by expiry.
    expiries: BTreeSet<(i64, Key)>,
    /// Bytes of keys and values held.
    live_bytes: u64,
    /// Bytes written to the changelog since the last snapshot.
    since_snapshot: u64,
    /// Whether the next checkpoint writes the whole state.
    snapshot_next: bool,
}

impl PartitionStore {
    /// The value of `key`, unless it expired by `now`.
    pub fn get(&self, key: &[u8], now: i64) -> Option<&[u8]> {
        let stored = self.entries.get(key)?;
        match stored.expires() {
            Some(expires) if expires <= now => None,
            _ => Some(&stored.value),
        }
    }

    /// Sets `key` to `value`, to expire at `expires` if given.
    pub fn put(&mut self, key: &[u8], value: Vec<u8>, expires: Option<i64>) {
        let stored = Stored::new(StoredValue::from_vec(value), expires);
        let key = self.insert(key, stored);
        self.changed.insert(key);
    }

    /// Holds `stored` at `key`, replacing what was there; returns the key as held.
    fn insert(&mut self, key: &[u8], stored: Stored) -> Key {
        self.live_bytes += Stored::size(key, &stored.value);
        let expires = stored.expires();
        let (held, old) = match self.entries.get_key_value(key) {
            Some((held, _)) => {
                let held = held.clone();
                let old = self.entries.insert(held.clone(), stored);
                (held, old)
            }
            None => {
                let held: Key = key.into();
                if is_ordered(key) {
                    self.ordered.insert(held.clone());
                }
                self.entries.insert(held.clone(), stored);
                (held, None)
            }
        };
        if let Some(old) = old {
            self.live_bytes -= Stored::size(key, &old.value);
            if let Some(expired) = old.expires().filter(|old| Some(*old) != expires) {
                self.expiries.remove(&(expired, held.clone()));
            }
        }
        if let Some(expires) = expires {
            self.expiries.insert((expires, held.clone()));
        }
        held
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &[u8]) {
        if let Some(held) = self.remove(key) {
            self.changed.insert(held);
        }
    }

    /// Removes `key` and takes it out of the accounts; returns it as it was held.
    fn remove(&mut self, key: &[u8]) -> Option<Key> {
        let (held, old) = self.entries.remove_entry(key)?;
        self.live_bytes -= Stored::size(key, &old.value);
        if let Some(expires) = old.expires() {
            self.expiries.remove(&(expires, held.clone()));
        }
        if is_ordered(key) {
            self.ordered.remove(key);
        }
        Some(held)
    }

    /// The entries whose keys start with `prefix` (a map's or the timers'), in key order,
    /// without those expired by `now`.
    pub fn scan<'a>(
        &'a self,
        prefix: &'a [u8],
        now: i64,
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        debug_assert!(
            is_ordered(prefix),
            "only map entries and timers are scanned"
        );
        self.ordered
            .range::<[u8], _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |key| key.starts_with(prefix))
            .filter_map(move |key| {
                let stored = self.entries.get(key)?;
                let live = stored.expires().is_none_or(|expires| expires > now);
                live.then_some((&**key, &*stored.value))
            })
    }

    /// The first key starting with `prefix` (a map's or the timers').
    pub fn first_key(&self, prefix: &[u8]) -> Option<&[u8]> {
        self.ordered
            .range::<[u8], _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .map(|key| &**key)
            .filter(|key| key.starts_with(prefix))
    }

    /// Deletes every entry whose keys start with `prefix`.
    pub fn delete_prefix(&mut self, prefix: &[u8]) {
        let keys: Vec<Key> = self
            .scan(prefix, i64::MIN)
            .map(|(key, _)| key.into())
            .collect();
        for key in keys {
            self.delete(&key);
        }
    }

    /// Deletes the entries expired by `now`; returns how many.
    pub fn expire(&mut self, now: i64) -> usize {
        let mut expired = 0;
        while let Some((expires, _)) = self.expiries.first() {
            if *expires > now {
                break;
            }
            let (_, key) = self.expiries.pop_first().expect("looked at first");
            if let Some(held) = self.remove(&key) {
                self.changed.insert(held);
                expired += 1;
            }
        }
        expired
    }

    /// Whether anything changed since the last checkpoint (or the next is a snapshot).
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty() || self.snapshot_next
    }

    /// Makes the next checkpoint write the whole state.
    pub fn snapshot_next(&mut self) {
        self.snapshot_next = true;
    }

    /// Takes the changes for a checkpoint, in no particular order: every entry for a
    /// snapshot (when one is due), otherwise the entries changed since the last checkpoint,
    /// deleted ones as `None`.
    /// Returns whether they are a snapshot.
    pub fn take_changes(&mut self) -> (ChangelogEntries, bool) {
        let snapshot =
            self.snapshot_next || self.since_snapshot > 2 * self.live_bytes + SNAPSHOT_SLACK_BYTES;
        // Room for the entries taken, at the state's average size, plus their framing.
        let average = self.live_bytes as usize / self.entries.len().max(1);
        let count = if snapshot {
            self.entries.len()
        } else {
            self.changed.len()
        };
        let mut taken = ChangelogEntriesBuilder::with_capacity(count * (average + 4));
        let mut take = |key: &[u8], stored: Option<&Stored>| match stored {
            Some(stored) => taken.value(key, stored.encoded_len(), |buffer| {
                stored.encode_into(buffer);
            }),
            None => taken.deleted(key),
        };
        let written = if snapshot {
            self.changed = HashSet::default();
            let mut written = 0;
            for (key, stored) in &self.entries {
                written += (key.len() + stored.encoded_len()) as u64;
                take(key, Some(stored));
            }
            written
        } else {
            let mut written = 0;
            for key in std::mem::take(&mut self.changed) {
                let stored = self.entries.get(&key);
                written += (key.len() + stored.map_or(0, Stored::encoded_len)) as u64;
                take(&key, stored);
            }
            written
        };
        if snapshot {
            self.since_snapshot = written;
            self.snapshot_next = false;
        } else {
            self.since_snapshot += written;
        }
        (taken.finish(), snapshot)
    }

    /// Applies a changelog record read back: `value` is `None` for a deletion. Returns
    /// whether `value` is an encoded entry (nothing is applied if not).
    pub fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        let Some(value) = value else {
            self.remove(key);
            return true;
        };
        let Some(stored) = Stored::decode(value) else {
            return false;
        };
        self.insert(key, stored);
        true
    }

    /// Marks `key` changed, so the next checkpoint writes it as it is now (a value, or a
    /// deletion): for records in the changelog that are not part of the state.
    pub fn mark_changed(&mut self, key: &[u8]) {
        let held = self
            .entries
            .get_key_value(key)
            .map_or_else(|| key.into(), |(held, _)| held.clone());
        self.changed.insert(held);
    }

    /// Every key held, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.entries.keys().map(|key| &**key)
    }

    /// How many entries the store holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the store holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of keys and values held.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed key and its value (`None`: deleted).
    type Change = (Vec<u8>, Option<Vec<u8>>);

    fn changes(store: &mut PartitionStore) -> (Vec<Change>, bool) {
        let (changes, snapshot) = store.take_changes();
        let mut changes: Vec<Change> = changes
            .iter()
            .map(Result::unwrap)
            .map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec)))
            .collect();
        changes.sort(); // taken in no particular order
        (changes, snapshot)
    }

    #[test]
    fn a_checkpoint_takes_only_what_changed_since_the_last() {
        let mut store = PartitionStore::default();
        store.put(b"a", b"1".to_vec(), None);
        store.put(b"b", b"2".to_vec(), None);
        assert_eq!(changes(&mut store).0.len(), 2);
        store.put(b"b", b"3".to_vec(), None);
        store.delete(b"a");
        let (taken, snapshot) = changes(&mut store);
        assert!(!snapshot);
        assert_eq!(
            taken,
            vec![
                (b"a".to_vec(), None),
                (b"b".to_vec(), Some(b"\x003".to_vec()))
            ]
        );
        assert!(!store.has_changes());
        assert_eq!(store.live_bytes(), 2);
    }

    #[test]
    fn a_snapshot_holds_every_entry_and_replays_to_the_same_store() {
        let mut store = PartitionStore::default();
        store.put(b"k1", b"one".to_vec(), Some(50));
        store.put(b"k2", b"two".to_vec(), None);
        store.snapshot_next();
        let (taken, snapshot) = store.take_changes();
        assert!(snapshot);
        let mut restored = PartitionStore::default();
        for (key, value) in taken.iter().map(Result::unwrap) {
            assert!(restored.apply(key, value));
        }
        assert_eq!(restored.entries, store.entries);
        assert_eq!(restored.get(b"k1", 49), Some(&b"one"[..]));
        assert_eq!(restored.expire(50), 1);
        assert_eq!(restored.get(b"k1", 0), None);
    }

    #[test]
    fn expiries_at_the_ends_of_time_and_none_survive_a_restore() {
        let mut store = PartitionStore::default();
        store.put(b"never", b"n".to_vec(), None);
        store.put(b"latest", b"l".to_vec(), Some(i64::MAX));
        store.put(b"earliest", b"e".to_vec(), Some(i64::MIN));
        store.snapshot_next();
        let (taken, _) = store.take_changes();
        let mut restored = PartitionStore::default();
        for (key, value) in taken.iter().map(Result::unwrap) {
            assert!(restored.apply(key, value));
        }
        for store in [&store, &restored] {
            assert_eq!(store.get(b"never", i64::MAX), Some(&b"n"[..]));
            assert_eq!(store.get(b"latest", i64::MAX - 1), Some(&b"l"[..]));
            assert_eq!(store.get(b"earliest", i64::MIN + 1), None);
        }
        assert_eq!(restored.expire(i64::MAX), 2);
        assert_eq!(restored.get(b"never", i64::MAX), Some(&b"n"[..]));
    }

    #[test]
    fn an_entry_is_a_small_value_and_an_expiry_in_four_words() {
        assert_eq!(std::mem::size_of::<Stored>(), 32);
    }

    #[test]
    fn expired_entries_are_invisible_then_deleted() {
        let mut store = PartitionStore::default();
        store.put(b"old", b"x".to_vec(), Some(10));
        store.put(b"old", b"y".to_vec(), Some(20)); // rewritten: lives longer
        store.take_changes();
        assert_eq!(store.expire(15), 0);
        assert_eq!(store.get(b"old", 20), None);
        assert_eq!(store.expire(20), 1);
        assert_eq!(changes(&mut store).0, vec![(b"old".to_vec(), None)]);
        assert_eq!(store.live_bytes(), 0);
    }

    #[test]
    fn scans_stay_within_their_prefix() {
        let mut store = PartitionStore::default();
        for key in [&b"m0"[..], b"m11", b"m12", b"m2", b"v1"] {
            store.put(key, key.to_vec(), None);
        }
        let keys: Vec<&[u8]> = store.scan(b"m1", 0).map(|(key, _)| key).collect();
        assert_eq!(keys, vec![&b"m11"[..], b"m12"]);
        assert_eq!(store.first_key(b"m1"), Some(&b"m11"[..]));
        assert_eq!(store.first_key(b"m3"), None);
        store.delete_prefix(b"m1");
        assert_eq!(store.len(), 3);
        assert_eq!(store.first_key(b"m1"), None);
    }

    #[test]
    fn changes_beyond_twice_the_state_make_a_snapshot() {
        let mut store = PartitionStore::default();
        let value = vec![7; 1024];
        let mut snapshots = 0;
        for round in 0..4_000u32 {
            store.put(&(round % 4).to_be_bytes(), value.clone(), None);
            snapshots += usize::from(store.take_changes().1);
        }
        // About 4 MiB written over a 4 KiB state: a snapshot per MiB or so, not per round.
        assert!((2..=5).contains(&snapshots), "{snapshots} snapshots");
    }
}
