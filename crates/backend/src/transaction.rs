//! Exactly-once delivery: a producer whose records and consumer offsets commit together.
//!
//! A [`TransactionalProducer`] is a [`Producer`] whose sends belong to the current
//! transaction, and which makes the consumers whose offsets it commits
//! ([`TransactionalProducer::consumer`]). [`commit`](TransactionalProducer::commit) makes
//! every record sent since the previous commit visible and stores the given offsets of those
//! consumers' groups, atomically; [`abort`](TransactionalProducer::abort) discards them. A
//! new producer with the same [`TransactionConfig::id`] fences the old one: the old one's
//! open transaction is aborted and its later commits fail with
//! [`Error::Fenced`](crate::Error::Fenced).
//!
//! On Kafka this is a transactional producer (`transactional.id`) that sends the consumed
//! offsets into the transaction with the consumer's group metadata, and `read_committed`
//! consumers. [`MemoryBackend`](crate::MemoryBackend) holds a transaction's records back
//! until it commits. The embedded log does as Kafka: records carry the producer id and
//! epoch, commit and abort write markers to every partition touched, and read-committed
//! consumers stop at the last stable offset and skip aborted records.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{CommitOffset, Consumer, ConsumerConfig, Producer, ProducerConfig, Result};

/// How to create a transactional producer.
///
/// ```
/// let config = runnel_backend::TransactionConfig::new("sensor-data.copy.0");
/// assert_eq!(config.id, "sensor-data.copy.0");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionConfig {
    /// Identifies the producer across restarts (Kafka's `transactional.id`). A new producer
    /// with the same id fences the previous one and aborts its open transaction.
    pub id: String,
    /// Producer settings, with Kafka's names.
    pub producer: ProducerConfig,
}

impl TransactionConfig {
    /// A transactional producer called `id` with default settings.
    pub fn new(id: impl Into<String>) -> Self {
        TransactionConfig {
            id: id.into(),
            producer: ProducerConfig::default(),
        }
    }
}

/// Offsets to commit for one consumer group, as part of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupOffsets {
    /// The consumer group; a consumer of it was made by the same producer.
    pub group: String,
    /// The next offset to read, per partition.
    pub offsets: Vec<CommitOffset>,
}

/// A producer whose records, together with consumer offsets, commit atomically.
///
/// Records sent through it are invisible to readers until [`commit`](Self::commit); a
/// [`Receipt`](crate::Receipt) may complete only at the commit, so never wait for one before
/// committing. After [`abort`](Self::abort), or when the process dies, they are never seen.
///
/// ```
/// use runnel_backend::{Backend, CommitOffset, ConsumerConfig, GroupOffsets, MemoryBackend, Record, TopicSpec, TransactionConfig};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> runnel_backend::Result<()> {
/// let backend = MemoryBackend::new();
/// backend.create_topic(&TopicSpec::new("in", 1)).await?;
/// backend.create_topic(&TopicSpec::new("out", 1)).await?;
/// let producer = backend.transactional_producer(&TransactionConfig::new("copy")).await?;
/// let consumer = producer.consumer(&ConsumerConfig::new("copy.in", ["in"])).await?;
/// let _receipt = producer.send("out", 0, Record::new("copied")).await?;
/// assert_eq!(backend.offsets("out").await?[0].end, 0, "invisible until committed");
/// let offsets = vec![CommitOffset { topic: "in".into(), partition: 0, offset: 1 }];
/// producer.commit(&[GroupOffsets { group: "copy.in".into(), offsets }]).await?;
/// assert_eq!(backend.offsets("out").await?[0].end, 1);
/// assert_eq!(backend.committed("copy.in", "in").await?, [Some(1)]);
/// # drop(consumer);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait TransactionalProducer: Producer {
    /// Joins a consumer group whose offsets this producer commits. It reads committed
    /// records only (Kafka's `read_committed`), and [`Consumer::commit`] on it is not used:
    /// its offsets go through [`commit`](Self::commit).
    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>>;

    /// Makes every record sent since the previous commit or abort visible and stores
    /// `offsets`, atomically, then begins the next transaction.
    ///
    /// # Errors
    ///
    /// [`Error::Fenced`](crate::Error::Fenced) when a newer producer with the same id exists;
    /// any other failure leaves the transaction to be [aborted](Self::abort).
    async fn commit(&self, offsets: &[GroupOffsets]) -> Result<()>;

    /// Discards every record sent since the previous commit, then begins the next
    /// transaction.
    async fn abort(&self) -> Result<()>;
}
