//! [`PartitionReader`]: reads partitions the caller names, from offsets the caller chooses,
//! without a consumer group: what restoring state, reading a checkpoint or keeping a warm
//! copy needs.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::{
    Backend, ConsumedRecord, Consumer, ConsumerConfig, Error, Isolation, Result, TopicPartition,
};

/// Which partitions a [`PartitionReader`] reads, from which offsets, and which records of
/// transactions.
///
/// ```
/// use runnel_backend::{Isolation, ReaderConfig, TopicPartition};
/// let config = ReaderConfig::new("changelog", 2, 40)
///     .partition("changelog", 3, 0)
///     .isolation(Isolation::ReadUncommitted);
/// assert_eq!(config.starts[1], (TopicPartition::new("changelog", 3), 0));
/// assert_eq!(config.isolation, Isolation::ReadUncommitted);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReaderConfig {
    /// The partitions to read, each with the offset of the first record to return.
    pub starts: Vec<(TopicPartition, u64)>,
    /// Which records of transactions the reader returns; read committed unless set.
    pub isolation: Isolation,
}

impl ReaderConfig {
    /// Reads `partition` of `topic` from offset `from` on, read committed.
    pub fn new(topic: &str, partition: u32, from: u64) -> Self {
        ReaderConfig {
            starts: Vec::new(),
            isolation: Isolation::ReadCommitted,
        }
        .partition(topic, partition, from)
    }

    /// Reads `partition` of `topic` from offset `from` on as well.
    pub fn partition(mut self, topic: &str, partition: u32, from: u64) -> Self {
        self.starts
            .push((TopicPartition::new(Arc::from(topic), partition), from));
        self
    }

    /// Sets which records of transactions the reader returns.
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// The distinct topics of the partitions, in the order they first appear.
    pub fn topics(&self) -> Vec<&str> {
        let mut topics: Vec<&str> = Vec::new();
        for (tp, _) in &self.starts {
            if !topics.contains(&&*tp.topic) {
                topics.push(&tp.topic);
            }
        }
        topics
    }
}

/// Reads records of the partitions it was made for (see [`Backend::partition_reader`]),
/// each from its own position on, without belonging to a consumer group: nothing is
/// committed, no other reader or group member is affected, and nothing is waited for before
/// the first record. Dropping it releases what it holds.
#[async_trait]
pub trait PartitionReader: fmt::Debug + Send + Sync {
    /// Waits for records of its partitions and returns at most `max_records` of them, in
    /// offset order per partition, as [`Consumer::poll`] does: cancel safe, only
    /// acknowledged records, and possibly none when the positions moved past records it does
    /// not hand out (transaction markers, and aborted records when reading committed).
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>>;

    /// Every partition it reads, with the offset of the next record
    /// [`poll`](PartitionReader::poll) returns from it: exact from the start. A caller
    /// reading up to an end offset is done when its position reaches it.
    fn positions(&self) -> Vec<(TopicPartition, u64)>;
}

/// The [`PartitionReader`] [`Backend::partition_reader`] makes by default: a consumer of a
/// consumer group of its own that seeks each partition to its start and hands out only
/// the partitions asked for. It pays what joining a group costs on the backplane (seconds
/// on Kafka); the backplanes of this project implement readers without a group.
pub(crate) struct GroupReader {
    consumer: Arc<dyn Consumer>,
    /// The partitions asked for, with their positions until the consumer is assigned them.
    starts: Mutex<Vec<(TopicPartition, u64)>>,
}

impl fmt::Debug for GroupReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupReader")
            .field("consumer", &self.consumer)
            .finish_non_exhaustive()
    }
}

impl GroupReader {
    /// Joins a group of its own on `backend` and seeks to the starts of `config`.
    pub(crate) async fn start<B: Backend + ?Sized>(
        backend: &B,
        config: &ReaderConfig,
    ) -> Result<GroupReader> {
        let group = format!("runnel-reader.{:x}", unique_number());
        let consumer_config =
            ConsumerConfig::new(group, config.topics()).isolation(config.isolation);
        // Each start moved into its partition's bounds, as every reader's is.
        let mut starts = Vec::with_capacity(config.starts.len());
        for (tp, from) in &config.starts {
            let bounds = backend.offsets(&tp.topic).await?;
            let Some(bounds) = bounds.get(tp.partition as usize) else {
                return Err(Error::PartitionNotFound {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    partitions: bounds.len() as u32,
                });
            };
            let start = (*from).clamp(bounds.start, bounds.end.max(bounds.start));
            starts.push((tp.clone(), start));
        }
        let consumer = backend.consumer(&consumer_config).await?;
        for (tp, start) in &starts {
            consumer.seek(&tp.topic, tp.partition, *start).await?;
        }
        Ok(GroupReader {
            consumer,
            starts: Mutex::new(starts),
        })
    }
}

#[async_trait]
impl PartitionReader for GroupReader {
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>> {
        loop {
            let mut records = self.consumer.poll(max_records).await?;
            let starts = self.starts.lock().unwrap_or_else(PoisonError::into_inner);
            let before = records.len();
            records.retain(|record| {
                starts
                    .iter()
                    .any(|(tp, _)| tp.partition == record.partition && tp.topic == record.topic)
            });
            // Records only of partitions nobody asked for: not a reason to return.
            if !records.is_empty() || before == 0 {
                return Ok(records);
            }
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        let assigned = self.consumer.positions();
        let mut starts = self.starts.lock().unwrap_or_else(PoisonError::into_inner);
        for (tp, position) in starts.iter_mut() {
            if let Some((_, at)) = assigned.iter().find(|(owned, _)| owned == tp) {
                *position = *at;
            }
        }
        starts.clone()
    }
}

/// A number no other reader of this or another process is likely to have, for the name
/// of a group of one's own.
fn unique_number() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32) ^ CALLS.fetch_add(1, Ordering::Relaxed)
}
