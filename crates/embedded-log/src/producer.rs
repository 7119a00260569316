//! The embedded log's [`Producer`]: hands records to partitions' pending buffers and returns
//! receipts that complete when the writer acknowledges their batch.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use runnel_backend::{Producer, Receipt, Record, TrySend};

use crate::partition::lock;
use crate::shared::{Shared, TopicLog};

/// Appends to any topic of an [`EmbeddedBackend`](crate::EmbeddedBackend).
///
/// `send` returns as soon as the record is encoded into the partition's pending buffer; it
/// waits only while that buffer is full. The receipt completes once the batch holding the
/// record is acknowledged under the log's [`FsyncPolicy`](crate::FsyncPolicy).
#[derive(Debug)]
pub(crate) struct EmbeddedProducer {
    shared: Arc<Shared>,
    /// The topics this producer sent to, by name: a producer writes a few topics, and
    /// finding one here costs less than the log's shared, hashed topic map on every send.
    /// Topics are never deleted, so an entry never goes stale.
    recent: Mutex<Vec<(Box<str>, Arc<TopicLog>)>>,
}

impl EmbeddedProducer {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        EmbeddedProducer {
            shared,
            recent: Mutex::new(Vec::new()),
        }
    }

    /// The log of `topic`, from the producer's own list when it sent there before.
    fn topic(&self, topic: &str) -> runnel_backend::Result<Arc<TopicLog>> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, log)) = recent.iter().find(|(name, _)| &**name == topic) {
            return Ok(log.clone());
        }
        let log = self.shared.topic(topic)?;
        recent.push((topic.into(), log.clone()));
        Ok(log)
    }

    /// The log of `topic`, once `partition` is known to be one of its partitions.
    fn topic_with(&self, topic: &str, partition: u32) -> runnel_backend::Result<Arc<TopicLog>> {
        let topic_log = self.topic(topic)?;
        if partition as usize >= topic_log.partitions.len() {
            return Err(runnel_backend::Error::PartitionNotFound {
                topic: topic.to_owned(),
                partition,
                partitions: topic_log.partitions.len() as u32,
            });
        }
        Ok(topic_log)
    }
}

#[async_trait]
impl Producer for EmbeddedProducer {
    async fn send(
        &self,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> runnel_backend::Result<Receipt> {
        let topic_log = self.topic_with(topic, partition)?;
        let log = &topic_log.partitions[partition as usize];
        let accepted = log
            .append(&record)
            .await
            .map_err(|error| error.into_produce(topic, partition))?;
        Ok(accepted.into_receipt(&log.topic, partition))
    }

    fn try_send(&self, topic: &str, partition: u32, record: Record) -> TrySend {
        let topic_log = match self.topic_with(topic, partition) {
            Ok(topic_log) => topic_log,
            Err(error) => return TrySend::Sent(Err(error)),
        };
        let log = &topic_log.partitions[partition as usize];
        match log.try_append(&record) {
            Ok(Some(accepted)) => TrySend::Sent(Ok(accepted.into_receipt(&log.topic, partition))),
            Ok(None) => TrySend::Wait(record),
            Err(error) => TrySend::Sent(Err(error.into_produce(topic, partition))),
        }
    }

    /// Waits for the last batch of every partition in the log, which holds or follows every
    /// record sent before the call (by this producer or any other).
    async fn flush(&self) -> runnel_backend::Result<()> {
        for partition in self.shared.all_partitions() {
            let last = lock(&partition.pending).last_completion();
            if let Some(completion) = last
                && let Err(error) = completion.wait().await
            {
                return Err(runnel_backend::Error::Produce {
                    topic: partition.topic.to_string(),
                    partition: partition.number,
                    source: Box::new(error),
                });
            }
        }
        Ok(())
    }
}
