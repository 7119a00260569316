//! [`SideRows`]: the rows one side of a join keeps, by join key. Each key notes where its
//! rows are and their times ([`KeyRows`]); the rows' bytes are in the side's
//! [`RowArena`], appended in turn to chunks shared by every key, so keeping a row takes no
//! allocation of its own and forgetting one moves no bytes.
//!
//! A time-bounded join forgets its rows about in the order they came, so its chunks empty
//! in order and go whole. Rows that stay (a join without a time bound, rows taken back out
//! of order) would keep a chunk alive for a few of its bytes: once more of the arena's
//! bytes are gone than live, the live rows are copied into a new arena, key by key.

use std::collections::VecDeque;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

use super::{JoinKey, Row};
use crate::postcard_rows::{read_row, skip_row, write_values, write_varint};
use crate::tracked::{Kept, Tracked};
use crate::value;
use runnel_streamlet::checkpoint::{ChangelogEntriesBuilder, read_state};

/// How many bytes a chunk of an arena holds (a larger row gets a chunk of its own).
const CHUNK_BYTES: usize = 64 * 1024;

/// A time not known: a row read back from a checkpoint that no expiry has read since, or
/// one without a time. An expiry reads it from the row's bytes (a row at this very time
/// too, which is then read each time).
const UNKNOWN: i64 = i64::MIN;

/// The bytes of one side's rows, in chunks filled in turn, each row's bytes in one chunk.
#[derive(Debug, Default)]
pub(crate) struct RowArena {
    /// The chunks that may hold live rows, oldest first.
    chunks: VecDeque<Chunk>,
    /// The number of the oldest chunk; chunk numbers wrap, and fewer than 2^32 are live.
    first: u32,
    /// The bytes of live rows.
    live: usize,
    /// The bytes of rows gone, in chunks still held.
    gone: usize,
}

/// A chunk of an arena: its rows' bytes, and how many of them are live.
#[derive(Debug)]
struct Chunk {
    bytes: Vec<u8>,
    live: usize,
}

/// Where a row's bytes are in its side's arena, and its time in the column of the join's
/// time bound ([`UNKNOWN`] where not known).
#[derive(Clone, Copy, Debug)]
struct RowMark {
    time: i64,
    chunk: u32,
    start: u32,
    length: u32,
}

impl RowArena {
    /// Appends `row`, returning where it is (its time left unknown).
    fn append(&mut self, row: &[u8]) -> RowMark {
        let fits = self
            .chunks
            .back()
            .is_some_and(|chunk| chunk.bytes.capacity() - chunk.bytes.len() >= row.len());
        if !fits {
            self.chunks.push_back(Chunk {
                bytes: Vec::with_capacity(CHUNK_BYTES.max(row.len())),
                live: 0,
            });
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let start = chunk.bytes.len();
        chunk.bytes.extend_from_slice(row);
        chunk.live += row.len();
        self.live += row.len();
        RowMark {
            time: UNKNOWN,
            chunk: self.first.wrapping_add(index as u32),
            start: u32::try_from(start).expect("a chunk holds less than 4 GiB"),
            length: u32::try_from(row.len()).expect("a row is less than 4 GiB"),
        }
    }

    /// Where the chunk holding `mark` is among the chunks held.
    fn index(&self, mark: RowMark) -> usize {
        mark.chunk.wrapping_sub(self.first) as usize
    }

    /// The bytes of the row at `mark`.
    fn bytes(&self, mark: RowMark) -> &[u8] {
        let start = mark.start as usize;
        &self.chunks[self.index(mark)].bytes[start..start + mark.length as usize]
    }

    /// The bytes of the row at `mark`, to change in place.
    fn bytes_mut(&mut self, mark: RowMark) -> &mut [u8] {
        let (start, index) = (mark.start as usize, self.index(mark));
        &mut self.chunks[index].bytes[start..start + mark.length as usize]
    }

    /// Notes the row at `mark` gone: a chunk left without live rows frees its bytes, and
    /// the oldest chunks go once empty.
    fn release(&mut self, mark: RowMark) {
        let (length, index) = (mark.length as usize, self.index(mark));
        let newest = index + 1 == self.chunks.len();
        let chunk = &mut self.chunks[index];
        chunk.live -= length;
        self.live -= length;
        self.gone += length;
        if chunk.live > 0 {
            return;
        }
        self.gone -= chunk.bytes.len();
        if newest {
            chunk.bytes.clear(); // the newest chunk is filled again
        } else {
            chunk.bytes = Vec::new();
        }
        while self.chunks.len() > 1 && self.chunks.front().is_some_and(|chunk| chunk.live == 0) {
            self.chunks.pop_front();
            self.first = self.first.wrapping_add(1);
        }
    }

    /// Whether more of the bytes held are gone than live (past a chunk's worth of them),
    /// so the live rows are worth copying into a new arena.
    fn wasteful(&self) -> bool {
        self.gone > CHUNK_BYTES && self.gone > self.live
    }

    /// The bytes the arena holds, live or gone.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.chunks.iter().map(|chunk| chunk.bytes.len()).sum()
    }
}

/// The rows of one key of one side: where each is in the side's arena and its time, and
/// the earliest time among them in the column of the join's time bound, so an expiry skips
/// a key whose earliest row is still needed without reading its rows. Rows are postcard,
/// each its count of values, then its values (see `postcard_rows.rs`); a key is
/// checkpointed as the list of its rows.
///
/// A row of an outer side ends with one more value, whether it has matched (a boolean, so
/// its last byte), which a match sets in place and the changelog keeps with the row.
#[derive(Debug)]
pub(crate) struct KeyRows {
    /// Most keys hold one row, whose mark takes no allocation of its own.
    marks: SmallVec<[RowMark; 1]>,
    /// [`UNKNOWN`] where not known.
    earliest: i64,
}

impl Default for KeyRows {
    fn default() -> Self {
        KeyRows {
            marks: SmallVec::new(),
            earliest: UNKNOWN,
        }
    }
}

impl KeyRows {
    /// The rows, in the order they were added.
    pub(crate) fn rows<'a>(&'a self, arena: &'a RowArena) -> impl Iterator<Item = Row> + 'a {
        self.row_bytes(arena)
            .map(|mut bytes| read_row(&mut bytes).expect("a kept row reads back"))
    }

    /// Each row's bytes, in the order they were added.
    pub(crate) fn row_bytes<'a>(&'a self, arena: &'a RowArena) -> impl Iterator<Item = &'a [u8]> {
        self.marks.iter().map(|mark| arena.bytes(*mark))
    }

    /// The row at `index`.
    pub(crate) fn row(&self, arena: &RowArena, index: usize) -> Row {
        let mut bytes = arena.bytes(self.marks[index]);
        read_row(&mut bytes).expect("a kept row reads back")
    }

    /// How many rows there are.
    pub(crate) fn len(&self) -> usize {
        self.marks.len()
    }

    /// Adds a row written by `write_row`, with its time in the column of the join's time
    /// bound (`None` where there is no bound or the row has no time there).
    pub(crate) fn push(&mut self, arena: &mut RowArena, row: &[u8], time: Option<i64>) {
        let time = time.unwrap_or(UNKNOWN);
        self.earliest = match (time, self.marks.len(), self.earliest) {
            (time, 0, _) => time,
            (UNKNOWN, _, _) | (_, _, UNKNOWN) => UNKNOWN,
            (time, _, earliest) => earliest.min(time),
        };
        let mark = RowMark {
            time,
            ..arena.append(row)
        };
        self.marks.push(mark);
    }

    /// Notes whether the row at `index` (of an outer side) matched, in its last byte.
    fn set_matched(&self, arena: &mut RowArena, index: usize, matched: bool) {
        *arena
            .bytes_mut(self.marks[index])
            .last_mut()
            .expect("a flag") = u8::from(matched);
    }

    /// Whether the row at `index` (of an outer side) has matched.
    fn matched(&self, arena: &RowArena, index: usize) -> bool {
        arena.bytes(self.marks[index]).last() == Some(&1)
    }

    /// Removes one row whose bytes are `row`'s (`flagged`: but for the last byte, the
    /// matched flag); returns whether there was one.
    pub(crate) fn remove_equal(&mut self, arena: &mut RowArena, row: &[u8], flagged: bool) -> bool {
        let compared = |bytes: &[u8]| match flagged {
            true => bytes.len() == row.len() && bytes[..bytes.len() - 1] == row[..row.len() - 1],
            false => bytes == row,
        };
        let Some(index) = self.row_bytes(arena).position(compared) else {
            return false;
        };
        arena.release(self.marks.remove(index));
        self.earliest = UNKNOWN;
        true
    }

    /// Keeps the rows whose time in `column` is `live`, noting the earliest kept (a row
    /// without a time there goes), and hands each row that goes to `gone`.
    fn retain_live(
        &mut self,
        arena: &mut RowArena,
        column: usize,
        live: impl Fn(i64) -> bool,
        mut gone: impl FnMut(&[u8]),
    ) {
        let mut earliest = UNKNOWN;
        self.marks.retain(|mark| {
            let time = match mark.time {
                UNKNOWN => {
                    skip_row(&mut arena.bytes(*mark), column).expect("a kept row reads back")
                }
                time => Some(time),
            };
            match time.filter(|time| live(*time)) {
                Some(time) => {
                    mark.time = time;
                    earliest = if earliest == UNKNOWN {
                        time
                    } else {
                        earliest.min(time)
                    };
                    true
                }
                None => {
                    gone(arena.bytes(*mark));
                    arena.release(*mark);
                    false
                }
            }
        });
        self.earliest = earliest;
    }

    /// Appends the rows' postcard bytes, as serde writes a list of rows: their count, then
    /// the rows as kept.
    fn write_postcard(&self, arena: &RowArena, out: &mut Vec<u8>) {
        write_varint(out, self.marks.len() as u64);
        for bytes in self.row_bytes(arena) {
            out.extend_from_slice(bytes);
        }
    }

    /// A key's rows as read back: `rows` appended to `arena`, their times not known.
    fn of_rows(arena: &mut RowArena, rows: &[Row]) -> Option<KeyRows> {
        let width = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|row| row.len() != width) {
            return None; // a key's rows all have the join side's columns
        }
        let mut kept = KeyRows::default();
        let mut bytes = Vec::new();
        for row in rows {
            bytes.clear();
            write_values(row, &mut bytes);
            kept.push(arena, &bytes, None);
        }
        Some(kept)
    }

    /// Gives the rows back to `arena`.
    fn release(&self, arena: &mut RowArena) {
        for mark in &self.marks {
            arena.release(*mark);
        }
    }
}

/// One side's rows by join key, noting the keys changed, and their bytes.
#[derive(Debug, Default)]
pub(crate) struct SideRows {
    pub(crate) keys: Tracked<KeyRows>,
    pub(crate) arena: RowArena,
}

impl SideRows {
    /// Adds a row written by `write_row` to `key`'s, with its time (see [`KeyRows::push`]).
    pub(crate) fn push(&mut self, key: &JoinKey, row: &[u8], time: Option<i64>) {
        let kept = self.keys.change(key, KeyRows::default);
        kept.push(&mut self.arena, row, time);
    }

    /// `key`'s row at `index`.
    pub(crate) fn row(&self, key: &JoinKey, index: usize) -> Row {
        let kept = self.keys.get(key).expect("a kept key");
        kept.row(&self.arena, index)
    }

    /// Notes that `key`'s row at `index` (of an outer side) matched, or (`matched` false)
    /// matches nothing any more; the key is noted changed where its flag changes.
    pub(crate) fn set_matched(&mut self, key: &JoinKey, index: usize, matched: bool) -> bool {
        let flagged = self
            .keys
            .get(key)
            .is_some_and(|kept| kept.matched(&self.arena, index));
        if flagged == matched {
            return false;
        }
        let kept = self.keys.change(key, KeyRows::default);
        kept.set_matched(&mut self.arena, index, matched);
        true
    }

    /// Removes one of `key`'s rows whose bytes are `row`'s (see [`KeyRows::remove_equal`]),
    /// and the key with its last row; returns whether there was one.
    pub(crate) fn remove_equal(&mut self, key: &JoinKey, row: &[u8], flagged: bool) -> bool {
        let Some(kept) = self.keys.change_existing(key) else {
            return false;
        };
        if !kept.remove_equal(&mut self.arena, row, flagged) {
            return false;
        }
        if kept.len() == 0 {
            self.keys.remove(key);
        }
        self.compact_if_wasteful();
        true
    }

    /// Forgets the rows whose time in `column` is not `live` (where `outer`, handing back
    /// those that never matched, without their flag).
    pub(crate) fn forget(
        &mut self,
        column: usize,
        live: impl Fn(i64) -> bool,
        outer: bool,
    ) -> Vec<Row> {
        let mut unmatched = Vec::new();
        let arena = &mut self.arena;
        self.keys.retain(|_, kept| {
            // Times only grow more live: a key whose earliest row is needed keeps all.
            if kept.earliest != UNKNOWN && live(kept.earliest) {
                return Kept::Unchanged;
            }
            let before = kept.len();
            kept.retain_live(arena, column, &live, |mut row| {
                if outer && row.last() == Some(&0) {
                    let mut values = read_row(&mut row).expect("a kept row reads back");
                    values.pop(); // whether it matched
                    unmatched.push(values);
                }
            });
            match kept.len() {
                0 => Kept::Gone,
                after if after == before => Kept::Unchanged,
                _ => Kept::Changed,
            }
        });
        self.compact_if_wasteful();
        unmatched
    }

    /// Copies the live rows into a new arena, key by key, once the arena holds more bytes
    /// gone than live.
    fn compact_if_wasteful(&mut self) {
        if !self.arena.wasteful() {
            return;
        }
        let mut fresh = RowArena::default();
        for kept in self.keys.states_mut() {
            for mark in &mut kept.marks {
                *mark = RowMark {
                    time: mark.time,
                    ..fresh.append(self.arena.bytes(*mark))
                };
            }
        }
        self.arena = fresh;
    }

    /// Appends an entry per key changed since the last call (per key, for a `snapshot`),
    /// each key after `prefix`; returns how many.
    pub(crate) fn take_changes(
        &mut self,
        prefix: &[u8],
        snapshot: bool,
        entries: &mut ChangelogEntriesBuilder,
    ) -> u64 {
        let arena = &self.arena;
        self.keys.take_changes_written(
            prefix,
            snapshot,
            entries,
            |key, out| value::write_json(key, out),
            |kept, out| kept.write_postcard(arena, out),
        )
    }

    /// Applies a changelog entry read back (its key without the prefix): `None` forgets
    /// the key. Returns whether the entry is one of this side's.
    pub(crate) fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        let arena = &mut self.arena;
        let read = |value: &[u8]| KeyRows::of_rows(arena, &read_state::<Vec<Row>>(value)?);
        let mut old = None;
        let applied = self
            .keys
            .apply_read(key, value, read, |_, before, _| old = before);
        if let Some(old) = old {
            old.release(&mut self.arena);
        }
        applied
    }

    /// Notes the key an entry read back names (without the prefix) as changed, so the next
    /// changes write it as the side has it.
    pub(crate) fn mark_changed(&mut self, key: &[u8]) {
        self.keys.mark_changed(key);
    }

    /// The rows of a side saved whole, before the changelog.
    fn of_saved(saved: Vec<(JoinKey, Vec<Row>)>) -> Option<SideRows> {
        let mut side = SideRows::default();
        for (key, rows) in saved {
            let kept = KeyRows::of_rows(&mut side.arena, &rows)?;
            if let Some(old) = side.keys.insert(key, kept) {
                old.release(&mut side.arena); // the last of a key listed twice wins
            }
        }
        Some(side)
    }
}

/// A side's rows as a checkpoint written before the changelog held them: a list of
/// `[key, rows]` pairs.
impl Serialize for SideRows {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rows = |kept: &KeyRows| kept.rows(&self.arena).collect::<Vec<_>>();
        serializer.collect_seq(self.keys.iter().map(|(key, kept)| (key, rows(kept))))
    }
}

impl<'de> Deserialize<'de> for SideRows {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let saved = Vec::<(JoinKey, Vec<Row>)>::deserialize(deserializer)?;
        SideRows::of_saved(saved).ok_or_else(|| {
            serde::de::Error::custom("a join key's rows have different numbers of columns")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn encoded(row: &[Value]) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_values(row, &mut bytes);
        bytes
    }

    fn row(time: i64, name: &str) -> Row {
        vec![Value::Integer(time), Value::Text(name.to_owned())]
    }

    fn key(n: i64) -> JoinKey {
        JoinKey::from_elem(Value::Integer(n), 1)
    }

    #[test]
    fn a_key_keeps_its_live_rows_in_order_and_notes_the_earliest() {
        let mut arena = RowArena::default();
        let mut kept = KeyRows::default();
        for (time, name) in [(5, "a"), (30, "b"), (1, "c"), (20, "d"), (40, "e")] {
            kept.push(&mut arena, &encoded(&row(time, name)), None);
        }
        kept.retain_live(&mut arena, 0, |time| time >= 10, |_| {});
        let rows: Vec<Row> = kept.rows(&arena).collect();
        assert_eq!(rows, [row(30, "b"), row(20, "d"), row(40, "e")]);
        assert_eq!((kept.len(), kept.earliest), (3, 20));
        kept.retain_live(&mut arena, 0, |time| time > 40, |_| {});
        assert_eq!((kept.len(), kept.rows(&arena).count()), (0, 0));
        assert_eq!(arena.held(), 0, "a chunk without live rows frees its bytes");
    }

    #[test]
    fn a_key_knows_its_earliest_time_as_rows_are_added() {
        let mut arena = RowArena::default();
        let mut kept = KeyRows::default();
        kept.push(&mut arena, &encoded(&row(30, "a")), Some(30));
        kept.push(&mut arena, &encoded(&row(20, "b")), Some(20));
        kept.push(&mut arena, &encoded(&row(25, "c")), Some(25));
        assert_eq!(kept.earliest, 20);
        // A row without a time makes it unknown, until an expiry scans the rows.
        let untimed = encoded(&[Value::Null, Value::Text("d".into())]);
        kept.push(&mut arena, &untimed, None);
        assert_eq!(kept.earliest, UNKNOWN);
        kept.retain_live(&mut arena, 0, |time| time >= 21, |_| {});
        assert_eq!((kept.len(), kept.earliest), (2, 25));
    }

    #[test]
    fn a_side_is_saved_whole_as_its_keys_lists_of_rows() {
        let mut side = SideRows::default();
        side.push(&key(7), &encoded(&row(1, "a")), None);
        side.push(&key(7), &encoded(&row(2, "b")), None);
        let json = serde_json::to_string(&side).unwrap();
        assert_eq!(
            json,
            r#"[[[{"Integer":7}],[[{"Integer":1},{"Text":"a"}],[{"Integer":2},{"Text":"b"}]]]]"#
        );
        let back: SideRows = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let uneven = r#"[[[{"Integer":7}],[[{"Integer":1}],[{"Integer":2},{"Text":"b"}]]]]"#;
        assert!(serde_json::from_str::<SideRows>(uneven).is_err());
    }

    #[test]
    fn a_key_writes_the_postcard_serde_would_and_reads_it_back() {
        let mut side = SideRows::default();
        let rows = [
            vec![
                Value::Integer(-3),
                Value::Text("x".repeat(200)),
                Value::Null,
            ],
            vec![
                Value::Float(0.5),
                Value::Bytes(vec![7]),
                Value::Boolean(true),
            ],
        ];
        for kept in &rows {
            side.push(&key(1), &encoded(kept), None);
        }
        let mut by_hand = Vec::new();
        side.keys
            .get(&key(1))
            .unwrap()
            .write_postcard(&side.arena, &mut by_hand);
        assert_eq!(by_hand, postcard::to_allocvec(&rows[..]).unwrap());

        let mut entries = ChangelogEntriesBuilder::default();
        assert_eq!(side.take_changes(b"p", false, &mut entries), 1);
        let mut restored = SideRows::default();
        for entry in entries.finish().iter() {
            let (entry_key, value) = entry.unwrap();
            assert!(restored.apply(&entry_key[1..], value));
        }
        assert_eq!(restored.row(&key(1), 1), rows[1]);
        assert_eq!(
            serde_json::to_string(&restored).unwrap(),
            serde_json::to_string(&side).unwrap()
        );
    }

    #[test]
    fn rows_applied_again_replace_the_key_s_and_free_theirs() {
        let mut side = SideRows::default();
        let value = |rows: &[Row]| [&[1][..], &postcard::to_allocvec(rows).unwrap()].concat();
        let name = br#"[{"Integer":3}]"#;
        assert!(side.apply(name, Some(&value(&[row(1, "a"), row(2, "b")]))));
        assert!(side.apply(name, Some(&value(&[row(3, "c")]))));
        assert_eq!(side.keys.get(&key(3)).unwrap().len(), 1);
        assert_eq!(side.arena.live, encoded(&row(3, "c")).len());
        assert!(side.apply(name, None));
        assert_eq!((side.keys.len(), side.arena.live), (0, 0));
        assert!(!side.apply(b"not json", None));
    }

    #[test]
    fn rows_going_in_the_order_they_came_free_their_chunks_whole() {
        let mut side = SideRows::default();
        let text = "x".repeat(1_000);
        for time in 0..1_000 {
            side.push(&key(time % 10), &encoded(&row(time, &text)), Some(time));
            if time % 100 == 99 {
                side.forget(0, |at| at > time - 200, false);
            }
        }
        // About 200 rows of 1 KB live: 4 chunks of 64 KB at most, not the 16 written.
        let live = side.arena.live;
        assert!((190_000..210_000).contains(&live), "{live}");
        assert!(side.arena.chunks.len() <= 5, "{}", side.arena.chunks.len());
        let times: Vec<i64> = side
            .keys
            .iter()
            .flat_map(|(_, kept)| kept.rows(&side.arena))
            .map(|row| match row[0] {
                Value::Integer(time) => time,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(times.len(), 200);
        assert!(times.iter().all(|time| (800..1_000).contains(time)));
    }

    #[test]
    fn a_side_whose_rows_stay_scattered_copies_them_into_a_new_arena() {
        let mut side = SideRows::default();
        let text = "y".repeat(500);
        // Every tenth row stays: no chunk empties, so only a copy frees the others' bytes.
        for time in 0..2_000 {
            side.push(&key(time), &encoded(&row(time, &text)), Some(time));
        }
        side.forget(0, |time| time % 10 == 0, false);
        assert!(!side.arena.wasteful());
        assert_eq!(side.arena.held(), side.arena.live);
        assert_eq!(side.keys.len(), 200);
        for time in (0..2_000).step_by(10) {
            assert_eq!(side.row(&key(time), 0), row(time, &text));
        }
    }

    #[test]
    fn a_row_taken_back_leaves_its_key_and_the_last_takes_the_key() {
        let mut side = SideRows::default();
        let (first, second) = (encoded(&row(1, "a")), encoded(&row(2, "b")));
        side.push(&key(1), &first, None);
        side.push(&key(1), &second, None);
        assert!(side.remove_equal(&key(1), &first, false));
        assert!(!side.remove_equal(&key(1), &first, false));
        assert_eq!(side.row(&key(1), 0), row(2, "b"));
        assert!(side.remove_equal(&key(1), &second, false));
        assert!(side.keys.is_empty());
        assert_eq!(side.arena.live, 0);
    }
}
