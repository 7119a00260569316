//! The Kafka [`PartitionReader`]: a librdkafka consumer that `assign`s the partitions it
//! reads at their start offsets and never subscribes, joins a group or commits, so it reads
//! from its first fetch instead of after a group join (seconds).
//!
//! One thread per reader polls librdkafka and hands batches over a small bounded channel;
//! with no group to stay in, it simply waits while the caller is behind. When librdkafka's
//! position moves past records it does not hand out (transaction markers, aborted records),
//! the thread reports the new positions, so a caller reading up to an end offset sees it
//! reach a final marker.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{ConsumedRecord, Error, PartitionReader, Result, TopicPartition};
use tokio::sync::mpsc;

use crate::consumer::{Names, convert};
use crate::context::LogContext;
use crate::error::Redactor;
use crate::metadata::Metadata;

/// Records per batch handed from the polling thread.
const BATCH: usize = 2048;
/// Batches waiting in the channel before the thread waits for the caller.
const BATCHES_AHEAD: usize = 4;
/// How long one poll of the thread blocks; also how quickly it notices a stop.
const POLL: Duration = Duration::from_millis(100);

/// What the polling thread hands over, in order.
enum Batch {
    Records(Vec<ConsumedRecord>),
    /// librdkafka's positions moved past records it did not hand out.
    Moved(Vec<(TopicPartition, u64)>),
    Failed(Error),
}

/// The partitions read, with the offset of the next record the caller receives from each.
type Positions = BTreeMap<TopicPartition, u64>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads partitions it assigned itself, from chosen offsets.
pub(crate) struct AssignedReader {
    positions: Mutex<Positions>,
    batches: tokio::sync::Mutex<mpsc::Receiver<Batch>>,
    buffered: Mutex<VecDeque<ConsumedRecord>>,
    /// Tells the polling thread to end; it destroys the client, off the caller's thread.
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for AssignedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssignedReader")
            .field("positions", &*lock(&self.positions))
            .finish_non_exhaustive()
    }
}

impl AssignedReader {
    /// Assigns `starts` (each partition with the offset of its first record) to `client`
    /// and starts polling it.
    pub(crate) fn start(
        client: BaseConsumer<LogContext>,
        starts: Vec<(TopicPartition, u64)>,
        metadata: Arc<Metadata>,
        redactor: Redactor,
    ) -> Result<Self> {
        let mut assignment = TopicPartitionList::new();
        for (tp, from) in &starts {
            let offset = Offset::Offset(i64::try_from(*from).unwrap_or(i64::MAX));
            assignment
                .add_partition_offset(&tp.topic, tp.partition as i32, offset)
                .map_err(|error| Error::Consume {
                    topic: tp.topic.to_string(),
                    source: redactor.boxed(&error),
                })?;
        }
        client.assign(&assignment).map_err(|error| Error::Consume {
            topic: topics(&starts),
            source: redactor.boxed(&error),
        })?;
        let read = topics(&starts);
        let names = Names::reading(starts.iter().map(|(tp, _)| &*tp.topic), &metadata);
        let positions: Positions = starts.into_iter().collect();
        let (sender, batches) = mpsc::channel(BATCHES_AHEAD);
        let stop = Arc::new(AtomicBool::new(false));
        let polling = Polling {
            client,
            sender,
            stop: stop.clone(),
            metadata,
            redactor,
            topics: read,
            names,
            next: positions.clone(),
        };
        std::thread::Builder::new()
            .name("kafka-partition-reader".into())
            .spawn(move || polling.run())
            .map_err(|error| Error::Consume {
                topic: "partition reader".to_owned(),
                source: Box::new(error),
            })?;
        Ok(AssignedReader {
            positions: Mutex::new(positions),
            batches: tokio::sync::Mutex::new(batches),
            buffered: Mutex::default(),
            stop,
        })
    }

    /// Takes up to `max_records` buffered records and moves the positions past them.
    fn take(&self, max_records: usize) -> Vec<ConsumedRecord> {
        let mut buffered = lock(&self.buffered);
        let count = max_records.max(1).min(buffered.len());
        let records: Vec<ConsumedRecord> = buffered.drain(..count).collect();
        drop(buffered);
        let mut positions = lock(&self.positions);
        for record in &records {
            let tp = TopicPartition::new(record.topic.clone(), record.partition);
            if let Some(position) = positions.get_mut(&tp) {
                *position = (*position).max(record.offset + 1);
            }
        }
        records
    }
}

#[async_trait]
impl PartitionReader for AssignedReader {
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>> {
        loop {
            if !lock(&self.buffered).is_empty() {
                return Ok(self.take(max_records));
            }
            let mut batches = self.batches.lock().await;
            match batches.recv().await {
                Some(Batch::Records(batch)) => lock(&self.buffered).extend(batch),
                Some(Batch::Moved(moved)) => {
                    let mut positions = lock(&self.positions);
                    for (tp, offset) in moved {
                        if let Some(position) = positions.get_mut(&tp) {
                            *position = (*position).max(offset);
                        }
                    }
                    return Ok(Vec::new());
                }
                Some(Batch::Failed(error)) => return Err(error),
                None => return Err(Error::Closed),
            }
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        lock(&self.positions)
            .iter()
            .map(|(tp, offset)| (tp.clone(), *offset))
            .collect()
    }
}

impl Drop for AssignedReader {
    fn drop(&mut self) {
        // The thread ends within one poll (or at once if it waits to hand over a batch:
        // the channel closes with this reader) and destroys the client itself.
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The polling thread's side.
struct Polling {
    client: BaseConsumer<LogContext>,
    sender: mpsc::Sender<Batch>,
    stop: Arc<AtomicBool>,
    metadata: Arc<Metadata>,
    redactor: Redactor,
    /// The topics read, for errors.
    topics: String,
    /// The names records share, and the buffer they are copied into.
    names: Names,
    /// Per partition, the offset after the last record handed over or position reported.
    next: Positions,
}

impl Polling {
    /// Reads and hands over batches until stopped or nobody receives any more.
    fn run(mut self) {
        let mut names = std::mem::take(&mut self.names);
        while !self.stop.load(Ordering::SeqCst) {
            let mut batch = Vec::new();
            match self.client.poll(POLL) {
                None => {
                    if !self.report_moved() {
                        return;
                    }
                    continue;
                }
                Some(Ok(message)) => batch.push(convert(&message, &mut names, &self.metadata)),
                Some(Err(error)) => {
                    if error.rdkafka_error_code() == Some(RDKafkaErrorCode::Fatal) {
                        let failed = Error::Consume {
                            topic: self.topics.clone(),
                            source: self.redactor.boxed(&error),
                        };
                        let _ = self.sender.blocking_send(Batch::Failed(failed));
                        return;
                    }
                    tracing::warn!("kafka partition reader: {}", self.redactor.error(&error));
                    continue;
                }
            }
            while batch.len() < BATCH {
                match self.client.poll(Duration::ZERO) {
                    Some(Ok(message)) => batch.push(convert(&message, &mut names, &self.metadata)),
                    _ => break,
                }
            }
            for record in &batch {
                let tp = TopicPartition::new(record.topic.clone(), record.partition);
                if let Some(next) = self.next.get_mut(&tp) {
                    *next = (*next).max(record.offset + 1);
                }
            }
            if self.sender.blocking_send(Batch::Records(batch)).is_err() {
                return;
            }
        }
    }

    /// Reports partitions whose librdkafka position moved past the last record handed
    /// over. Returns `false` once nobody receives any more.
    fn report_moved(&mut self) -> bool {
        let Ok(positions) = self.client.position() else {
            return true;
        };
        let mut moved = Vec::new();
        for element in positions.elements() {
            let Offset::Offset(offset) = element.offset() else {
                continue;
            };
            let Ok(offset) = u64::try_from(offset) else {
                continue;
            };
            let tp = TopicPartition::new(
                self.metadata.intern(element.topic()),
                element.partition() as u32,
            );
            if let Some(next) = self.next.get_mut(&tp)
                && offset > *next
            {
                *next = offset;
                moved.push((tp, offset));
            }
        }
        moved.is_empty() || self.sender.blocking_send(Batch::Moved(moved)).is_ok()
    }
}

/// `a, b`: the topics of `starts`, for errors.
fn topics(starts: &[(TopicPartition, u64)]) -> String {
    let mut names: Vec<&str> = starts.iter().map(|(tp, _)| &*tp.topic).collect();
    names.dedup();
    names.join(", ")
}
