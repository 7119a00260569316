//! Transactions on [`MemoryBackend`]: a transaction's records wait in the producer and are
//! appended, with the offsets, when it commits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::{MemoryBackend, Topic, lock};
use crate::{
    Consumer, ConsumerConfig, Error, GroupOffsets, Producer, Receipt, Record, Result,
    TransactionalProducer,
};

/// A record of the open transaction and who waits for its offset.
#[derive(Debug)]
struct Pending {
    topic: Arc<Topic>,
    partition: usize,
    record: Record,
    delivered: oneshot::Sender<Result<u64>>,
}

/// A transactional producer in memory; a newer one with the same id fences it.
#[derive(Debug)]
pub(super) struct MemoryTransactionalProducer {
    backend: MemoryBackend,
    id: String,
    epoch: u64,
    pending: Mutex<Vec<Pending>>,
    /// Per consumer group: the member this producer's consumer joined as.
    members: Mutex<HashMap<String, crate::group::MemberId>>,
}

impl MemoryTransactionalProducer {
    /// Registers a new epoch for `id`, fencing every older producer with that id.
    pub(super) fn new(backend: MemoryBackend, id: &str) -> Self {
        let epoch = {
            let mut epochs = lock(&backend.state.epochs);
            let epoch = epochs.entry(id.to_owned()).or_insert(0);
            *epoch += 1;
            *epoch
        };
        MemoryTransactionalProducer {
            backend,
            id: id.to_owned(),
            epoch,
            pending: Mutex::default(),
            members: Mutex::default(),
        }
    }

    fn check_epoch(&self) -> Result<()> {
        let current = lock(&self.backend.state.epochs).get(&self.id).copied();
        if current == Some(self.epoch) {
            Ok(())
        } else {
            Err(Error::Fenced {
                id: self.id.clone(),
            })
        }
    }
}

#[async_trait]
impl Producer for MemoryTransactionalProducer {
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt> {
        let (topic, partition) = self.backend.state.partition(topic, partition)?;
        let (delivered, receipt) = oneshot::channel();
        lock(&self.pending).push(Pending {
            topic,
            partition,
            record,
            delivered,
        });
        let id = self.id.clone();
        Ok(Receipt::new(async move {
            receipt.await.unwrap_or(Err(Error::Aborted { id }))
        }))
    }

    /// Records are acknowledged when their transaction commits; there is nothing to wait for.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl TransactionalProducer for MemoryTransactionalProducer {
    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
        // Only committed records are ever appended, so every reader is read_committed.
        let consumer = self.backend.member(config)?;
        lock(&self.members).insert(config.group.clone(), consumer.member);
        Ok(Arc::new(consumer))
    }

    async fn commit(&self, offsets: &[GroupOffsets]) -> Result<()> {
        let state = &self.backend.state;
        // Hold the epoch lock while committing, so a producer that fences this one waits
        // until the commit is complete or sees it fail.
        let epochs = lock(&state.epochs);
        if epochs.get(&self.id).copied() != Some(self.epoch) {
            drop(epochs);
            self.abort_pending();
            return Err(Error::Fenced {
                id: self.id.clone(),
            });
        }
        let members = lock(&self.members).clone();
        let owned = state
            .groups
            .check_owned(&members, offsets, |topic| state.partitions_of(topic));
        if let Err(reassigned) = owned {
            drop(epochs);
            self.abort_pending();
            return Err(reassigned);
        }
        for group in offsets {
            state.store_offsets(&group.group, &group.offsets)?;
        }
        let pending = std::mem::take(&mut *lock(&self.pending));
        let appended = !pending.is_empty();
        for record in pending {
            let offset = state.append(&record.topic, record.partition, record.record);
            let _ = record.delivered.send(Ok(offset));
        }
        drop(epochs);
        if appended {
            state.appended.send_modify(|count| *count += 1);
        }
        Ok(())
    }

    async fn abort(&self) -> Result<()> {
        self.abort_pending();
        self.check_epoch()
    }
}

impl MemoryTransactionalProducer {
    fn abort_pending(&self) {
        for record in std::mem::take(&mut *lock(&self.pending)) {
            let _ = record.delivered.send(Err(Error::Aborted {
                id: self.id.clone(),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, CommitOffset, TopicSpec, TransactionConfig};

    async fn backend() -> MemoryBackend {
        let backend = MemoryBackend::new();
        backend
            .create_topic(&TopicSpec::new("out", 1))
            .await
            .unwrap();
        backend
    }

    #[tokio::test]
    async fn aborted_records_are_never_appended() {
        let backend = backend().await;
        let producer = backend
            .transactional_producer(&TransactionConfig::new("t"))
            .await
            .unwrap();
        let receipt = producer.send("out", 0, Record::new("a")).await.unwrap();
        producer.abort().await.unwrap();
        assert!(matches!(receipt.await, Err(Error::Aborted { .. })));
        drop(producer.send("out", 0, Record::new("b")).await.unwrap());
        producer.commit(&[]).await.unwrap();
        let values: Vec<_> = backend
            .records("out")
            .unwrap()
            .into_iter()
            .map(|r| r.record.value)
            .collect();
        assert_eq!(values, [Some(bytes::Bytes::from("b"))]);
    }

    #[tokio::test]
    async fn a_newer_producer_fences_the_older_one() {
        let backend = backend().await;
        let old = backend
            .transactional_producer(&TransactionConfig::new("t"))
            .await
            .unwrap();
        drop(old.send("out", 0, Record::new("zombie")).await.unwrap());
        let new = backend
            .transactional_producer(&TransactionConfig::new("t"))
            .await
            .unwrap();
        let offsets = [GroupOffsets {
            group: "g".into(),
            offsets: vec![CommitOffset {
                topic: "out".into(),
                partition: 0,
                offset: 1,
            }],
        }];
        assert!(matches!(
            old.commit(&offsets).await,
            Err(Error::Fenced { id }) if id == "t"
        ));
        new.commit(&[]).await.unwrap();
        assert!(backend.records("out").unwrap().is_empty());
        assert_eq!(backend.committed("g", "out").await.unwrap(), [None]);
    }
}
