//! Checkpoint records: the state of a stateful streamlet, stored together with the input
//! offsets it reflects, as one record of the instance's checkpoint topic; how to write one
//! and how to read the last one back.
//!
//! The checkpoint topic is `<app>.<instance>.checkpoints`. A record's value is the state
//! (opaque bytes, the streamlet's own format); its key is the instance name; header
//! `runnel.checkpoint.offsets` holds the offsets as JSON,
//! `[{"inlet": "in", "topic": "scores", "partition": 0, "offset": 42}, ...]` (each the next
//! offset to read), and `runnel.checkpoint.format` is `1`. A streamlet checkpointed by input
//! partition writes the checkpoint of input partition `p` to partition `p`.
//!
//! A streamlet with keyed state writes its state incrementally: the entries changed since the
//! last checkpoint go to the same partition of its changelog topic `<app>.<instance>.changelog`
//! first, and the checkpoint record then says, in header `runnel.checkpoint.changelog`, which
//! records of that partition make up the state (see [`ChangelogRange`]).
//!
//! `runnel-streamlet`'s `Checkpoints` is what a streamlet saves and restores through, and
//! `runnel-host`'s committer writes the records ([`record`]); both meet here.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, ConsumedRecord, PartitionReader, ReaderConfig, Record};
use runnel_event_time::changelog_entries::{ChangelogEntries, read_entries};
use serde::{Deserialize, Serialize};

/// The header holding a checkpoint's input offsets.
pub const OFFSETS_HEADER: &str = "runnel.checkpoint.offsets";
/// The header holding the ranges of the changelog partition that make up a keyed state.
pub const CHANGELOG_HEADER: &str = "runnel.checkpoint.changelog";
const FORMAT_HEADER: &str = "runnel.checkpoint.format";
const FORMAT: &str = "1";

/// The checkpoint topic of an instance.
///
/// ```
/// assert_eq!(runnel_state::checkpoint::checkpoint_topic("scores", "totals"), "scores.totals.checkpoints");
/// ```
pub fn checkpoint_topic(app: &str, instance: &str) -> String {
    format!("{app}.{instance}.checkpoints")
}

/// The changelog topic of an instance with keyed state.
///
/// ```
/// assert_eq!(runnel_state::checkpoint::changelog_topic("fraud", "card-stats"), "fraud.card-stats.changelog");
/// ```
pub fn changelog_topic(app: &str, instance: &str) -> String {
    format!("{app}.{instance}.changelog")
}

/// Records of one partition of a changelog topic that belong to a keyed state: those from
/// offset `from` up to `to` (exclusive; to the end when `None`) written by `writer` (any
/// writer when `None`).
///
/// At least once, each partition owner (a process, from its restore of the partition on)
/// writes under an identity of its own, and its checkpoints extend its range. What an owner
/// wrote after its last checkpoint, before it crashed, lies outside every range, as do the
/// late records of an owner a rebalance replaced, so restores skip both. Exactly once, the
/// checkpoint commits in the transaction of its changelog records, so one open range from
/// the last snapshot on, read committed, is the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangelogRange {
    /// The first offset of the range.
    pub from: u64,
    /// The offset after the range; `None`: to the end of the partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
    /// The identity the range's records carry in header
    /// [`CHANGELOG_WRITER_HEADER`]; `None`: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<u64>,
}

impl ChangelogRange {
    /// Whether the record at `offset`, written by `writer`, is in the range.
    ///
    /// ```
    /// use runnel_state::checkpoint::ChangelogRange;
    /// let range = ChangelogRange { from: 10, to: Some(20), writer: Some(7) };
    /// assert!(range.contains(10, Some(7)) && !range.contains(20, Some(7)));
    /// assert!(!range.contains(12, Some(8)) && !range.contains(12, None));
    /// let open = ChangelogRange { from: 10, to: None, writer: None };
    /// assert!(open.contains(1_000, Some(8)) && !open.contains(9, None));
    /// ```
    pub fn contains(&self, offset: u64, writer: Option<u64>) -> bool {
        offset >= self.from
            && self.to.is_none_or(|to| offset < to)
            && self.writer.is_none_or(|expected| writer == Some(expected))
    }
}

/// The header naming the writer of a changelog record (hexadecimal).
pub const CHANGELOG_WRITER_HEADER: &str = "runnel.changelog.writer";

pub use runnel_event_time::changelog_entries::CHANGELOG_ENTRIES_HEADER;

/// The entries a changelog record holds, in order, each a key and its value (`None`:
/// deleted): the record's own key and value for a record of one entry (a compacted
/// changelog's), or the many a record with [`CHANGELOG_ENTRIES_HEADER`] holds. `None` if the
/// record is neither.
///
/// ```
/// use runnel_backend::Record;
/// use runnel_state::checkpoint::changelog_entries;
///
/// let one = Record::null().with_key("gone");
/// assert_eq!(changelog_entries(&one), Some(vec![("gone".into(), None)]));
/// assert_eq!(changelog_entries(&Record::new("no key")), None);
/// ```
pub fn changelog_entries(record: &Record) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let mut entries = Vec::new();
    read_entries(record, |key, value| {
        entries.push((
            Bytes::copy_from_slice(key),
            value.map(Bytes::copy_from_slice),
        ));
        true
    })
    .ok()?;
    Some(entries)
}

/// The next offset to read on one partition of one inlet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InletOffset {
    /// The inlet's name.
    pub inlet: String,
    /// The topic it reads.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The next offset to read.
    pub offset: u64,
}

/// A checkpoint read back.
#[derive(Debug)]
pub struct Restored {
    /// The saved state.
    pub state: Bytes,
    /// Where each inlet resumes.
    pub offsets: Vec<InletOffset>,
    /// Keyed state: the records of the changelog partition that make up the state.
    pub changelog: Vec<ChangelogRange>,
}

/// Why the last checkpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The checkpoint topic could not be read.
    #[error("reading the checkpoint topic '{topic}' failed")]
    Read {
        /// The checkpoint topic.
        topic: String,
        /// What the backplane said.
        #[source]
        source: runnel_backend::Error,
    },
    /// The last record is not a checkpoint this version understands.
    #[error(
        "the last record of checkpoint topic '{topic}' (offset {offset}) is not a checkpoint: {reason}"
    )]
    Invalid {
        /// The checkpoint topic.
        topic: String,
        /// The record's offset.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// The checkpoint topic of an instance, for reading partitions' checkpoints back.
#[derive(Debug)]
pub struct CheckpointSource {
    /// The backplane holding the topics.
    pub backend: Arc<dyn Backend>,
    /// The checkpoint topic.
    pub topic: String,
    /// The changelog topic, for an instance with keyed state.
    pub changelog: Option<String>,
}

/// What a checkpoint saves: the instance's whole state, or states by input partition.
#[derive(Debug)]
pub enum SavedState {
    /// The instance's whole state: the checkpoint record's value, and, for a state with a
    /// changelog, the entries changed since the last checkpoint (for partition 0 of the
    /// changelog, which the record then names).
    Whole {
        /// The checkpoint record's value.
        state: Bytes,
        /// The entries for the changelog, if the state keeps one.
        changes: Option<ChangelogBatch>,
    },
    /// States by input partition.
    Partitions(Vec<PartitionSave>),
}

/// The checkpoint of one input partition.
#[derive(Debug)]
pub struct PartitionSave {
    /// The input partition.
    pub partition: u32,
    /// The checkpoint record's value.
    pub state: Bytes,
    /// Keyed state: the entries changed since the last checkpoint, for the changelog.
    pub changes: Option<ChangelogBatch>,
}

/// The changelog entries of one checkpoint of one partition.
#[derive(Debug)]
pub struct ChangelogBatch {
    /// The entries changed (every entry, for a snapshot).
    pub entries: ChangelogEntries,
    /// Whether the entries are the whole state, so earlier records are no longer needed.
    pub snapshot: bool,
    /// The identity of this owner of the partition.
    pub writer: u64,
}

/// The record of a checkpoint (with the changelog ranges of a keyed state).
pub fn record(
    instance: &str,
    state: Bytes,
    offsets: &[InletOffset],
    changelog: Option<&[ChangelogRange]>,
) -> Record {
    let offsets = serde_json::to_vec(offsets).expect("offsets serialize");
    let record = Record::new(state)
        .with_key(instance.to_owned())
        .with_header(FORMAT_HEADER, FORMAT)
        .with_header(OFFSETS_HEADER, offsets);
    match changelog {
        Some(ranges) => record.with_header(
            CHANGELOG_HEADER,
            serde_json::to_vec(ranges).expect("ranges serialize"),
        ),
        None => record,
    }
}

/// How long reading the checkpoint topic waits for records before taking what it read as
/// everything there is (for a backplane whose reader does not move past a final
/// transaction marker).
const READ_QUIET: Duration = Duration::from_secs(2);

/// The last checkpoint in `topic`, if any. Read committed: after an exactly-once instance
/// crashed, the checkpoint of its aborted transaction is not the last one, so the reader
/// looks further back from the end until it finds a committed one.
pub async fn read_last(
    backend: &dyn Backend,
    topic: &str,
    number: u32,
) -> Result<Option<Restored>, CheckpointError> {
    let read = |source| CheckpointError::Read {
        topic: topic.to_owned(),
        source,
    };
    let ends = backend.offsets(topic).await.map_err(read)?;
    let Some(partition) = ends.get(number as usize) else {
        return Ok(None);
    };
    if partition.end <= partition.start {
        return Ok(None);
    }
    // Usually the last record is the last checkpoint; transaction markers and aborted
    // checkpoints can come after it. A reader of the partition alone, in no group, so
    // members restoring at the same time never wait for each other.
    let mut window = 1;
    let last = loop {
        let from = partition.end.saturating_sub(window).max(partition.start);
        let reader = backend
            .partition_reader(&ReaderConfig::new(topic, number, from))
            .await
            .map_err(read)?;
        let last = last_record(&*reader, topic, number, partition.end)
            .await
            .map_err(read)?;
        if last.is_some() || from == partition.start {
            break last;
        }
        window = window.saturating_mul(8);
    };
    let Some(consumed) = last else {
        return Ok(None); // nothing but aborted checkpoints
    };
    let invalid = |reason: String| CheckpointError::Invalid {
        topic: topic.to_owned(),
        offset: consumed.offset,
        reason,
    };
    let headers = &consumed.record.headers;
    if headers.get_str(FORMAT_HEADER) != Some(FORMAT) {
        return Err(invalid(format!("header {FORMAT_HEADER} is not {FORMAT}")));
    }
    let offsets = headers
        .get(OFFSETS_HEADER)
        .ok_or_else(|| invalid(format!("header {OFFSETS_HEADER} is missing")))?;
    let offsets = serde_json::from_slice(offsets).map_err(|error| invalid(error.to_string()))?;
    let changelog = match headers.get(CHANGELOG_HEADER) {
        Some(ranges) => {
            serde_json::from_slice(ranges).map_err(|error| invalid(error.to_string()))?
        }
        None => Vec::new(),
    };
    let state = consumed.record.value.clone().ok_or_else(|| {
        invalid("its value is null, where a checkpoint holds the state".to_owned())
    })?;
    Ok(Some(Restored {
        state,
        offsets,
        changelog,
    }))
}

/// The last record `reader` reads from its position up to `end` of partition `number`.
async fn last_record(
    reader: &dyn PartitionReader,
    topic: &str,
    number: u32,
    end: u64,
) -> Result<Option<ConsumedRecord>, runnel_backend::Error> {
    let mut last = None;
    read_to(reader, topic, number, end, 16, |record| last = Some(record)).await?;
    Ok(last)
}

/// Hands `visit` every record `reader` reads from its position up to `end` of partition
/// `number`, in order. It stops once the reader's position reaches `end`, or after
/// `READ_QUIET` (2 s) without records when at most one offset is left (a final transaction
/// marker a reader may not move past). Further behind, a read-committed reader waits at
/// an open transaction (a crashed producer's, until the log aborts it after its
/// transaction timeout): what comes after it is part of what must be read, so it waits up
/// to `OPEN_TRANSACTION_WAIT` (75 s) before taking what it read.
pub async fn read_to(
    reader: &dyn PartitionReader,
    topic: &str,
    number: u32,
    end: u64,
    batch: usize,
    mut visit: impl FnMut(ConsumedRecord),
) -> Result<(), runnel_backend::Error> {
    let mut quiet_since = tokio::time::Instant::now();
    loop {
        // A reader knows its positions from the start; one that does not list the
        // partition has nothing of it to hand out.
        let position = reader
            .positions()
            .into_iter()
            .find(|(partition, _)| &*partition.topic == topic && partition.partition == number)
            .map_or(end, |(_, position)| position);
        if position >= end {
            return Ok(());
        }
        match tokio::time::timeout(READ_QUIET, reader.poll(batch)).await {
            Ok(records) => {
                let records = records?;
                if !records.is_empty() {
                    quiet_since = tokio::time::Instant::now();
                }
                for record in records {
                    if record.partition == number && record.offset < end {
                        visit(record);
                    }
                }
            }
            Err(_) if position + 1 >= end => return Ok(()),
            Err(_) if quiet_since.elapsed() < OPEN_TRANSACTION_WAIT => {}
            Err(_) => {
                tracing::warn!(
                    topic,
                    partition = number,
                    position,
                    end,
                    "reading stopped short of the end after waiting {} s at what looks like an open transaction",
                    OPEN_TRANSACTION_WAIT.as_secs()
                );
                return Ok(());
            }
        }
    }
}

/// An identity no other process or call is likely to have: for changelog writers.
pub fn unique_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.write_u64(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.finish()
}

/// How long a read-committed reader of a checkpoint or changelog partition waits at an open
/// transaction: past the default transaction timeout (60 s), after which the log aborts it.
const OPEN_TRANSACTION_WAIT: Duration = Duration::from_secs(75);
