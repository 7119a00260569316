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
//! [`ChangelogRange`]). A whole state can be written so too
//! ([`Shape::checkpointed_with_changelog`](crate::Shape::checkpointed_with_changelog),
//! [`Checkpoints::save_with_changes`]): its changes go to the changelog's one partition.
//! [`TrackedMap`] keeps state by key and writes only the keys changed. A state that can
//! outgrow the log's largest record (1 MB by default on Kafka) must be written so: a
//! checkpoint record holding it whole would be refused.

use bytes::Bytes;
use std::sync::Arc;

use crate::acknowledgement::Acknowledgements;

pub use runnel_event_time::changelog_entries::{
    ChangelogEntries, ChangelogEntriesBuilder, ReplayTarget, Snapshots,
};
pub use runnel_event_time::tracked_map::{Kept, TrackedMap, append_postcard, read_state};
pub use runnel_state::changelog::Replayed;
use runnel_state::changelog::{self, MAX_RANGES, Reading};
use runnel_state::checkpoint::unique_id;
#[doc(hidden)] // for the host, through `runtime`; not part of the author API
pub use runnel_state::checkpoint::{
    CHANGELOG_ENTRIES_HEADER, CHANGELOG_HEADER, CHANGELOG_WRITER_HEADER, ChangelogBatch,
    CheckpointError, CheckpointSource, InletOffset, OFFSETS_HEADER, PartitionSave, Restored,
    SavedState, read_last, record,
};
pub use runnel_state::checkpoint::{
    ChangelogRange, changelog_entries, changelog_topic, checkpoint_topic,
};

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
    /// A whole state with a changelog: the changelog's records that make up the restored
    /// state.
    restored_changelog: Vec<ChangelogRange>,
    /// This instance's identity on a whole state's changelog.
    writer: u64,
    /// Where checkpoints split by partition are read back from.
    source: Arc<CheckpointSource>,
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
        restored: Option<Restored>,
        source: Arc<CheckpointSource>,
    ) -> Self {
        let (restored, restored_changelog) = match restored {
            Some(restored) => (Some(restored.state), restored.changelog),
            None => (None, Vec::new()),
        };
        Checkpoints {
            acknowledgements,
            restored,
            restored_changelog,
            writer: unique_id(),
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
        self.acknowledgements.checkpoint(SavedState::Whole {
            state: state.into(),
            changes: None,
        });
    }

    /// Saves a whole state with a changelog, for a streamlet whose shape is
    /// [`checkpointed_with_changelog`](crate::Shape::checkpointed_with_changelog): `changes`
    /// go to the changelog, and `state` (what is not in the changelog, such as watermarks)
    /// to a checkpoint record naming the changelog's records that make up the state, as
    /// [`save`](Self::save) does otherwise. `changes` are the entries changed since the
    /// last save, or every entry when `snapshot` says so (after which the earlier records are
    /// no longer needed). Returns at once.
    ///
    /// The first save after a start must be a snapshot when
    /// [`snapshot_due`](Self::snapshot_due) says so.
    ///
    /// ```
    /// use runnel_streamlet::checkpoint::{ChangelogEntries, ChangelogEntriesBuilder, ReplayTarget};
    /// use runnel_streamlet::prelude::*;
    /// use std::collections::BTreeMap;
    ///
    /// const LEFT: Inlet<String> = Inlet::new("left");
    /// const RIGHT: Inlet<String> = Inlet::new("right");
    ///
    /// /// Counts each word of two inlets, its counts checkpointed by what changed.
    /// #[derive(Default)]
    /// struct Counts {
    ///     counts: BTreeMap<String, u64>,
    ///     changed: Vec<String>,
    /// }
    ///
    /// impl Counts {
    ///     fn add(&mut self, word: &str) {
    ///         *self.counts.entry(word.to_owned()).or_default() += 1;
    ///         self.changed.push(word.to_owned());
    ///     }
    ///
    ///     fn take_changes(&mut self, snapshot: bool) -> ChangelogEntries {
    ///         let mut entries = ChangelogEntriesBuilder::default();
    ///         let keys: Vec<String> = match snapshot {
    ///             true => self.counts.keys().cloned().collect(),
    ///             false => std::mem::take(&mut self.changed),
    ///         };
    ///         for word in keys {
    ///             let count = self.counts[&word].to_be_bytes();
    ///             entries.value(word.as_bytes(), 8, |buffer| buffer.extend_from_slice(&count));
    ///         }
    ///         self.changed.clear();
    ///         entries.finish()
    ///     }
    /// }
    ///
    /// impl ReplayTarget for Counts {
    ///     fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
    ///         let (Ok(word), Some(Ok(count))) = (
    ///             String::from_utf8(key.to_vec()),
    ///             value.map(<[u8; 8]>::try_from),
    ///         ) else {
    ///             return false;
    ///         };
    ///         self.counts.insert(word, u64::from_be_bytes(count));
    ///         true
    ///     }
    ///
    ///     fn mark_changed(&mut self, key: &[u8]) {
    ///         self.changed.push(String::from_utf8_lossy(key).into_owned());
    ///     }
    ///
    ///     fn held_entries(&self) -> u64 {
    ///         self.counts.len() as u64
    ///     }
    /// }
    ///
    /// struct WordCounts;
    ///
    /// impl Streamlet for WordCounts {
    ///     fn shape(&self) -> Shape {
    ///         Shape::new().inlet(LEFT).inlet(RIGHT).checkpointed_with_changelog()
    ///     }
    ///
    ///     async fn run(self, mut ctx: Context) -> Result<()> {
    ///         let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
    ///         let mut counts = Counts::default();
    ///         checkpoints.replay_changelog(&mut counts).await?;
    ///         let mut snapshot = checkpoints.snapshot_due();
    ///         let (mut left, mut right) = (ctx.inlet(LEFT), ctx.inlet(RIGHT));
    ///         loop {
    ///             let message = tokio::select! {
    ///                 message = left.next() => message?,
    ///                 message = right.next() => message?,
    ///             };
    ///             let Some(message) = message else { break };
    ///             counts.add(message.value());
    ///             message.commit();
    ///             checkpoints.save_with_changes(Vec::new(), counts.take_changes(snapshot), snapshot);
    ///             snapshot = false;
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// # let _ = WordCounts;
    /// ```
    pub fn save_with_changes(
        &self,
        state: impl Into<Bytes>,
        changes: ChangelogEntries,
        snapshot: bool,
    ) {
        self.acknowledgements.checkpoint(SavedState::Whole {
            state: state.into(),
            changes: Some(ChangelogBatch {
                entries: changes,
                snapshot,
                writer: self.writer,
            }),
        });
    }

    /// Reads the changelog's records that make up the restored whole state (of a streamlet
    /// [`checkpointed_with_changelog`](crate::Shape::checkpointed_with_changelog)) into
    /// `target`, in order; nothing when there was no checkpoint. Entries written after the
    /// last checkpoint (by an instance that crashed before its next) are skipped, and their
    /// keys marked changed, so the next save writes them as the state has them.
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::External`](crate::ErrorKind::External) error when the changelog
    /// cannot be read, its records are gone, or one is not an entry `target` takes.
    pub async fn replay_changelog(
        &self,
        target: &mut impl ReplayTarget,
    ) -> crate::Result<Replayed> {
        if self.restored_changelog.is_empty() {
            return Ok(Replayed::default());
        }
        let replayed = changelog::replay(
            &self.source,
            0,
            &self.restored_changelog,
            target,
            Reading::default(),
        )
        .await
        .map_err(crate::Error::external)?;
        tracing::info!(
            topic = ?self.source.changelog,
            entries = target.held_entries(),
            applied = replayed.applied,
            skipped = replayed.skipped,
            "restored the state from its changelog"
        );
        Ok(replayed)
    }

    /// Whether the first [`save_with_changes`](Self::save_with_changes) after the start
    /// must be a snapshot: there is no state in the changelog yet, or the restored state
    /// spans so many writers' records that its checkpoint records would grow.
    pub fn snapshot_due(&self) -> bool {
        self.restored_changelog.is_empty() || self.restored_changelog.len() >= MAX_RANGES
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
