//! Topic metadata: partition counts (cached for the producers' checks) and watermarks, read
//! through a consumer-type client, which never creates topics as a side effect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::types::RDKafkaErrorCode;
use runnel_backend::{Error, PartitionOffsets, Result};

use crate::context::LogContext;
use crate::error::Redactor;

/// Reads topic metadata; shared by the backend and its producers.
pub(crate) struct Metadata {
    client: BaseConsumer<LogContext>,
    redactor: Redactor,
    timeout: Duration,
    /// Partition counts of topics known to exist, with the interned name.
    partitions: Mutex<HashMap<String, (Arc<str>, u32)>>,
    /// Per topic, indexed by partition: one past the highest offset this process's
    /// producers saw acknowledged (updated for every delivery, so looked up without
    /// allocating).
    delivered: Mutex<HashMap<String, Vec<u64>>>,
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
            delivered: Mutex::default(),
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
        self.lock()
            .insert(topic.to_owned(), (Arc::from(topic), count));
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

    /// Records that a producer of this process saw `offset` acknowledged.
    pub(crate) fn delivered(&self, topic: &str, partition: i32, offset: i64) {
        let (Ok(partition), Ok(end)) = (usize::try_from(partition), u64::try_from(offset + 1))
        else {
            return;
        };
        let mut delivered = self
            .delivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ends = match delivered.get_mut(topic) {
            Some(ends) => ends,
            None => delivered.entry(topic.to_owned()).or_default(),
        };
        if ends.len() <= partition {
            ends.resize(partition + 1, 0);
        }
        ends[partition] = ends[partition].max(end);
    }

    /// Start and end offsets of every partition. Blocks.
    ///
    /// The end is the broker's high watermark, or one past the highest offset this
    /// process's producers saw acknowledged if that is further: a reader in the same process
    /// then never counts its own acknowledged writes as unread-yet-missing, even on a broker
    /// that reports the end late (tansu answers the base offset of the last batch plus one).
    pub(crate) fn watermarks(&self, topic: &str, partitions: u32) -> Result<Vec<PartitionOffsets>> {
        (0..partitions)
            .map(|partition| {
                let (low, high) = self
                    .client
                    .fetch_watermarks(topic, partition as i32, self.timeout)
                    .map_err(|error| Error::Admin {
                        operation: format!(
                            "reading the offsets of topic '{topic}' partition {partition}"
                        ),
                        source: self.redactor.boxed(&error),
                    })?;
                let delivered = self
                    .delivered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(topic)
                    .and_then(|ends| ends.get(partition as usize).copied())
                    .unwrap_or(0);
                Ok(PartitionOffsets {
                    start: low.max(0) as u64,
                    end: (high.max(0) as u64).max(delivered),
                })
            })
            .collect()
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
