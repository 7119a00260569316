//! The changelog entries of one checkpoint of one partition, encoded one after the other in
//! one buffer: a key's length (a LEB128 varint) and bytes, then `0` for a deletion or `1`,
//! the value's length and bytes. A checkpoint takes them into this buffer with one copy
//! each; the runtime sends them as one record per entry where the changelog is compacted
//! (the log keeps each key's last record) and as records holding many entries where it is
//! not, and a restore reads both.

use bytes::{BufMut, Bytes, BytesMut};
use runnel_backend::Record;

/// The header of a changelog record that holds many entries (where the changelog is not
/// compacted), with their count in decimal. Without it, a record is one entry: the key is
/// the entry's key and the value its value (null: deleted).
pub const CHANGELOG_ENTRIES_HEADER: &str = "runnel.changelog.entries";

/// What a changelog replays into: a keyed state's store, or a window operator's windows
/// of each key.
pub trait ReplayTarget {
    /// Applies an entry read back: `value` is `None` for a deletion. Returns whether `value`
    /// is an entry this target encoded (nothing is applied if not).
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool;

    /// Marks `key` changed, so the next checkpoint writes it as it is now (a value, or a
    /// deletion): for records in the changelog that are not part of the state.
    fn mark_changed(&mut self, key: &[u8]);

    /// How many entries it holds (keys, for windows), for the state size.
    fn held_entries(&self) -> u64;
}

/// When a state written by what changed is next written whole (a snapshot, after which the
/// changelog's earlier records are no longer needed): when asked for (nothing in the
/// changelog yet, or too many writers' records), or when the entries written since the last
/// snapshot outgrow twice those held by [`SLACK_ENTRIES`](Snapshots::SLACK_ENTRIES), so a
/// restore reads at most a few times the state.
///
/// ```
/// use runnel_event_time::changelog_entries::Snapshots;
///
/// let mut snapshots = Snapshots::default();
/// snapshots.ask();
/// assert!(snapshots.due(10));
/// snapshots.wrote(true, 10);
/// assert!(!snapshots.due(10));
/// snapshots.wrote(false, 2 * 10 + Snapshots::SLACK_ENTRIES + 1);
/// assert!(snapshots.due(10));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshots {
    asked: bool,
    written_since: u64,
}

impl Snapshots {
    /// Entries beyond twice those held that may be written before a snapshot is due.
    pub const SLACK_ENTRIES: u64 = 1024;

    /// Makes the next write a snapshot.
    pub fn ask(&mut self) {
        self.asked = true;
    }

    /// Whether a snapshot was asked for since the last one.
    pub fn asked(&self) -> bool {
        self.asked
    }

    /// Whether the next write must be a snapshot, for a state holding `held` entries.
    pub fn due(&self, held: u64) -> bool {
        self.asked || self.written_since > 2 * held + Self::SLACK_ENTRIES
    }

    /// Notes a write of `written` entries, a snapshot or not.
    pub fn wrote(&mut self, snapshot: bool, written: u64) {
        if snapshot {
            self.asked = false;
            self.written_since = written;
        } else {
            self.written_since += written;
        }
    }
}

/// Entries written one after the other (see the module's documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangelogEntries {
    encoded: Bytes,
    count: usize,
}

/// One entry: its key, and its value (`None`: deleted).
pub type Entry<'a> = (&'a [u8], Option<&'a [u8]>);

impl ChangelogEntries {
    /// Entries encoded by [`ChangelogEntriesBuilder`] or read from a record holding
    /// `count` of them.
    pub fn from_encoded(encoded: Bytes, count: usize) -> Self {
        ChangelogEntries { encoded, count }
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entries in order, or `Err` with the byte position where the encoding breaks.
    pub fn iter(&self) -> impl Iterator<Item = Result<Entry<'_>, usize>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.encoded.len() {
                return None;
            }
            Some(match entry_at(&self.encoded, at) {
                Some((entry, next)) => {
                    at = next;
                    Ok(entry)
                }
                None => {
                    let broken = at;
                    at = self.encoded.len();
                    Err(broken)
                }
            })
        })
    }

    /// The entries as consecutive parts of at most `max_bytes` each (an entry larger than
    /// that alone in its part), each with its entry count, sharing the buffer.
    pub fn parts(&self, max_bytes: usize) -> Vec<(Bytes, usize)> {
        let mut parts = Vec::new();
        let (mut start, mut at, mut count) = (0, 0, 0);
        while let Some((_, next)) = entry_at(&self.encoded, at) {
            if count > 0 && next - start > max_bytes {
                parts.push((self.encoded.slice(start..at), count));
                (start, count) = (at, 0);
            }
            (at, count) = (next, count + 1);
        }
        if count > 0 {
            parts.push((self.encoded.slice(start..at), count));
        }
        parts
    }

    /// Each entry's key and value as slices of the buffer, for one record per entry.
    pub fn each(&self) -> impl Iterator<Item = (Bytes, Option<Bytes>)> + '_ {
        self.iter().map_while(Result::ok).map(|(key, value)| {
            (
                self.encoded.slice_ref(key),
                value.map(|value| self.encoded.slice_ref(value)),
            )
        })
    }
}

/// Calls `entry` with each entry `record` holds, in order: its key and value for a record of
/// one entry, or those of a record holding many ([`CHANGELOG_ENTRIES_HEADER`]). `entry`
/// returns whether the value is one it takes. `Err` says what is wrong with the record.
pub fn read_entries(
    record: &Record,
    mut entry: impl FnMut(&[u8], Option<&[u8]>) -> bool,
) -> Result<(), String> {
    let Some(count) = record.headers.get_str(CHANGELOG_ENTRIES_HEADER) else {
        return match &record.key {
            Some(key) if entry(key, record.value.as_deref()) => Ok(()),
            Some(_) => Err("its value is not a state entry".to_owned()),
            None => Err("it has no key".to_owned()),
        };
    };
    let entries = ChangelogEntries::from_encoded(
        record.value.clone().unwrap_or_default(),
        count.parse().unwrap_or_default(),
    );
    let mut read = 0;
    for next in entries.iter() {
        match next {
            Ok((key, value)) if entry(key, value) => read += 1,
            Ok(_) => {
                return Err(format!(
                    "the value of its entry {read} is not a state entry"
                ));
            }
            Err(at) => return Err(format!("its entries break at byte {at}")),
        }
    }
    if read == entries.len() {
        Ok(())
    } else {
        Err(format!(
            "it holds {read} entries where its header says {count}"
        ))
    }
}

/// The entry starting at `at`, and where the next starts; `None` if the bytes there are
/// not an entry.
fn entry_at(encoded: &[u8], at: usize) -> Option<(Entry<'_>, usize)> {
    let (key_len, at) = varint(encoded, at)?;
    let key = encoded.get(at..at.checked_add(key_len)?)?;
    let at = at + key_len;
    match *encoded.get(at)? {
        0 => Some(((key, None), at + 1)),
        1 => {
            let (value_len, at) = varint(encoded, at + 1)?;
            let value = encoded.get(at..at.checked_add(value_len)?)?;
            Some(((key, Some(value)), at + value_len))
        }
        _ => None,
    }
}

/// The LEB128 varint at `at`, and the position after it.
fn varint(encoded: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *encoded.get(at)?;
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((usize::try_from(value).ok()?, at));
        }
    }
    None
}

fn put_varint(buffer: &mut BytesMut, mut value: usize) {
    while value >= 0x80 {
        buffer.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buffer.put_u8(value as u8);
}

/// Builds [`ChangelogEntries`].
#[derive(Debug, Default)]
pub struct ChangelogEntriesBuilder {
    buffer: BytesMut,
    count: usize,
}

impl ChangelogEntriesBuilder {
    /// A builder with room for about `bytes` of entries.
    pub fn with_capacity(bytes: usize) -> Self {
        ChangelogEntriesBuilder {
            buffer: BytesMut::with_capacity(bytes),
            count: 0,
        }
    }

    /// Appends a deletion of `key`.
    pub fn deleted(&mut self, key: &[u8]) {
        put_varint(&mut self.buffer, key.len());
        self.buffer.put_slice(key);
        self.buffer.put_u8(0);
        self.count += 1;
    }

    /// Appends `key` with the value `write` encodes, `value_len` bytes long.
    pub fn value(&mut self, key: &[u8], value_len: usize, write: impl FnOnce(&mut BytesMut)) {
        put_varint(&mut self.buffer, key.len());
        self.buffer.put_slice(key);
        self.buffer.put_u8(1);
        put_varint(&mut self.buffer, value_len);
        let before = self.buffer.len();
        write(&mut self.buffer);
        debug_assert_eq!(self.buffer.len() - before, value_len, "the value's length");
        self.count += 1;
    }

    /// The entries appended.
    pub fn finish(self) -> ChangelogEntries {
        ChangelogEntries::from_encoded(self.buffer.freeze(), self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&[u8], Option<&[u8]>)]) -> ChangelogEntries {
        let mut builder = ChangelogEntriesBuilder::default();
        for (key, value) in list {
            match value {
                Some(value) => builder.value(key, value.len(), |buffer| buffer.put_slice(value)),
                None => builder.deleted(key),
            }
        }
        builder.finish()
    }

    #[test]
    fn entries_read_back_in_order() {
        let long = vec![9u8; 300]; // a two-byte length
        let written = entries(&[(b"a", Some(b"1")), (b"b", None), (&long, Some(&long))]);
        assert_eq!(written.len(), 3);
        let read: Vec<Entry<'_>> = written.iter().map(Result::unwrap).collect();
        assert_eq!(
            read,
            vec![
                (&b"a"[..], Some(&b"1"[..])),
                (b"b", None),
                (&long, Some(&long))
            ]
        );
        let each: Vec<(Bytes, Option<Bytes>)> = written.each().collect();
        assert_eq!(each[2].0.len(), 300);
        assert_eq!(each[1], (Bytes::from_static(b"b"), None));
    }

    #[test]
    fn parts_keep_whole_entries_within_the_bound() {
        // Each entry: length, 1-byte key, tag, length, 3-byte value: 7 bytes.
        let written = entries(&[
            (b"a", Some(b"111")),
            (b"b", Some(b"222")),
            (b"c", Some(b"333")),
        ]);
        let parts = written.parts(14);
        assert_eq!(
            parts.iter().map(|(_, count)| *count).collect::<Vec<_>>(),
            [2, 1]
        );
        let rejoined: Vec<u8> = parts.iter().flat_map(|(part, _)| part.to_vec()).collect();
        assert_eq!(rejoined, written.encoded.to_vec());
        // An entry larger than the bound goes alone.
        assert_eq!(written.parts(3).len(), 3);
    }

    #[test]
    fn a_broken_encoding_is_reported_where_it_breaks() {
        let written = entries(&[(b"a", Some(b"1"))]);
        let mut broken = written.encoded.to_vec();
        broken.extend_from_slice(&[5, b'x']); // a key of five bytes, one there
        let read = ChangelogEntries::from_encoded(broken.into(), 2);
        let results: Vec<_> = read.iter().collect();
        assert_eq!(results, vec![Ok((&b"a"[..], Some(&b"1"[..]))), Err(5)]);
    }
}
