//! The backplane of Runnel: the durable, partitioned log that connects streamlets.
//!
//! A backplane is anything that implements [`Backend`]: it creates topics, hands out
//! [`Producer`]s that append [`Record`]s and report when each one is durable (a
//! [`Receipt`]), [`Consumer`]s that read as members of a consumer group and commit
//! offsets, and [`PartitionReader`]s that read chosen partitions from chosen offsets without
//! a group. The runtime is written against these traits only, so the same streamlets run on
//!
//! - [`MemoryBackend`] (this crate), for tests and the streamlet test kit;
//! - the embedded log (`runnel-embedded-log`), durable files on one machine, the default;
//! - Kafka (`runnel-kafka`).
//!
//! Every implementation must pass the same conformance suite (the `conformance` module,
//! behind the feature of that name).
//!
//! ```
//! use runnel_backend::{Backend, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> runnel_backend::Result<()> {
//! let backend = MemoryBackend::new();
//! backend.create_topic(&TopicSpec::new("readings", 2)).await?;
//! let producer = backend.producer(&ProducerConfig::default()).await?;
//! let offset = producer.send("readings", 1, Record::new("21.5").with_key("sensor-1")).await?.await?;
//! assert_eq!(offset, 0);
//! # Ok(()) }
//! ```
//!
//! Start with [`Backend`]; the semantics every implementation promises are written on its
//! methods.
#![deny(missing_docs)]

mod backend;
mod error;
pub mod group;
mod memory;
mod partitioner;
mod reader;
mod record;
mod schema;
mod topic;
mod transaction;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "testing")]
mod pausable;

pub use backend::{
    Backend, Consumer, ConsumerConfig, Isolation, Producer, ProducerConfig, Receipt, ReceiptSource,
    StartFrom, TrySend,
};
pub use error::{BoxError, Error, Result};
pub use memory::MemoryBackend;
pub use partitioner::{murmur2, partition_for_key};
#[cfg(feature = "testing")]
pub use pausable::PausableBackend;
pub use reader::{PartitionReader, ReaderConfig};
pub use record::{CommitOffset, ConsumedRecord, Header, Headers, Record, TopicPartition};
pub use schema::{SchemaNaming, TopicSchema};
pub use topic::{PartitionOffsets, TopicCreation, TopicInfo, TopicSpec};
pub use transaction::{GroupOffsets, TransactionConfig, TransactionalProducer};
