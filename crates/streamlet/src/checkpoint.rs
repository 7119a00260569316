//! Checkpoints: the state of a stateful streamlet, stored together with the input offsets
//! it reflects, as one record of the instance's checkpoint topic.
//!
//! A checkpointed streamlet (its [`Shape`](crate::Shape) says
//! [`checkpointed`](crate::Shape::checkpointed)) commits its inputs as usual, but the
//! runtime writes those commits only with a checkpoint: when the streamlet saves its state
//! ([`Checkpoints::save`]), the committer waits until every output sent before is
//! acknowledged, appends one record holding the state and the offsets of every input
//! committed before the save, waits until that record is durable, and only then commits the
//! offsets to the consumer groups. One record is one atomic unit: after a crash the last
//! checkpoint holds a state and exactly the inputs it reflects. On restart the host reads
//! the last checkpoint, positions every inlet at its offsets, and hands the state back
//! ([`Checkpoints::restored`]). An exactly-once instance writes each checkpoint in the
//! transaction of the outputs sent before it, with the offsets, and restores from the last
//! committed one (readers read committed, so an aborted checkpoint is never restored).
//!
//! The checkpoint topic is `<app>.<instance>.checkpoints`, one partition. A record's value
//! is the state (opaque bytes, the streamlet's own format); its key is the instance name;
//! header `runnel.checkpoint.offsets` holds the offsets as JSON,
//! `[{"inlet": "in", "topic": "scores", "partition": 0, "offset": 42}, ...]` (each the next
//! offset to read), and `runnel.checkpoint.format` is `1`.
//!
//! A streamlet with [keyed state](crate::state) writes its state incrementally instead: the
//! entries changed since the last checkpoint go to the same partition of its changelog topic
//! `<app>.<instance>.changelog` first, and the checkpoint record then says, in header
//! `runnel.checkpoint.changelog`, which records of that partition make up the state (see
//! [`ChangelogRange`]).

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, ConsumedRecord, PartitionReader, ReaderConfig, Record};
use serde::{Deserialize, Serialize};

use crate::acknowledgement::Acknowledgements;
use crate::state::changelog_entries::ChangelogEntries;

/// The header holding a checkpoint's input offsets.
pub const OFFSETS_HEADER: &str = "runnel.checkpoint.offsets";
/// The header holding the ranges of the changelog partition that make up a keyed state.
pub const CHANGELOG_HEADER: &str = "runnel.checkpoint.changelog";
const FORMAT_HEADER: &str = "runnel.checkpoint.format";
const FORMAT: &str = "1";

/// The checkpoint topic of an instance.
///
/// ```
/// assert_eq!(runnel_streamlet::checkpoint_topic("scores", "totals"), "scores.totals.checkpoints");
/// ```
pub fn checkpoint_topic(app: &str, instance: &str) -> String {
    format!("{app}.{instance}.checkpoints")
}

/// The changelog topic of an instance with keyed state.
///
/// ```
/// assert_eq!(runnel_streamlet::checkpoint::changelog_topic("fraud", "card-stats"), "fraud.card-stats.changelog");
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
    /// use runnel_streamlet::checkpoint::ChangelogRange;
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
/// use runnel_streamlet::checkpoint::changelog_entries;
///
/// let one = Record::null().with_key("gone");
/// assert_eq!(changelog_entries(&one), Some(vec![("gone".into(), None)]));
/// assert_eq!(changelog_entries(&Record::new("no key")), None);
/// ```
pub fn changelog_entries(record: &Record) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let mut entries = Vec::new();
    crate::state::changelog_entries::read_entries(record, |key, value| {
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
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
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
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
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
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
pub enum CheckpointError {
    /// The checkpoint topic could not be read.
    #[error("reading the checkpoint topic '{topic}' failed")]
    Read {
        topic: String,
        #[source]
        source: runnel_backend::Error,
    },
    /// The last record is not a checkpoint this version understands.
    #[error(
        "the last record of checkpoint topic '{topic}' (offset {offset}) is not a checkpoint: {reason}"
    )]
    Invalid {
        topic: String,
        offset: u64,
        reason: String,
    },
}

/// The state of a stateful streamlet: what it restored at start, and how to save more.
///
/// Get it with [`Context::checkpoints`](crate::Context::checkpoints); only streamlets whose
/// shape is [`checkpointed`](crate::Shape::checkpointed) have one.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// const IN: Inlet<i64> = Inlet::new("in");
///
/// /// Keeps a running total across restarts.
/// struct Total;
///
/// impl Streamlet for Total {
///     fn shape(&self) -> Shape {
///         Shape::new().inlet(IN).checkpointed()
///     }
///
///     async fn run(self, mut ctx: Context) -> Result<()> {
///         let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
///         let mut total: i64 = match checkpoints.restored() {
///             Some(state) => serde_json::from_slice(state)?,
///             None => 0,
///         };
///         let mut input = ctx.inlet(IN);
///         while let Some(message) = input.next().await? {
///             total += message.value();
///             message.commit(); // reflected in `total`; written with the next checkpoint
///             checkpoints.save(serde_json::to_vec(&total)?);
///         }
///         Ok(())
///     }
/// }
/// # let _ = Total;
/// ```
#[derive(Clone, Debug)]
pub struct Checkpoints {
    acknowledgements: Acknowledgements,
    restored: Option<Bytes>,
    /// Where checkpoints split by partition are read back from.
    source: Arc<CheckpointSource>,
}

/// The checkpoint topic of an instance, for reading partitions' checkpoints back.
#[derive(Debug)]
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
pub struct CheckpointSource {
    /// The backplane holding the topics.
    pub backend: Arc<dyn Backend>,
    /// The checkpoint topic.
    pub topic: String,
    /// The changelog topic, for an instance with keyed state.
    pub changelog: Option<String>,
}

/// The checkpoint of one input partition read back
/// ([`Checkpoints::restore_partition`]): the state saved for the keys of that partition,
/// and where each inlet resumes reading it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionCheckpoint {
    state: Option<Bytes>,
    offsets: Vec<InletOffset>,
    changelog: Vec<ChangelogRange>,
}

impl PartitionCheckpoint {
    /// The state saved for the partition; `None` when it was never checkpointed.
    pub fn state(&self) -> Option<&[u8]> {
        self.state.as_deref()
    }

    /// The next offset `inlet` reads on the partition: records before it are in the state.
    pub fn next_offset(&self, inlet: &str) -> Option<u64> {
        self.offsets
            .iter()
            .find(|offset| offset.inlet == inlet)
            .map(|offset| offset.offset)
    }

    /// The records of the partition's changelog that make up its keyed state (empty without
    /// keyed state, or before its first checkpoint).
    pub fn changelog(&self) -> &[ChangelogRange] {
        &self.changelog
    }
}

impl Checkpoints {
    pub(crate) fn new(
        acknowledgements: Acknowledgements,
        restored: Option<Bytes>,
        source: Arc<CheckpointSource>,
    ) -> Self {
        Checkpoints {
            acknowledgements,
            restored,
            source,
        }
    }

    /// The state of the last checkpoint, when the instance resumes from one. The inlets
    /// are already positioned after the inputs it reflects.
    pub fn restored(&self) -> Option<&[u8]> {
        self.restored.as_deref()
    }

    /// Saves `state` as reflecting every input committed before this call. It is written
    /// once every output sent before it is acknowledged; those input offsets are committed
    /// with it, atomically. Returns at once.
    ///
    /// An exactly-once streamlet's save also commits its transaction: the outputs sent
    /// before it, the checkpoint and the offsets become visible together, and its next send
    /// waits until they have. It must hold no uncommitted message when it saves (the
    /// instance fails if it does).
    pub fn save(&self, state: impl Into<Bytes>) {
        self.acknowledgements
            .checkpoint(SavedState::Whole(state.into()));
    }

    /// Saves the states of input partitions, for a streamlet whose shape is
    /// [`checkpointed_by_partition`](crate::Shape::checkpointed_by_partition): each
    /// reflects every input committed on its partition before this call, and is written to
    /// that partition of the checkpoint topic with the partition's offsets, which are then
    /// committed. Partitions left out keep their offsets staged for a later save. Returns at
    /// once.
    pub fn save_partitions(&self, states: Vec<(u32, Bytes)>) {
        let states: Vec<PartitionSave> = states
            .into_iter()
            .map(|(partition, state)| PartitionSave {
                partition,
                state,
                changes: None,
            })
            .collect();
        if !states.is_empty() {
            self.acknowledgements
                .checkpoint(SavedState::Partitions(states));
        }
    }

    /// Saves keyed state: per partition, its changelog entries and its small state.
    pub(crate) fn save_changes(&self, states: Vec<PartitionSave>) {
        if !states.is_empty() {
            self.acknowledgements
                .checkpoint(SavedState::Partitions(states));
        }
    }

    /// Exactly once: partitions in `revoked` were assigned to another member while this
    /// instance's open transaction may hold work on them (outputs, state changes). That
    /// transaction must not commit (the new owner redoes the work from the last committed
    /// checkpoint, and the backplane refuses offsets of partitions this member lost), so the
    /// instance stops with an error and is restarted from its last checkpoints. At least
    /// once, the revoked partitions are saved and dropped as usual.
    pub(crate) fn check_revoked(&self, revoked: &[u32]) -> crate::Result<()> {
        if revoked.is_empty() || !self.acknowledgements.is_exactly_once() {
            return Ok(());
        }
        Err(crate::Error::external(Reassigned {
            partitions: revoked.to_vec(),
        }))
    }

    /// Where the checkpoints and the changelog are read back from.
    pub(crate) fn source(&self) -> &Arc<CheckpointSource> {
        &self.source
    }

    /// Reads back the last checkpoint of input `partition` (committed, for an exactly-once
    /// instance), for a streamlet checkpointed by partition that was just assigned it. From
    /// then on, what this instance committed on the partition before is forgotten: commit
    /// only what is read after positioning the inlets at the returned offsets.
    ///
    /// ```
    /// use runnel_streamlet::prelude::*;
    ///
    /// const IN: Inlet<i64> = Inlet::new("in");
    ///
    /// /// A running total per input partition, scaling out with the input's partitions.
    /// struct Totals;
    ///
    /// impl Streamlet for Totals {
    ///     fn shape(&self) -> Shape {
    ///         Shape::new().inlet(IN).checkpointed_by_partition()
    ///     }
    ///
    ///     async fn run(self, mut ctx: Context) -> Result<()> {
    ///         let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
    ///         let mut input = ctx.inlet(IN);
    ///         let mut totals = std::collections::BTreeMap::<u32, i64>::new();
    ///         while let Some(message) = input.next().await? {
    ///             let partition = message.partition();
    ///             if !totals.contains_key(&partition) {
    ///                 let restored = checkpoints.restore_partition(partition).await?;
    ///                 let total = match restored.state() {
    ///                     Some(state) => serde_json::from_slice(state)?,
    ///                     None => 0,
    ///                 };
    ///                 totals.insert(partition, total);
    ///                 if let Some(offset) = restored.next_offset(IN.name()) {
    ///                     drop(message); // read again from the checkpoint's offset
    ///                     input.rewind(partition, offset).await?;
    ///                     continue;
    ///                 }
    ///             }
    ///             *totals.get_mut(&partition).expect("restored") += message.value();
    ///             message.commit();
    ///             let state = serde_json::to_vec(&totals[&partition])?;
    ///             checkpoints.save_partitions(vec![(partition, state.into())]);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// # let _ = Totals;
    /// ```
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::External`](crate::ErrorKind::External) error when the checkpoint
    /// topic cannot be read or its last record there is not a checkpoint.
    pub async fn restore_partition(&self, partition: u32) -> crate::Result<PartitionCheckpoint> {
        let restored = read_last(&*self.source.backend, &self.source.topic, partition)
            .await
            .map_err(crate::Error::external)?;
        if let Some(restored) = &restored {
            tracing::info!(
                partition,
                topic = %self.source.topic,
                bytes = restored.state.len(),
                "resuming from the last checkpoint of an input partition"
            );
        }
        let restored = restored.map_or_else(PartitionCheckpoint::default, |restored| {
            PartitionCheckpoint {
                state: Some(restored.state),
                offsets: restored.offsets,
                changelog: restored.changelog,
            }
        });
        self.acknowledgements.restored(
            partition,
            restored.offsets.clone(),
            restored.changelog.clone(),
        );
        Ok(restored)
    }
}

/// An exactly-once instance lost input partitions in a rebalance with uncommitted work.
#[derive(Debug, thiserror::Error)]
#[error(
    "input partitions {partitions:?} were assigned to another member while this exactly-once instance had uncommitted work on them; its transaction is dropped and it restarts from its last checkpoints"
)]
struct Reassigned {
    partitions: Vec<u32>,
}

/// What a checkpoint saves: the instance's whole state, or states by input partition.
#[derive(Debug)]
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
pub enum SavedState {
    /// The instance's whole state.
    Whole(Bytes),
    /// States by input partition.
    Partitions(Vec<PartitionSave>),
}

/// The checkpoint of one input partition.
#[derive(Debug)]
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
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
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
pub struct ChangelogBatch {
    /// The entries changed (every entry, for a snapshot).
    pub entries: ChangelogEntries,
    /// Whether the entries are the whole state, so earlier records are no longer needed.
    pub snapshot: bool,
    /// The identity of this owner of the partition.
    pub writer: u64,
}

/// The record of a checkpoint (with the changelog ranges of a keyed state).
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
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
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
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
/// [`READ_QUIET`] without records when at most one offset is left (a final transaction
/// marker a reader may not move past). Further behind, a read-committed reader waits at
/// an open transaction (a crashed producer's, until the log aborts it after its
/// transaction timeout): what comes after it is part of what must be read, so it waits up
/// to [`OPEN_TRANSACTION_WAIT`] before taking what it read.
pub(crate) async fn read_to(
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
pub(crate) fn unique_id() -> u64 {
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
