//! A backend in a temporary directory, and helpers to produce and read back.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, PartitionOffsets, Producer, ProducerConfig, Record,
    TopicCreation, TopicInfo, TopicSpec,
};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use tempfile::TempDir;

/// An [`EmbeddedBackend`] that owns its temporary directory, for the conformance suite.
#[derive(Debug)]
pub(crate) struct TemporaryBackend {
    backend: EmbeddedBackend,
    _directory: TempDir,
}

impl TemporaryBackend {
    pub(crate) fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        TemporaryBackend {
            backend,
            _directory: directory,
        }
    }
}

#[async_trait]
impl Backend for TemporaryBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> runnel_backend::Result<TopicCreation> {
        self.backend.create_topic(spec).await
    }
    async fn topic(&self, name: &str) -> runnel_backend::Result<Option<TopicInfo>> {
        self.backend.topic(name).await
    }
    async fn offsets(&self, topic: &str) -> runnel_backend::Result<Vec<PartitionOffsets>> {
        self.backend.offsets(topic).await
    }
    async fn committed(
        &self,
        group: &str,
        topic: &str,
    ) -> runnel_backend::Result<Vec<Option<u64>>> {
        self.backend.committed(group, topic).await
    }
    async fn producer(&self, config: &ProducerConfig) -> runnel_backend::Result<Arc<dyn Producer>> {
        self.backend.producer(config).await
    }
    fn supports_transactions(&self) -> bool {
        self.backend.supports_transactions()
    }
    async fn transactional_producer(
        &self,
        config: &runnel_backend::TransactionConfig,
    ) -> runnel_backend::Result<Arc<dyn runnel_backend::TransactionalProducer>> {
        self.backend.transactional_producer(config).await
    }
    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        self.backend.consumer(config).await
    }
    async fn partition_reader(
        &self,
        config: &runnel_backend::ReaderConfig,
    ) -> runnel_backend::Result<Box<dyn runnel_backend::PartitionReader>> {
        self.backend.partition_reader(config).await
    }
}

/// Sends `values` to one partition one at a time (so each is its own batch) and returns the
/// offsets from the receipts.
pub(crate) async fn produce(
    backend: &EmbeddedBackend,
    topic: &str,
    partition: u32,
    values: &[String],
) -> Vec<u64> {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut offsets = Vec::new();
    for value in values {
        let receipt = producer
            .send(topic, partition, Record::new(value.clone()))
            .await
            .unwrap();
        offsets.push(receipt.await.unwrap());
    }
    offsets
}

/// `count` values `"{prefix}-0"`, `"{prefix}-1"`, ...
pub(crate) fn values(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

/// Every record of a topic from `group`'s position to the current end, as
/// `(partition, offset, value)`, sorted by partition and offset.
pub(crate) async fn read_to_end(
    backend: &EmbeddedBackend,
    group: &str,
    topic: &str,
) -> Vec<(u32, u64, String)> {
    let ends = backend.offsets(topic).await.unwrap();
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, [topic]))
        .await
        .unwrap();
    let mut records = Vec::new();
    loop {
        let positions = consumer.positions();
        let done = positions.iter().all(|(topic_partition, position)| {
            *position >= ends[topic_partition.partition as usize].end
        });
        if done && positions.len() == ends.len() {
            break;
        }
        let polled = tokio::time::timeout(std::time::Duration::from_secs(10), consumer.poll(1000))
            .await
            .expect("records up to the end offsets arrive");
        for consumed in polled.unwrap() {
            let value =
                String::from_utf8(consumed.record.value.expect("a non-null value").to_vec())
                    .unwrap();
            records.push((consumed.partition, consumed.offset, value));
        }
    }
    consumer.close().await.unwrap();
    records.sort();
    records
}

/// The segment files of a partition, oldest first.
pub(crate) fn segment_files(directory: &Path, topic: &str, partition: u32) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(
        directory
            .join("topics")
            .join(topic)
            .join(partition.to_string()),
    )
    .unwrap()
    .map(|entry| entry.unwrap().path())
    .filter(|path| path.extension().is_some_and(|extension| extension == "log"))
    .collect();
    files.sort();
    files
}

/// A log whose segments hold a few small batches each.
pub(crate) fn small_segments() -> LogConfig {
    LogConfig::default().with_segment_bytes(256)
}
