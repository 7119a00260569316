//! At-least-once bookkeeping: an input offset is committed only after every output sent
//! before its commit is acknowledged by the log.
//!
//! Every send and every commit of one streamlet instance goes, in program order, into one
//! queue. The [`Committer`] takes events in that order: it waits for each send's receipt,
//! and stages each commit, which is then safe because everything sent before it is durable.
//! Staged offsets are written to the consumer groups in batches (every commit interval, and
//! at the end), monotonically per partition. Two semaphores bound the queue: one counts
//! unacknowledged sends, the other messages handed to the streamlet and not yet committed,
//! so a slow log slows the streamlet instead of growing memory.
//!
//! A checkpointed streamlet's commits are written only with its checkpoints: a checkpoint
//! in the queue is written once every send before it is acknowledged, with the offsets of
//! every commit before it, and the offsets go to the consumer groups once the checkpoint
//! is durable (see [`checkpoint`](crate::checkpoint)).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use runnel_backend::{CommitOffset, Consumer, Producer, Receipt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

use crate::InstanceMetrics;
use crate::checkpoint::{self, InletOffset};

/// How many queued events the committer takes per wake-up.
const EVENTS_PER_WAKE_UP: usize = 512;

/// One entry of the acknowledgement queue.
#[derive(Debug)]
pub(crate) enum Event {
    /// A record was handed to the producer.
    Sent {
        receipt: Receipt,
        _permit: OwnedSemaphorePermit,
    },
    /// The streamlet is done with an input record (and everything before it on its
    /// partition).
    Commit {
        inlet: usize,
        partition: u32,
        offset: u64,
        /// How long the streamlet had the message, for the processing-latency histogram.
        processing: Option<Duration>,
        _permit: OwnedSemaphorePermit,
    },
    /// A checkpointed streamlet saved its state, reflecting every commit before.
    Checkpoint { state: Bytes },
    /// The streamlet returned: commit what is staged and stop.
    Finish,
}

/// The sending side of the queue, cloned into every inlet, outlet and message.
#[derive(Clone, Debug)]
pub(crate) struct Acknowledgements {
    events: mpsc::UnboundedSender<Event>,
    sends: Arc<Semaphore>,
    messages: Arc<Semaphore>,
}

impl Acknowledgements {
    pub(crate) fn new(
        max_unacknowledged_sends: usize,
        max_uncommitted_messages: usize,
    ) -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let acknowledgements = Acknowledgements {
            events,
            sends: Arc::new(Semaphore::new(max_unacknowledged_sends.max(1))),
            messages: Arc::new(Semaphore::new(max_uncommitted_messages.max(1))),
        };
        (acknowledgements, receiver)
    }

    /// Waits for room for one more unacknowledged send.
    pub(crate) async fn send_permit(&self) -> OwnedSemaphorePermit {
        self.sends
            .clone()
            .acquire_owned()
            .await
            .expect("the send semaphore is never closed")
    }

    /// Waits for room for one more uncommitted message.
    pub(crate) async fn message_permit(&self) -> OwnedSemaphorePermit {
        self.messages
            .clone()
            .acquire_owned()
            .await
            .expect("the message semaphore is never closed")
    }

    pub(crate) fn sent(&self, receipt: Receipt, permit: OwnedSemaphorePermit) {
        // A closed queue means the instance is finishing; the record is still appended and
        // simply not waited for, which can only delay commits, never lose data.
        let _ = self.events.send(Event::Sent {
            receipt,
            _permit: permit,
        });
    }

    pub(crate) fn commit(
        &self,
        inlet: usize,
        partition: u32,
        offset: u64,
        processing: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) {
        let _ = self.events.send(Event::Commit {
            inlet,
            partition,
            offset,
            processing,
            _permit: permit,
        });
    }

    pub(crate) fn checkpoint(&self, state: Bytes) {
        let _ = self.events.send(Event::Checkpoint { state });
    }

    pub(crate) fn finish(&self) {
        let _ = self.events.send(Event::Finish);
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
    /// The checkpoint could not be written.
    #[error("writing a checkpoint to topic '{topic}' failed")]
    Checkpoint {
        topic: Arc<str>,
        #[source]
        source: runnel_backend::Error,
    },
}

/// An inlet's consumer and the topic it reads.
#[derive(Debug)]
pub(crate) struct CommitTarget {
    pub(crate) inlet: &'static str,
    pub(crate) consumer: Arc<dyn Consumer>,
    pub(crate) topic: Arc<str>,
}

/// Where a checkpointed instance writes its checkpoints.
#[derive(Debug)]
pub(crate) struct CheckpointWriter {
    pub(crate) producer: Arc<dyn Producer>,
    pub(crate) topic: Arc<str>,
    pub(crate) instance: Arc<str>,
    /// Per inlet: partition -> next offset, as of the last checkpoint (restored at start).
    pub(crate) offsets: Vec<BTreeMap<u32, u64>>,
}

/// Drains the acknowledgement queue and commits offsets.
#[derive(Debug)]
pub(crate) struct Committer {
    targets: Vec<CommitTarget>,
    interval: Duration,
    /// Per inlet: partition -> next offset to read, staged but not yet written.
    staged: Vec<BTreeMap<u32, u64>>,
    /// Per inlet: partition -> the last offset written, to keep commits monotonic.
    written: Vec<BTreeMap<u32, u64>>,
    metrics: Arc<InstanceMetrics>,
    /// For a checkpointed instance: offsets are written only with checkpoints.
    checkpoints: Option<CheckpointWriter>,
}

impl Committer {
    pub(crate) fn new(
        targets: Vec<CommitTarget>,
        interval: Duration,
        metrics: Arc<InstanceMetrics>,
        checkpoints: Option<CheckpointWriter>,
    ) -> Self {
        let inlets = targets.len();
        let written = match &checkpoints {
            Some(writer) => writer.offsets.clone(),
            None => vec![BTreeMap::new(); inlets],
        };
        Committer {
            targets,
            interval,
            staged: vec![BTreeMap::new(); inlets],
            written,
            metrics,
            checkpoints,
        }
    }

    /// Runs until [`Event::Finish`] (or every sender is gone), then commits what is staged.
    pub(crate) async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<Event>,
    ) -> Result<(), CommitError> {
        let mut deadline: Option<Instant> = None;
        let mut batch = Vec::with_capacity(EVENTS_PER_WAKE_UP);
        loop {
            let received = match deadline {
                Some(at) => tokio::select! {
                    biased;
                    received = events.recv_many(&mut batch, EVENTS_PER_WAKE_UP) => received,
                    () = tokio::time::sleep_until(at) => {
                        self.write().await?;
                        deadline = None;
                        continue;
                    }
                },
                None => events.recv_many(&mut batch, EVENTS_PER_WAKE_UP).await,
            };
            if received == 0 {
                // Every sender is gone.
                return self.finish().await;
            }
            for event in batch.drain(..) {
                match event {
                    Event::Finish => return self.finish().await,
                    Event::Checkpoint { state } => self.checkpoint(state).await?,
                    Event::Sent { receipt, _permit } => {
                        receipt.await.map_err(CommitError::Delivery)?;
                    }
                    Event::Commit {
                        inlet,
                        partition,
                        offset,
                        processing,
                        _permit,
                    } => {
                        if let Some(processing) = processing {
                            self.metrics.processing_latency().observe(processing);
                        }
                        let next = offset + 1;
                        let staged = self.staged[inlet].entry(partition).or_insert(next);
                        *staged = (*staged).max(next);
                        self.metrics.count_committed(1);
                        if self.checkpoints.is_none() {
                            deadline.get_or_insert_with(|| Instant::now() + self.interval);
                        }
                    }
                }
            }
        }
    }

    /// Commits what is staged, unless offsets go only with checkpoints: then what was
    /// committed after the last checkpoint is read again after a restart.
    async fn finish(&mut self) -> Result<(), CommitError> {
        if self.checkpoints.is_some() {
            return Ok(());
        }
        self.write().await
    }

    /// Writes a checkpoint of `state` with every offset staged so far, waits until it is
    /// durable, then commits those offsets to the consumer groups.
    async fn checkpoint(&mut self, state: Bytes) -> Result<(), CommitError> {
        let Some(writer) = &mut self.checkpoints else {
            return Ok(()); // not a checkpointed instance: nothing to write
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
        let record = checkpoint::record(&writer.instance, state, &offsets);
        let failed = |source| CommitError::Checkpoint {
            topic: writer.topic.clone(),
            source,
        };
        let receipt = writer
            .producer
            .send(&writer.topic, 0, record)
            .await
            .map_err(failed)?;
        receipt.await.map_err(failed)?;
        self.write().await
    }

    async fn write(&mut self) -> Result<(), CommitError> {
        for (inlet, target) in self.targets.iter().enumerate() {
            let staged = std::mem::take(&mut self.staged[inlet]);
            let offsets: Vec<CommitOffset> = staged
                .into_iter()
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
            if offsets.is_empty() {
                continue;
            }
            let started = std::time::Instant::now();
            target
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
