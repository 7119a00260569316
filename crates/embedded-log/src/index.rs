//! The sparse offset index of a segment: for some batches, the batch's first offset
//! (relative to the segment's base offset) and its byte position in the segment file.
//!
//! An entry is written for the first batch of a segment and then for the first batch that
//! starts at least [`INTERVAL_BYTES`] after the previous entry, so finding an offset means a
//! binary search and then reading forward at most that many bytes plus one batch. The index
//! file is never synced: it is derived from the segment, checked when the log opens and
//! rebuilt from the segment when it is missing or does not match.

/// Bytes of log between two index entries, at least.
pub(crate) const INTERVAL_BYTES: u64 = 4096;
/// The size of one entry in the index file.
pub(crate) const ENTRY_LEN: usize = 8;

/// One index entry: a batch starts at `position` with offset `base + relative_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// The batch's first offset minus the segment's base offset.
    pub(crate) relative_offset: u32,
    /// The batch's byte position in the segment file.
    pub(crate) position: u32,
}

impl IndexEntry {
    /// The entry as stored: relative offset then position, little-endian.
    pub(crate) fn to_bytes(self) -> [u8; ENTRY_LEN] {
        let mut bytes = [0; ENTRY_LEN];
        bytes[..4].copy_from_slice(&self.relative_offset.to_le_bytes());
        bytes[4..].copy_from_slice(&self.position.to_le_bytes());
        bytes
    }
}

/// Parses an index file, or `None` when it is not a well-formed index of a segment of
/// `segment_len` bytes: a whole number of entries, the first at position 0, offsets and
/// positions strictly increasing, every position inside the segment.
pub(crate) fn parse(bytes: &[u8], segment_len: u64) -> Option<Vec<IndexEntry>> {
    if !bytes.len().is_multiple_of(ENTRY_LEN) {
        return None;
    }
    let entries: Vec<IndexEntry> = bytes
        .chunks_exact(ENTRY_LEN)
        .map(|chunk| IndexEntry {
            relative_offset: u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
            position: u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]),
        })
        .collect();
    let starts_at_zero = entries.first().is_none_or(|first| first.position == 0);
    let increasing = entries.windows(2).all(|pair| {
        pair[0].relative_offset < pair[1].relative_offset && pair[0].position < pair[1].position
    });
    let inside = entries
        .last()
        .is_none_or(|last| u64::from(last.position) < segment_len);
    (starts_at_zero && increasing && inside).then_some(entries)
}

/// The last entry at or before `relative_offset`, or the start of the segment.
pub(crate) fn lookup(entries: &[IndexEntry], relative_offset: u64) -> IndexEntry {
    let after =
        entries.partition_point(|entry| u64::from(entry.relative_offset) <= relative_offset);
    after.checked_sub(1).map_or(
        IndexEntry {
            relative_offset: 0,
            position: 0,
        },
        |at| entries[at],
    )
}

/// Whether a batch at `position` deserves an entry, given the entries so far.
pub(crate) fn wants_entry(entries: &[IndexEntry], position: u64) -> bool {
    entries
        .last()
        .is_none_or(|last| position >= u64::from(last.position) + INTERVAL_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(relative_offset: u32, position: u32) -> IndexEntry {
        IndexEntry {
            relative_offset,
            position,
        }
    }

    #[test]
    fn lookup_finds_the_last_entry_at_or_before() {
        let entries = [entry(0, 0), entry(10, 5000), entry(20, 9000)];
        assert_eq!(lookup(&entries, 0), entry(0, 0));
        assert_eq!(lookup(&entries, 9), entry(0, 0));
        assert_eq!(lookup(&entries, 10), entry(10, 5000));
        assert_eq!(lookup(&entries, 25), entry(20, 9000));
        assert_eq!(lookup(&[], 25), entry(0, 0));
    }

    #[test]
    fn parse_accepts_what_was_written_and_refuses_nonsense() {
        let entries = [entry(0, 0), entry(10, 5000)];
        let bytes: Vec<u8> = entries.iter().flat_map(|entry| entry.to_bytes()).collect();
        assert_eq!(parse(&bytes, 6000).unwrap(), entries);
        assert!(
            parse(&bytes, 5000).is_none(),
            "a position past the segment's end"
        );
        assert!(parse(&bytes[..12], 6000).is_none(), "a torn entry");
        let backwards: Vec<u8> = [entry(0, 0), entry(10, 5000), entry(5, 6000)]
            .iter()
            .flat_map(|entry| entry.to_bytes())
            .collect();
        assert!(parse(&backwards, 9000).is_none());
    }

    #[test]
    fn entries_are_spaced_by_the_interval() {
        let entries = [entry(0, 0)];
        assert!(wants_entry(&[], 0));
        assert!(!wants_entry(&entries, INTERVAL_BYTES - 1));
        assert!(wants_entry(&entries, INTERVAL_BYTES));
    }
}
