//! The Kafka backplane of Runnel: the same streamlets on a Kafka cluster, one process per
//! streamlet if you like, scaled through consumer groups, exactly-once on request.
//!
//! [`KafkaBackend`] implements [`runnel_backend::Backend`] over librdkafka (the `rdkafka`
//! crate, built from bundled sources); this is the only Runnel crate that links it.
//!
//! ```no_run
//! use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
//! use runnel_kafka::{KafkaBackend, KafkaConfig};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = KafkaBackend::connect(KafkaConfig::new("localhost:9092")).await?;
//! backend.create_topic(&TopicSpec::new("readings", 3)).await?;
//! let producer = backend.producer(&ProducerConfig::default()).await?;
//! let offset = producer.send("readings", 0, Record::new("21.5").with_key("sensor-1")).await?.await?;
//! let consumer = backend.consumer(&ConsumerConfig::new("app.logger.in", ["readings"])).await?;
//! let records = consumer.poll(100).await?;
//! # let _ = (offset, records);
//! # Ok(()) }
//! ```
//!
//! # Design
//!
//! - **Explicit partitions.** The runtime picks the partition (murmur2 of the key, as
//!   Kafka's default partitioner does, `runnel_backend::partition_for_key`) and the producer
//!   sends to it, so plain Kafka clients and Runnel agree on where a key lives.
//! - **Producers** are idempotent with `acks=all`. `send` returns once librdkafka has
//!   queued the record, waiting (without polling a timer) while its queue is full; the
//!   receipt completes from the delivery report.
//! - **Consumers** run one polling thread each, which hands batches to the runtime over a
//!   small bounded channel and pauses its partitions while the runtime is behind, so a slow
//!   streamlet never misses the poll interval and drops out of its group.
//! - **Commit before revocation.** The runtime [stages](runnel_backend::Consumer::stage)
//!   offsets as soon as their outputs are acknowledged and commits them every commit
//!   interval. When a rebalance is about to take partitions away, the consumer's rebalance
//!   callback (on the polling thread) commits what is staged for them, synchronously, so the
//!   next owner starts where this member really got to. That keeps at-least-once (only
//!   acknowledged work is ever committed) and keeps duplicates after a rebalance to what was
//!   in flight. A commit refused because the group is rebalancing is not an error: the
//!   offsets stay staged for the callback or the next commit.
//! - **Partition readers** ([`runnel_backend::Backend::partition_reader`]) `assign` the
//!   partitions they read at explicit offsets on a client of their own: no subscription,
//!   no group join, no commits, so restoring keyed state or reading a checkpoint starts
//!   with the first fetch instead of after a join of seconds.
//! - **Exact start positions.** After an assignment, each partition's start (committed
//!   offset, else earliest or latest) is resolved and assigned explicitly, so `positions()`
//!   is exact from the start and `StartFrom::Latest` never skips a record appended right
//!   after the member joined.
//! - **Exactly-once** ([`runnel_backend::TransactionalProducer`]): a transactional producer
//!   (`transactional.id`) whose consumers read `read_committed`; every commit sends the
//!   consumed offsets into the transaction with the consumer's group metadata
//!   (`send_offsets_to_transaction`), commits it and begins the next one. A producer fenced
//!   by a newer one with its id, or whose group generation went stale, fails the commit; the
//!   runtime aborts and restarts the streamlet from the last committed offsets.
//! - **Secrets.** Values of settings whose names look secret ([`is_secret`]) never appear
//!   in logs or errors: librdkafka's messages pass through [`KafkaSettings::redact`].
//! - **Schemas in a registry.** With [`REGISTRY_URL`] among the settings, the backplane
//!   keeps each topic's value schemas in a schema registry speaking the Confluent API
//!   (subjects by [`SubjectNameStrategy`], ids and schemas cached), and records name their
//!   schema by its id in the Confluent wire format
//!   ([`runnel_backend::SchemaNaming::RegistryId`]); `docs/schemas.md` says more.
//!
//! Where to start: [`KafkaBackend::connect`], [`KafkaConfig`].
#![warn(missing_docs)]

mod assigned;
mod backend;
mod config;
mod consumer;
mod context;
mod copy_buffer;
mod delivery;
mod error;
mod inspect;
mod metadata;
mod producer;
mod record_deletion;
mod registry;
mod settings;
mod targets;
#[cfg(feature = "test-broker")]
pub mod test_broker;
#[cfg(feature = "test-broker")]
pub mod test_registry;
mod topic_limits;
mod transaction;

pub use backend::KafkaBackend;
pub use config::KafkaConfig;
pub use error::{Error, LibrdkafkaError};
pub use inspect::KafkaTopic;
pub use registry::{REGISTRY_URL, REGISTRY_USER_INFO, SUBJECT_NAME_STRATEGY, SubjectNameStrategy};
pub use settings::{KafkaSettings, REDACTED, is_secret};
