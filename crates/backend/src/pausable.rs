//! [`PausableBackend`]: a backplane that can stop answering, for testing how a runner
//! notices an outage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use crate::{
    Backend, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, PartitionReader, Producer,
    ProducerConfig, ReaderConfig, Result, TopicCreation, TopicInfo, TopicSpec,
};

/// A [`MemoryBackend`] whose administrative requests (creating and describing topics,
/// reading offsets and committed offsets) hang while it is [paused](PausableBackend::pause),
/// as a frozen broker's do; producers, consumers and partition readers keep working.
///
/// ```
/// use runnel_backend::{Backend, PausableBackend};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let backend = PausableBackend::default();
/// backend.pause();
/// let asked = tokio::time::timeout(std::time::Duration::from_millis(50), backend.offsets("t"));
/// assert!(asked.await.is_err(), "no answer while paused");
/// backend.resume();
/// assert!(backend.offsets("t").await.is_err(), "an answer again: the topic does not exist");
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct PausableBackend {
    memory: MemoryBackend,
    paused: Arc<AtomicBool>,
}

impl PausableBackend {
    /// The in-memory backplane behind it.
    pub fn memory(&self) -> &MemoryBackend {
        &self.memory
    }

    /// Stops answering administrative requests.
    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    /// Answers again.
    pub fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    async fn answer(&self) {
        while self.paused.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[async_trait]
impl Backend for PausableBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> Result<TopicCreation> {
        self.answer().await;
        self.memory.create_topic(spec).await
    }

    async fn topic(&self, name: &str) -> Result<Option<TopicInfo>> {
        self.answer().await;
        self.memory.topic(name).await
    }

    async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
        self.answer().await;
        self.memory.offsets(topic).await
    }

    async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
        self.answer().await;
        self.memory.committed(group, topic).await
    }

    async fn producer(&self, config: &ProducerConfig) -> Result<Arc<dyn Producer>> {
        self.memory.producer(config).await
    }

    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
        self.memory.consumer(config).await
    }

    async fn partition_reader(&self, config: &ReaderConfig) -> Result<Box<dyn PartitionReader>> {
        self.memory.partition_reader(config).await
    }
}
