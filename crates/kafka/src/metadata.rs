//! Topic metadata: partition counts (cached for the producers' checks) and watermarks, read
//! through a consumer-type client, which never creates topics as a side effect.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::types::RDKafkaErrorCode;
use runnel_backend::{Error, PartitionOffsets, Result};

use crate::context::LogContext;
use crate::error::Redactor;

/// How long reading a partition's offsets waits for the partition to have a leader.
const LEADER_WAIT: Duration = Duration::from_secs(5);

/// Reads topic metadata; shared by the backend and its producers.
pub(crate) struct Metadata {
    client: BaseConsumer<LogContext>,
    redactor: Redactor,
    timeout: Duration,
    /// Partition counts of topics known to exist, with the interned name.
    partitions: Mutex<HashMap<String, (Arc<str>, u32)>>,
    /// Changes whenever a cached partition count is forgotten or changes, so the producers'
    /// own caches ([`Targets`](crate::targets::Targets)) know to look again.
    generation: AtomicU64,
    /// Per topic, indexed by partition: the partitions this process's producers write, each
    /// with the end they saw acknowledged (updated by every delivery report without a lock).
    written: Mutex<HashMap<String, Vec<Arc<Written>>>>,
}

/// A partition this process's producers write: its name for a receipt's errors, and one
/// past the highest offset they saw acknowledged.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: u32,
    end: AtomicU64,
}

impl Written {
    /// `partition` of `topic`, nothing acknowledged yet.
    pub(crate) fn new(topic: Arc<str>, partition: u32) -> Self {
        Written {
            topic,
            partition,
            end: AtomicU64::new(0),
        }
    }

    /// Records that a producer of this process saw `offset` acknowledged here.
    pub(crate) fn delivered(&self, offset: i64) {
        if let Ok(end) = u64::try_from(offset + 1) {
            self.end.fetch_max(end, Ordering::Relaxed);
        }
    }

    /// One past the highest offset acknowledged so far.
    pub(crate) fn end(&self) -> u64 {
        self.end.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metadata").finish_non_exhaustive()
    }
}

impl Metadata {
    pub(crate) fn new(
        client: BaseConsumer<LogContext>,
        redactor: Redactor,
        timeout: Duration,
    ) -> Self {
        Metadata {
            client,
            redactor,
            timeout,
            partitions: Mutex::default(),
            generation: AtomicU64::new(0),
            written: Mutex::default(),
        }
    }

    /// The partition count of `topic` from the brokers, or `None` if it does not exist.
    /// Blocks: call from a blocking thread.
    pub(crate) fn fetch_partitions(&self, topic: &str) -> Result<Option<u32>> {
        let metadata = self
            .client
            .fetch_metadata(Some(topic), self.timeout)
            .map_err(|error| Error::Admin {
                operation: format!("describing topic '{topic}'"),
                source: self.redactor.boxed(&error),
            })?;
        let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
            return Ok(None);
        };
        match found.error() {
            None if !found.partitions().is_empty() => {}
            None => return Ok(None),
            Some(code) => {
                let code = RDKafkaErrorCode::from(code);
                if code == RDKafkaErrorCode::UnknownTopicOrPartition
                    || code == RDKafkaErrorCode::UnknownTopic
                {
                    return Ok(None);
                }
                return Err(Error::Admin {
                    operation: format!("describing topic '{topic}'"),
                    source: crate::error::message(format!("the broker answered {code}")),
                });
            }
        }
        let count = found.partitions().len() as u32;
        let mut partitions = self.lock();
        let name = partitions
            .get(topic)
            .map_or_else(|| Arc::from(topic), |(name, _)| name.clone());
        if let Some((_, before)) = partitions.insert(topic.to_owned(), (name, count))
            && before != count
        {
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(Some(count))
    }

    /// The interned name and partition count of `topic`, from the cache when possible;
    /// `refresh` asks the brokers again (a partition beyond the cached count may be new).
    pub(crate) async fn partitions(
        self: &Arc<Self>,
        topic: &str,
        refresh: bool,
    ) -> Result<(Arc<str>, u32)> {
        if !refresh && let Some(known) = self.lock().get(topic) {
            return Ok(known.clone());
        }
        let metadata = self.clone();
        let name = topic.to_owned();
        let count = blocking(move || metadata.fetch_partitions(&name)).await?;
        match count {
            Some(count) => Ok((self.intern(topic), count)),
            None => Err(Error::TopicNotFound {
                topic: topic.to_owned(),
            }),
        }
    }

    /// The shared name of a topic, for records read from it.
    pub(crate) fn intern(&self, topic: &str) -> Arc<str> {
        self.lock()
            .get(topic)
            .map_or_else(|| Arc::from(topic), |(name, _)| name.clone())
    }

    /// The first `partitions` partitions of `topic` as this process's producers write them,
    /// indexed by partition: the same cells for every producer, created when first asked for.
    pub(crate) fn written(&self, topic: &Arc<str>, partitions: u32) -> Vec<Arc<Written>> {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        let cells = match written.get_mut(&**topic) {
            Some(cells) => cells,
            None => written.entry(topic.to_string()).or_default(),
        };
        while cells.len() < partitions as usize {
            let partition = cells.len() as u32;
            cells.push(Arc::new(Written::new(topic.clone(), partition)));
        }
        cells[..partitions as usize].to_vec()
    }

    /// Changes whenever a cached partition count is forgotten or changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Start and end offsets of every partition. Blocks.
    ///
    /// The end is the broker's high watermark, or one past the highest offset this
    /// process's producers saw acknowledged if that is further: a reader in the same process
    /// then never counts its own acknowledged writes as unread-yet-missing, even on a broker
    /// that reports the end late (tansu answers the base offset of the last batch plus one).
    pub(crate) fn watermarks(&self, topic: &str, partitions: u32) -> Result<Vec<PartitionOffsets>> {
        (0..partitions)
            .map(|partition| self.partition_watermarks(topic, partition))
            .collect()
    }

    /// Start and end offsets of one partition, as [`watermarks`](Self::watermarks) reads
    /// them. Blocks.
    pub(crate) fn partition_watermarks(
        &self,
        topic: &str,
        partition: u32,
    ) -> Result<PartitionOffsets> {
        // A partition's leader is known a moment after its topic is created (Apache Kafka
        // answers NotLeaderForPartition until then), or after it moved: ask again briefly.
        let deadline = Instant::now() + LEADER_WAIT;
        let (low, high) = loop {
            match self
                .client
                .fetch_watermarks(topic, partition as i32, self.timeout)
            {
                Err(error)
                    if matches!(
                        error.rdkafka_error_code(),
                        Some(
                            RDKafkaErrorCode::NotLeaderForPartition
                                | RDKafkaErrorCode::LeaderNotAvailable
                        )
                    ) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                watermarks => break watermarks,
            }
        }
        .map_err(|error| Error::Admin {
            operation: format!("reading the offsets of topic '{topic}' partition {partition}"),
            source: self.redactor.boxed(&error),
        })?;
        let delivered = self
            .written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .and_then(|cells| cells.get(partition as usize))
            .map_or(0, |cell| cell.end());
        Ok(PartitionOffsets {
            start: low.max(0) as u64,
            end: (high.max(0) as u64).max(delivered),
        })
    }

    /// Metadata of every topic (which creates none).
    pub(crate) fn client_metadata(
        &self,
        timeout: Duration,
    ) -> std::result::Result<rdkafka::metadata::Metadata, rdkafka::error::KafkaError> {
        self.client.fetch_metadata(None, timeout)
    }

    /// Forgets a topic's cached partition count.
    pub(crate) fn forget(&self, topic: &str) {
        self.lock().remove(topic);
        self.generation.fetch_add(1, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<str>, u32)>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs a blocking librdkafka call on Tokio's blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(call)
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}
