//! Reading a partition's keyed state back from its changelog.

use bytes::Bytes;
use runnel_backend::ReaderConfig;

use super::changelog_entries::{ReplayTarget, read_entries};
use super::store::PartitionStore;
use crate::checkpoint::{CHANGELOG_WRITER_HEADER, ChangelogRange, CheckpointSource, read_to};
use crate::{Result, StateError};

/// After this many owners since the last snapshot (ranges in the checkpoint), the next
/// checkpoint is a snapshot, so checkpoint records stay small.
pub const MAX_RANGES: usize = 8;

impl ReplayTarget for PartitionStore {
    fn held_entries(&self) -> u64 {
        self.len() as u64
    }

    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        PartitionStore::apply(self, key, value)
    }

    fn mark_changed(&mut self, key: &[u8]) {
        PartitionStore::mark_changed(self, key);
    }
}

/// What a restore read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Entries applied to the state.
    pub applied: u64,
    /// Entries of records outside the state's ranges (written after an owner's last
    /// checkpoint, or by an owner a rebalance replaced); their keys are written again at the
    /// next checkpoint.
    pub skipped: u64,
    /// The offset after the last record read: where reading the partition would go on.
    pub position: u64,
}

/// Which records of a changelog partition a replay reads: from the start of the state's
/// first range to the partition's end, unless told otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Go on from here: a warm copy of the state has read the records before.
    pub from: Option<u64>,
    /// Stop here (exclusive), if before the partition's end.
    pub to: Option<u64>,
}

/// Replays the records of changelog partition `partition` that `ranges` name into `store`,
/// in order, reading what `reading` says. Records after the first range that are in none (an
/// owner's changes after its last checkpoint) are skipped, and their keys marked changed:
/// the next checkpoint writes them again as the state has them, so the last record of every
/// key is the state's (which is what a compacted changelog keeps).
pub async fn replay(
    source: &CheckpointSource,
    partition: u32,
    ranges: &[ChangelogRange],
    store: &mut impl ReplayTarget,
    reading: Reading,
) -> Result<Replayed> {
    let topic = source.changelog.as_deref().ok_or(StateError::NoChangelog)?;
    let failed = |source| StateError::Read {
        topic: topic.to_owned(),
        partition,
        source,
    };
    let backend = &*source.backend;
    let ends = backend.offsets(topic).await.map_err(failed)?;
    let Some(bounds) = ends.get(partition as usize) else {
        return Ok(Replayed::default());
    };
    let from = reading
        .from
        .or(ranges.first().map(|range| range.from))
        .unwrap_or(bounds.start);
    if from < bounds.start {
        return Err(StateError::Deleted {
            topic: topic.to_owned(),
            partition,
            start: bounds.start,
            needed: from,
        });
    }
    // The ranges end at offsets the log acknowledged: read at least to the last of them,
    // whatever end the log reports (tansu reports the first offset of its last batch plus
    // one, which a restore must not take for the end of what the checkpoint names).
    let named_end = ranges
        .iter()
        .filter_map(|range| range.to)
        .max()
        .unwrap_or(0);
    let log_end = bounds.end.max(named_end);
    let end = reading.to.map_or(log_end, |to| to.min(log_end));
    if from >= end {
        return Ok(Replayed {
            position: from,
            ..Replayed::default()
        });
    }
    // The partition alone, from `from`, in no group: nothing to join before reading.
    let reader = backend
        .partition_reader(&ReaderConfig::new(topic, partition, from))
        .await
        .map_err(failed)?;
    let mut replayed = Replayed {
        position: end,
        ..Replayed::default()
    };
    let mut skipped_keys = Vec::new();
    let mut invalid = None;
    let read = read_to(&*reader, topic, partition, end, 1024, |consumed| {
        if invalid.is_some() {
            return;
        }
        let record = &consumed.record;
        let writer = record
            .headers
            .get_str(CHANGELOG_WRITER_HEADER)
            .and_then(|writer| u64::from_str_radix(writer, 16).ok());
        let in_state = ranges
            .iter()
            .any(|range| range.contains(consumed.offset, writer));
        let read = read_entries(record, |key, value| {
            if in_state {
                replayed.applied += 1;
                store.apply(key, value)
            } else {
                skipped_keys.push(Bytes::copy_from_slice(key));
                replayed.skipped += 1;
                true
            }
        });
        if let Err(problem) = read {
            invalid = Some((consumed.offset, problem));
        }
    })
    .await;
    drop(reader);
    read.map_err(failed)?;
    if let Some((offset, reason)) = invalid {
        return Err(StateError::NotAnEntry {
            topic: topic.to_owned(),
            partition,
            offset,
            reason: reason.to_string(),
        });
    }
    for key in skipped_keys {
        store.mark_changed(&key);
    }
    Ok(replayed)
}
