//! The committer: the task that drains an instance's acknowledgement queue and commits
//! input offsets, checkpoints and transactions, as the delivery mode says.
//!
//! Every send and every commit of one streamlet instance goes, in program order, into one
//! queue (its sending side, [`Acknowledgements`](runnel_streamlet::runtime::Acknowledgements),
//! lives in `runnel-streamlet`, with the
//! handles that push into it). The [`Committer`] takes events in that order: it waits for
//! each send's receipt, and stages each commit, which is then safe because everything sent
//! before it is durable. Staged offsets are written to the consumer groups in batches
//! (every commit interval, and at the end), monotonically per partition. Two semaphores
//! bound the queue: one counts unacknowledged sends, the other messages handed to the
//! streamlet and not yet committed, so a slow log slows the streamlet instead of growing
//! memory. The committer gives the permits of the events it has taken back together, once
//! per batch and before it waits for a receipt, rather than one semaphore release per
//! event.
//!
//! A checkpointed streamlet's commits are written only with its checkpoints: a checkpoint
//! in the queue is written once every send before it is acknowledged, with the offsets of
//! every commit before it, and the offsets go to the consumer groups once the checkpoint
//! is durable (see [`checkpoint`](runnel_streamlet::checkpoint)). An exactly-once
//! checkpointed streamlet commits a transaction at each checkpoint instead of every commit
//! interval: the checkpoint record joins the outputs sent before it, and the transaction
//! commits with the offsets the checkpoint reflects; what it sent after its last checkpoint
//! is aborted when it stops.
//!
//! The [`Delivery`] mode changes three things. **At-least-once** (the default) waits for
//! every receipt as described, and also tells each consumer what is staged
//! ([`Consumer::stage`]) so it can commit before a rebalance takes partitions away.
//! **At-most-once** does not wait for receipts, so offsets may be committed before the
//! outputs derived from them are durable. **Exactly-once** commits through a
//! [`TransactionalProducer`]: every commit interval it closes the [`Gate`] so inlets hand out
//! no new message, keeps draining the queue until every handed-out message is committed,
//! commits the transaction with the staged offsets of every inlet, and opens the gate. A
//! failed streamlet's open transaction is aborted, never committed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use runnel_backend::{
    CommitOffset, Consumer, GroupOffsets, Producer, Receipt, TransactionalProducer,
};
use runnel_blueprint::descriptor::Delivery;
use runnel_streamlet::InstanceMetrics;
use runnel_streamlet::runtime::{
    self, ChangelogBatch, ChangelogRange, Event, EventReceiver, Gate, InletOffset, PartitionSave,
    SavedState,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

mod checkpoint_writing;

pub(crate) use checkpoint_writing::ChangelogWriter;
use checkpoint_writing::{InFlight, PendingRecord, Written, write_records};

/// How often an exactly-once commit looks whether the handed-out messages are committed.
const QUIESCENCE_POLL: Duration = Duration::from_millis(2);

/// Permits of events the committer is done with, given back together: one semaphore
/// release per batch of events instead of one per event.
#[derive(Debug, Default)]
struct Released {
    sends: Option<OwnedSemaphorePermit>,
    messages: Option<OwnedSemaphorePermit>,
}

impl Released {
    fn add(slot: &mut Option<OwnedSemaphorePermit>, permit: OwnedSemaphorePermit) {
        match slot {
            Some(held) => held.merge(permit),
            None => *slot = Some(permit),
        }
    }

    /// Gives every held permit back to its semaphore.
    fn release(&mut self) {
        self.sends = None;
        self.messages = None;
    }
}

/// Why committing stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommitError {
    /// A sent record was never acknowledged.
    #[error("an output record was not acknowledged by the log")]
    Delivery(#[source] runnel_backend::Error),
    /// The consumer group refused the offsets.
    #[error("committing input offsets failed")]
    Commit(#[source] runnel_backend::Error),
    /// The transaction could not be committed; it was aborted.
    #[error("committing the transaction of outputs and input offsets failed")]
    Transaction(#[source] runnel_backend::Error),
    /// An exactly-once streamlet saved a checkpoint while it held messages it had not
    /// committed, whose outputs the transaction would commit without their inputs.
    #[error(
        "the streamlet saved a checkpoint while holding {held} message(s) it had not committed or rejected; an exactly-once streamlet must settle every message it was handed before it saves"
    )]
    HeldAtCheckpoint { held: usize },
    /// The checkpoint could not be written.
    #[error("writing a checkpoint to topic '{topic}' failed")]
    Checkpoint {
        topic: Arc<str>,
        #[source]
        source: runnel_backend::Error,
    },
    /// A state saved whole outgrew the largest record its checkpoint topic takes; it will
    /// again after every restart, so it is a failure of its own, with what to do about it.
    #[error(
        "a checkpoint of {size} bytes is larger than topic '{topic}' takes{}; a state that grows with its input must be kept where a checkpoint writes only what changed: keyed state, or a changelog (`Shape::checkpointed_with_changelog`, with `checkpoint::TrackedMap`)",
        limit.map_or_else(String::new, |limit| format!(" ({limit} bytes)"))
    )]
    StateTooLarge {
        topic: Arc<str>,
        size: usize,
        limit: Option<usize>,
    },
}

impl CommitError {
    /// Writing checkpoint records to `topic` failed with `source`.
    pub(crate) fn checkpoint(topic: Arc<str>, source: runnel_backend::Error) -> Self {
        match source {
            runnel_backend::Error::RecordTooLarge { size, limit, .. } => {
                CommitError::StateTooLarge { topic, size, limit }
            }
            source => CommitError::Checkpoint { topic, source },
        }
    }
}

/// An inlet's consumer and the topic it reads.
#[derive(Debug)]
pub(crate) struct CommitTarget {
    pub(crate) inlet: &'static str,
    pub(crate) consumer: Arc<dyn Consumer>,
    pub(crate) topic: Arc<str>,
    pub(crate) group: String,
}

/// How the committer commits, from the streamlet's [`Delivery`].
#[derive(Clone)]
#[allow(clippy::enum_variant_names)] // named after the guarantees they give
pub(crate) enum Mode {
    /// Wait for receipts; commit to the consumer groups.
    AtLeastOnce,
    /// Do not wait for receipts; commit to the consumer groups.
    AtMostOnce,
    /// Commit transactions of outputs and offsets.
    ExactlyOnce {
        producer: Arc<dyn TransactionalProducer>,
        gate: Arc<Gate>,
        /// Holds sends back from a checkpoint's save until its transaction commits.
        sending: Arc<Gate>,
        /// The semaphore of handed-out messages, and how many permits it has in all.
        messages: Arc<Semaphore>,
        max_messages: usize,
    },
}

impl Mode {
    pub(crate) fn delivery(&self) -> Delivery {
        match self {
            Mode::AtLeastOnce => Delivery::AtLeastOnce,
            Mode::AtMostOnce => Delivery::AtMostOnce,
            Mode::ExactlyOnce { .. } => Delivery::ExactlyOnce,
        }
    }
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.delivery().as_str())
    }
}

/// Where a checkpointed instance writes its checkpoints.
#[derive(Debug)]
pub(crate) struct CheckpointWriter {
    pub(crate) producer: Arc<dyn Producer>,
    pub(crate) topic: Arc<str>,
    pub(crate) instance: Arc<str>,
    /// Per inlet: partition -> next offset, as of the last checkpoint (restored at start).
    pub(crate) offsets: Vec<BTreeMap<u32, u64>>,
    /// Keyed state: where the changelog goes.
    pub(crate) changelog: Option<ChangelogWriter>,
}

/// The transaction an exactly-once checkpoint commits, and the gate that holds the
/// streamlet's sends back until it has.
struct CheckpointTransaction {
    producer: Arc<dyn TransactionalProducer>,
    sending: Arc<Gate>,
}

/// Drains the acknowledgement queue and commits offsets.
#[derive(Debug)]
pub(crate) struct Committer {
    targets: Vec<CommitTarget>,
    mode: Mode,
    /// Whether anything was sent or committed since the last write.
    pending: bool,
    interval: Duration,
    /// Per inlet: partition -> next offset to read, staged but not yet written.
    staged: Vec<BTreeMap<u32, u64>>,
    /// Per inlet: partition -> the last offset written, to keep commits monotonic.
    written: Vec<BTreeMap<u32, u64>>,
    metrics: Arc<InstanceMetrics>,
    /// For a checkpointed instance: offsets are written only with checkpoints.
    checkpoints: Option<CheckpointWriter>,
    /// At least once: the checkpoint being written, if any.
    in_flight: Option<InFlight>,
    /// Permits of the events handled since the last release.
    released: Released,
}

impl Committer {
    pub(crate) fn new(
        targets: Vec<CommitTarget>,
        interval: Duration,
        metrics: Arc<InstanceMetrics>,
        checkpoints: Option<CheckpointWriter>,
        mode: Mode,
    ) -> Self {
        let inlets = targets.len();
        let written = match &checkpoints {
            Some(writer) => writer.offsets.clone(),
            None => vec![BTreeMap::new(); inlets],
        };
        Committer {
            targets,
            mode,
            pending: false,
            interval,
            staged: vec![BTreeMap::new(); inlets],
            written,
            metrics,
            checkpoints,
            in_flight: None,
            released: Released::default(),
        }
    }

    /// Runs until [`Event::Finish`] (or every sender is gone), then commits what is staged
    /// (exactly-once: only after a successful finish; otherwise the transaction is aborted).
    pub(crate) async fn run(mut self, mut events: EventReceiver<Event>) -> Result<(), CommitError> {
        let mut deadline: Option<Instant> = None;
        let mut batch = Vec::new();
        loop {
            // Woken per batch of events; the timer also takes events queued without a
            // wake-up, so none waits longer than a commit interval.
            let wake_up = deadline.unwrap_or_else(|| Instant::now() + self.interval);
            let timed_out = tokio::select! {
                biased;
                // First: a checkpoint whose records are durable commits its offsets, however
                // busy the queue.
                written = async { (&mut self.in_flight.as_mut().expect("in flight").0).await },
                    if self.in_flight.is_some() =>
                {
                    self.in_flight = None;
                    self.complete(written?).await?;
                    continue;
                }
                received = events.recv_many(&mut batch) => {
                    if !received {
                        // Every sender is gone without a finish: the streamlet panicked or
                        // was dropped. Exactly-once aborts; the other modes commit what is
                        // acknowledged.
                        return self.finish(false, &mut events).await;
                    }
                    false
                }
                () = tokio::time::sleep_until(wake_up) => {
                    events.take(&mut batch);
                    true
                }
            };
            if let Some(succeeded) = self.handle_all(&mut batch).await? {
                return self.finish(succeeded, &mut events).await;
            }
            // Past the deadline, whichever branch woke the committer: under a steady flood
            // of events the queue is ready first every time, and the timer would never win.
            let due = timed_out || deadline.is_some_and(|deadline| deadline <= Instant::now());
            if due && deadline.is_some() {
                if let Some(succeeded) = self.write(&mut events).await? {
                    return self.finish(succeeded, &mut events).await;
                }
                deadline = None;
                continue;
            }
            if self.pending && self.checkpoints.is_none() {
                deadline.get_or_insert_with(|| Instant::now() + self.interval);
            }
            self.stage();
        }
    }

    /// Takes the events of `batch` in order, then gives their permits back; returns
    /// `Some(succeeded)` at the finish (the events after it are dropped).
    async fn handle_all(&mut self, batch: &mut Vec<Event>) -> Result<Option<bool>, CommitError> {
        let mut finished = None;
        for event in batch.drain(..) {
            if finished.is_some() {
                continue; // dropped in order, releasing their permits
            }
            // Most events are taken on the spot; only the rest build `handle`'s future.
            let event = match self.take_ready(event) {
                Ok(None) => continue,
                Ok(Some(event)) => event,
                Err(error) => {
                    self.released.release();
                    return Err(error);
                }
            };
            match self.handle(event).await {
                Ok(Some(succeeded)) => finished = Some(succeeded),
                Ok(None) => {}
                Err(error) => {
                    self.released.release();
                    return Err(error);
                }
            }
        }
        self.released.release();
        Ok(finished)
    }

    /// Takes a commit or a send without waiting, unless it is a send whose receipt is not
    /// complete yet (at least once): that one, and every other event, is given back for
    /// [`handle`](Self::handle).
    fn take_ready(&mut self, event: Event) -> Result<Option<Event>, CommitError> {
        match event {
            Event::Sent {
                mut receipt,
                permit,
            } => {
                if matches!(self.mode, Mode::AtLeastOnce) {
                    match (&mut receipt).now_or_never() {
                        Some(delivered) => delivered.map_err(CommitError::Delivery)?,
                        None => return Ok(Some(Event::Sent { receipt, permit })),
                    };
                } else {
                    // Exactly-once: the transaction commit fails if a delivery did. At most
                    // once: nobody waits.
                    drop(receipt);
                    self.pending |= matches!(self.mode, Mode::ExactlyOnce { .. });
                }
                Released::add(&mut self.released.sends, permit);
                Ok(None)
            }
            Event::Commit {
                inlet,
                partition,
                offset,
                processing,
                permit,
            } => {
                self.commit(inlet, partition, offset, processing, permit);
                Ok(None)
            }
            other => Ok(Some(other)),
        }
    }

    /// Stages an input record's offset: everything sent before it is acknowledged.
    fn commit(
        &mut self,
        inlet: usize,
        partition: u32,
        offset: u64,
        processing: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) {
        Released::add(&mut self.released.messages, permit);
        if let Some(processing) = processing {
            self.metrics.processing_latency().observe(processing);
        }
        let next = offset + 1;
        let staged = self.staged[inlet].entry(partition).or_insert(next);
        *staged = (*staged).max(next);
        runtime::count_committed(&self.metrics, 1);
        self.pending = true;
    }

    /// Takes one event; returns `Some(succeeded)` at the finish.
    async fn handle(&mut self, event: Event) -> Result<Option<bool>, CommitError> {
        match event {
            Event::Finish { succeeded } => return Ok(Some(succeeded)),
            Event::Checkpoint { state, held } => match state {
                SavedState::Whole { state, changes } => {
                    self.checkpoint(state, changes, held).await?;
                }
                SavedState::Partitions(states) => self.checkpoint_partitions(states, held).await?,
            },
            Event::Restored {
                partition,
                offsets,
                changelog,
            } => {
                // The checkpoint in flight may name the partition's ranges before this.
                self.settle().await?;
                self.restored(partition, &offsets, changelog);
            }
            ready @ (Event::Sent { .. } | Event::Commit { .. }) => {
                // A send whose receipt is not complete yet is waited for with the permits of
                // what came before it given back, so the streamlet is not held up meanwhile.
                if let Some(Event::Sent { receipt, permit }) = self.take_ready(ready)? {
                    self.released.release();
                    self.wait_for(receipt)
                        .await?
                        .map_err(CommitError::Delivery)?;
                    Released::add(&mut self.released.sends, permit);
                }
            }
        }
        Ok(None)
    }

    /// Waits for a receipt; what is staged meanwhile (everything sent before it is
    /// acknowledged) is still written every commit interval, so a slow acknowledgement holds
    /// back only the commits behind it.
    async fn wait_for(
        &mut self,
        mut receipt: Receipt,
    ) -> Result<runnel_backend::Result<u64>, CommitError> {
        loop {
            if !self.pending || self.checkpoints.is_some() {
                return Ok(receipt.await);
            }
            tokio::select! {
                delivered = &mut receipt => return Ok(delivered),
                () = tokio::time::sleep(self.interval) => self.write_to_groups(None).await?,
            }
        }
    }

    /// At least once: tells each consumer what is safe to commit, for rebalances.
    fn stage(&self) {
        if !matches!(self.mode, Mode::AtLeastOnce) || self.checkpoints.is_some() {
            return;
        }
        for (inlet, target) in self.targets.iter().enumerate() {
            if !self.staged[inlet].is_empty() {
                target.consumer.stage(&self.offsets(inlet, None));
            }
        }
    }

    /// The staged offsets of an inlet that move its committed offsets forward (of the
    /// partitions in `only`, if given).
    fn offsets(&self, inlet: usize, only: Option<&BTreeSet<u32>>) -> Vec<CommitOffset> {
        let target = &self.targets[inlet];
        self.staged[inlet]
            .iter()
            .filter(|(partition, _)| only.is_none_or(|only| only.contains(partition)))
            // Past the transaction markers the consumer skipped after the last record, so
            // a group at rest has no lag of markers.
            .map(|(partition, offset)| {
                let offset = target
                    .consumer
                    .committable(&target.topic, *partition, *offset);
                (*partition, offset)
            })
            .filter(|(partition, offset)| {
                self.written[inlet]
                    .get(partition)
                    .is_none_or(|written| offset > written)
            })
            .map(|(partition, offset)| CommitOffset {
                topic: target.topic.clone(),
                partition,
                offset,
            })
            .collect()
    }

    /// The final commit (or abort). A checkpointed instance commits only with its
    /// checkpoints: what was committed after the last one is read again after a restart.
    async fn finish(
        mut self,
        succeeded: bool,
        events: &mut EventReceiver<Event>,
    ) -> Result<(), CommitError> {
        self.settle().await?;
        if let Mode::ExactlyOnce { producer, .. } = &self.mode
            && (!succeeded || self.checkpoints.is_some())
        {
            // A checkpointed instance commits only with its checkpoints: what it sent after
            // the last one is produced again from the inputs after a restart.
            if succeeded && self.pending {
                tracing::warn!(
                    "outputs sent after the last checkpoint are discarded: the streamlet returned without saving one"
                );
            }
            return producer.abort().await.map_err(CommitError::Transaction);
        }
        if self.checkpoints.is_some() {
            return Ok(());
        }
        self.write(events).await.map(|_| ())
    }

    /// Writes the staged offsets. Exactly-once first waits until no message is handed out
    /// uncommitted (which may meet the finish: returned as `Some(succeeded)`).
    async fn write(
        &mut self,
        events: &mut EventReceiver<Event>,
    ) -> Result<Option<bool>, CommitError> {
        let Mode::ExactlyOnce {
            producer,
            gate,
            messages,
            max_messages,
            ..
        } = self.mode.clone()
        else {
            self.write_to_groups(None).await?;
            return Ok(None);
        };
        gate.close();
        let mut finished = None;
        let mut batch = Vec::new();
        while finished.is_none() && messages.available_permits() < max_messages {
            // Queued commits are taken without waiting for a wake-up; the inlets, stopped at
            // the gate, also wake the committer.
            if events.take(&mut batch) == 0 {
                let received =
                    tokio::time::timeout(QUIESCENCE_POLL, events.recv_many(&mut batch)).await;
                if received == Ok(false) {
                    finished = Some(false);
                }
            }
            // The permits are given back before they are counted again.
            if let Some(succeeded) = self.handle_all(&mut batch).await? {
                finished = Some(succeeded);
            }
        }
        let result = if finished == Some(false) {
            producer.abort().await.map_err(CommitError::Transaction)
        } else {
            self.commit_transaction(&*producer, None).await
        };
        gate.open();
        result.map(|()| finished)
    }

    /// Commits the open transaction with the staged offsets (of the partitions in `only`,
    /// if given; the others stay staged).
    async fn commit_transaction(
        &mut self,
        producer: &dyn TransactionalProducer,
        only: Option<&BTreeSet<u32>>,
    ) -> Result<(), CommitError> {
        if !self.pending {
            return Ok(());
        }
        let groups: Vec<GroupOffsets> = (0..self.targets.len())
            .map(|inlet| GroupOffsets {
                group: self.targets[inlet].group.clone(),
                offsets: self.offsets(inlet, only),
            })
            .filter(|group| !group.offsets.is_empty())
            .collect();
        let started = std::time::Instant::now();
        if let Err(error) = producer.commit(&groups).await {
            // Best effort: a fenced producer cannot abort, and the restart fences it anyway.
            let _ = producer.abort().await;
            return Err(CommitError::Transaction(error));
        }
        self.metrics.commit_latency().observe(started.elapsed());
        for group in &groups {
            let inlet = self
                .targets
                .iter()
                .position(|target| target.group == group.group)
                .expect("every group committed is one of the targets");
            for offset in &group.offsets {
                self.written[inlet].insert(offset.partition, offset.offset);
            }
        }
        for staged in &mut self.staged {
            match only {
                Some(only) => staged.retain(|partition, _| !only.contains(partition)),
                None => staged.clear(),
            }
        }
        self.pending = false;
        Ok(())
    }

    /// Exactly-once: the transaction a checkpoint commits, and the gate holding sends back
    /// until it has; refused while the streamlet holds uncommitted messages. `None` in the
    /// other modes.
    fn checkpoint_transaction(
        &self,
        held: usize,
    ) -> Result<Option<CheckpointTransaction>, CommitError> {
        match &self.mode {
            Mode::ExactlyOnce { .. } if held > 0 => Err(CommitError::HeldAtCheckpoint { held }),
            Mode::ExactlyOnce {
                producer, sending, ..
            } => Ok(Some(CheckpointTransaction {
                producer: producer.clone(),
                sending: sending.clone(),
            })),
            _ => Ok(None),
        }
    }

    /// Commits the transaction holding a checkpoint (with the staged offsets of `only`, if
    /// given) and lets the streamlet send again.
    async fn commit_checkpoint(
        &mut self,
        transaction: &CheckpointTransaction,
        only: Option<&BTreeSet<u32>>,
    ) -> Result<(), CommitError> {
        self.pending = true;
        let committed = self.commit_transaction(&*transaction.producer, only).await;
        transaction.sending.open();
        committed
    }

    /// Writes a checkpoint of `state` with every offset staged so far (a state with a
    /// changelog: its `changes` to partition 0 of the changelog first, named by the record),
    /// waits until it is durable, then commits those offsets to the consumer groups.
    /// Exactly-once: the checkpoint goes into the open transaction, which then commits with
    /// the offsets, so outputs, state and input offsets become visible together or not at
    /// all.
    async fn checkpoint(
        &mut self,
        state: Bytes,
        changes: Option<ChangelogBatch>,
        held: usize,
    ) -> Result<(), CommitError> {
        let transaction = self.checkpoint_transaction(held)?;
        self.settle().await?;
        let Some(writer) = &mut self.checkpoints else {
            return Ok(()); // not a checkpointed instance: nothing to write
        };
        let changelog = match (&mut writer.changelog, &changes) {
            (Some(changelog), Some(changes)) => Some(
                changelog
                    .send(&*writer.producer, 0, changes, transaction.is_some())
                    .await?,
            ),
            _ => None,
        };
        let mut offsets = Vec::new();
        for (inlet, target) in self.targets.iter().enumerate() {
            let known = &mut writer.offsets[inlet];
            for (partition, offset) in &self.staged[inlet] {
                let entry = known.entry(*partition).or_insert(*offset);
                *entry = (*entry).max(*offset);
            }
            offsets.extend(known.iter().map(|(partition, offset)| InletOffset {
                inlet: target.inlet.to_owned(),
                topic: target.topic.to_string(),
                partition: *partition,
                offset: *offset,
            }));
        }
        let pending = vec![PendingRecord {
            partition: 0,
            state,
            offsets,
            changelog,
        }];
        self.write_checkpoint(pending, transaction, None).await
    }

    /// Writes the checkpoint of each input partition in `states` to that partition of the
    /// checkpoint topic, with the partition's offsets of every inlet, then commits those
    /// offsets (exactly-once: in the transaction, with the records sent before). The other
    /// partitions' offsets stay staged.
    async fn checkpoint_partitions(
        &mut self,
        states: Vec<PartitionSave>,
        held: usize,
    ) -> Result<(), CommitError> {
        let transaction = self.checkpoint_transaction(held)?;
        self.settle().await?;
        let Some(writer) = &mut self.checkpoints else {
            return Ok(()); // not a checkpointed instance: nothing to write
        };
        let partitions: BTreeSet<u32> = states.iter().map(|save| save.partition).collect();
        // Each partition's record, with the offsets it reflects; keyed state's changes go to
        // the changelog first, and the record names the ranges of the changelog that make
        // up the partition's state.
        let mut pending = Vec::with_capacity(states.len());
        for save in states {
            let changelog = match (&mut writer.changelog, &save.changes) {
                (Some(changelog), Some(changes)) => Some(
                    changelog
                        .send(
                            &*writer.producer,
                            save.partition,
                            changes,
                            transaction.is_some(),
                        )
                        .await?,
                ),
                _ => None,
            };
            let mut offsets = Vec::new();
            for (inlet, target) in self.targets.iter().enumerate() {
                let known = &mut writer.offsets[inlet];
                if let Some(staged) = self.staged[inlet].get(&save.partition) {
                    let entry = known.entry(save.partition).or_insert(*staged);
                    *entry = (*entry).max(*staged);
                }
                if let Some(offset) = known.get(&save.partition) {
                    offsets.push(InletOffset {
                        inlet: target.inlet.to_owned(),
                        topic: target.topic.to_string(),
                        partition: save.partition,
                        offset: *offset,
                    });
                }
            }
            pending.push(PendingRecord {
                partition: save.partition,
                state: save.state,
                offsets,
                changelog,
            });
        }
        self.write_checkpoint(pending, transaction, Some(&partitions))
            .await
    }

    /// Writes the checkpoint records `pending` (each once its changelog records are
    /// durable), then commits the offsets staged (of the partitions in `only`, if given):
    /// exactly once in `transaction` at once, at least once when the records are durable,
    /// as the checkpoint in flight while the streamlet goes on.
    async fn write_checkpoint(
        &mut self,
        pending: Vec<PendingRecord>,
        transaction: Option<CheckpointTransaction>,
        only: Option<&BTreeSet<u32>>,
    ) -> Result<(), CommitError> {
        let Some(writer) = &self.checkpoints else {
            return Ok(());
        };
        let (producer, topic, instance) = (
            writer.producer.clone(),
            writer.topic.clone(),
            writer.instance.clone(),
        );
        let records = write_records(producer, topic, instance, pending, transaction.is_none());
        if let Some(transaction) = transaction {
            // The changelog's ranges are known, and the commit waits for every record.
            records.await?;
            self.commit_checkpoint(&transaction, only).await?;
            if let Some(changelog) = self.changelog() {
                changelog.delete_superseded().await;
            }
            return Ok(());
        }
        if only.is_none() {
            self.pending = false; // everything staged goes with this checkpoint
        }
        let offsets = self.take_staged(only);
        self.in_flight = Some(InFlight(Box::pin(async move {
            Ok(Written {
                ranges: records.await?,
                offsets,
            })
        })));
        Ok(())
    }

    /// Where a keyed state's changes go, for an instance with one.
    fn changelog(&mut self) -> Option<&mut ChangelogWriter> {
        self.checkpoints
            .as_mut()
            .and_then(|writer| writer.changelog.as_mut())
    }

    /// Waits for the checkpoint in flight, if any, and completes it.
    async fn settle(&mut self) -> Result<(), CommitError> {
        if let Some(in_flight) = self.in_flight.take() {
            let written = in_flight.0.await?;
            self.complete(written).await?;
        }
        Ok(())
    }

    /// A checkpoint is durable: takes its changelog ranges as the partitions' and writes the
    /// offsets it reflects to the consumer groups.
    async fn complete(&mut self, written: Written) -> Result<(), CommitError> {
        if let Some(changelog) = self.changelog() {
            for (partition, ranges) in written.ranges {
                changelog.adopt(partition, ranges);
            }
            changelog.delete_superseded().await;
        }
        self.commit_offsets(written.offsets).await
    }

    /// Forgets what was staged on a partition the streamlet restored, and takes the
    /// restored offsets as the partition's last checkpoint.
    fn restored(
        &mut self,
        partition: u32,
        offsets: &[InletOffset],
        changelog: Vec<ChangelogRange>,
    ) {
        if let Some(writer) = self.changelog() {
            writer.restored(partition, changelog);
        }
        for (inlet, target) in self.targets.iter().enumerate() {
            self.staged[inlet].remove(&partition);
            let restored = offsets
                .iter()
                .find(|offset| offset.inlet == target.inlet && *offset.topic == *target.topic);
            if let Some(writer) = &mut self.checkpoints {
                match restored {
                    Some(restored) => writer.offsets[inlet].insert(partition, restored.offset),
                    None => writer.offsets[inlet].remove(&partition),
                };
            }
        }
    }

    /// Writes the staged offsets (of the partitions in `only`, if given; the others stay
    /// staged) to the consumer groups.
    async fn write_to_groups(&mut self, only: Option<&BTreeSet<u32>>) -> Result<(), CommitError> {
        self.pending = false;
        let offsets = self.take_staged(only);
        self.commit_offsets(offsets).await
    }

    /// Takes the staged offsets (of the partitions in `only`, if given; the others stay
    /// staged) that move the written ones forward, per inlet.
    fn take_staged(&mut self, only: Option<&BTreeSet<u32>>) -> Vec<Vec<CommitOffset>> {
        let mut taken = Vec::with_capacity(self.targets.len());
        for (inlet, target) in self.targets.iter().enumerate() {
            let staged = match only {
                None => std::mem::take(&mut self.staged[inlet]),
                Some(only) => {
                    let (taken, kept) = std::mem::take(&mut self.staged[inlet])
                        .into_iter()
                        .partition(|(partition, _)| only.contains(partition));
                    self.staged[inlet] = kept;
                    taken
                }
            };
            let offsets: Vec<CommitOffset> = staged
                .into_iter()
                .map(|(partition, offset)| {
                    let offset = target
                        .consumer
                        .committable(&target.topic, partition, offset);
                    (partition, offset)
                })
                .filter(|(partition, offset)| {
                    self.written[inlet]
                        .get(partition)
                        .is_none_or(|written| offset > written)
                })
                .map(|(partition, offset)| CommitOffset {
                    topic: target.topic.clone(),
                    partition,
                    offset,
                })
                .collect();
            taken.push(offsets);
        }
        taken
    }

    /// Commits `offsets` (per inlet) to the inlets' consumer groups.
    async fn commit_offsets(&mut self, offsets: Vec<Vec<CommitOffset>>) -> Result<(), CommitError> {
        for (inlet, offsets) in offsets.into_iter().enumerate() {
            let offsets: Vec<CommitOffset> = offsets
                .into_iter()
                .filter(|offset| {
                    self.written[inlet]
                        .get(&offset.partition)
                        .is_none_or(|written| offset.offset > *written)
                })
                .collect();
            if offsets.is_empty() {
                continue;
            }
            let started = std::time::Instant::now();
            self.targets[inlet]
                .consumer
                .commit(&offsets)
                .await
                .map_err(CommitError::Commit)?;
            self.metrics.commit_latency().observe(started.elapsed());
            for offset in offsets {
                self.written[inlet].insert(offset.partition, offset.offset);
            }
        }
        Ok(())
    }
}
