//! The backplane conformance suite against the in-memory backplane.
#![cfg(feature = "conformance")]

runnel_backend::conformance_tests!(async { runnel_backend::MemoryBackend::new() });
runnel_backend::transaction_conformance_tests!(async { runnel_backend::MemoryBackend::new() });

/// The suite again on a backplane that keeps [`Backend::partition_reader`]'s default (a
/// consumer group of its own per reader), so the default passes it too.
mod default_partition_reader {
    use std::sync::Arc;

    use async_trait::async_trait;
    use runnel_backend::{
        Backend, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, Producer,
        ProducerConfig, Result, TopicCreation, TopicInfo, TopicSpec, TransactionConfig,
        TransactionalProducer,
    };

    /// A [`MemoryBackend`] that hands on every call but `partition_reader`.
    #[derive(Debug, Default)]
    struct WithoutOwnReader(MemoryBackend);

    #[async_trait]
    impl Backend for WithoutOwnReader {
        async fn create_topic(&self, spec: &TopicSpec) -> Result<TopicCreation> {
            self.0.create_topic(spec).await
        }
        async fn topic(&self, name: &str) -> Result<Option<TopicInfo>> {
            self.0.topic(name).await
        }
        async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
            self.0.offsets(topic).await
        }
        async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
            self.0.committed(group, topic).await
        }
        async fn producer(&self, config: &ProducerConfig) -> Result<Arc<dyn Producer>> {
            self.0.producer(config).await
        }
        async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
            self.0.consumer(config).await
        }
        fn supports_transactions(&self) -> bool {
            true
        }
        async fn transactional_producer(
            &self,
            config: &TransactionConfig,
        ) -> Result<Arc<dyn TransactionalProducer>> {
            self.0.transactional_producer(config).await
        }
    }

    runnel_backend::conformance_tests!(async { WithoutOwnReader::default() });
    runnel_backend::transaction_conformance_tests!(async { WithoutOwnReader::default() });
}
