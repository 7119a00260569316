//! The error type shared by every backplane implementation.

use std::error::Error as StdError;

/// A boxed error from an implementation (I/O, librdkafka, ...), kept as the `source()`.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What went wrong talking to a backplane.
///
/// Variants are named for what failed and carry the topic, partition or group involved.
/// The cause, if any, is returned by [`source()`](StdError::source) and never repeated in the
/// message, so `{:#}` chains read cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The topic does not exist.
    #[error("topic '{topic}' not found")]
    TopicNotFound {
        /// The topic name.
        topic: String,
    },
    /// The partition is not one of the topic's partitions.
    #[error("partition {partition} of topic '{topic}' not found (the topic has {partitions})")]
    PartitionNotFound {
        /// The topic name.
        topic: String,
        /// The partition asked for.
        partition: u32,
        /// How many partitions the topic has.
        partitions: u32,
    },
    /// A topic exists with a different partition count than the one asked for.
    #[error("topic '{topic}' exists with {existing} partitions, but {requested} were asked for")]
    PartitionCountMismatch {
        /// The topic name.
        topic: String,
        /// The partition count in the request.
        requested: u32,
        /// The partition count of the existing topic.
        existing: u32,
    },
    /// A topic specification is not acceptable (zero partitions, a bad name, ...).
    #[error("invalid topic '{topic}': {reason}")]
    InvalidTopic {
        /// The topic name.
        topic: String,
        /// Why it was refused.
        reason: String,
    },
    /// A record could not be appended or its delivery failed.
    #[error("producing to topic '{topic}' partition {partition} failed")]
    Produce {
        /// The topic name.
        topic: String,
        /// The partition.
        partition: u32,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// A record is larger than the topic (or the client) accepts. Retrying cannot help: the
    /// record must be made smaller or handled as bad data.
    #[error(
        "record of {size} bytes for topic '{topic}' partition {partition} is larger than {}",
        limit.map_or_else(|| "the broker accepts".to_owned(), |limit| format!("the limit of {limit} bytes"))
    )]
    RecordTooLarge {
        /// The topic name.
        topic: String,
        /// The partition.
        partition: u32,
        /// The record's size as the backplane counts it (value, key, headers and overhead);
        /// 0 when the backplane did not say.
        size: usize,
        /// The limit, when the backplane says what it is.
        limit: Option<usize>,
    },
    /// Reading records failed.
    #[error("consuming from topic '{topic}' failed")]
    Consume {
        /// The topic name.
        topic: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// Committing offsets for a consumer group failed.
    #[error("committing offsets of group '{group}' failed")]
    Commit {
        /// The consumer group.
        group: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// An administrative operation (create, describe, list offsets) failed.
    #[error("{operation} failed")]
    Admin {
        /// What was attempted, for example `creating topic 'readings'`.
        operation: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// A consumer was asked to position itself on a partition it is not assigned.
    #[error("partition {partition} of topic '{topic}' is not assigned to this consumer")]
    NotAssigned {
        /// The topic name.
        topic: String,
        /// The partition.
        partition: u32,
    },
    /// A setting has a value the backplane does not understand.
    #[error("setting '{setting}' is '{value}', expected {expected}")]
    InvalidSetting {
        /// The setting's name, for example `isolation.level`.
        setting: String,
        /// The value given.
        value: String,
        /// What would be accepted.
        expected: &'static str,
    },
    /// The schema registry has no schema with this id.
    #[error("the schema registry has no schema with id {id}")]
    SchemaNotFound {
        /// The id a record named.
        id: u32,
    },
    /// The schema registry refused a schema for a topic: it is not compatible with the
    /// schemas registered before under the compatibility rule of its subject.
    #[error(
        "the schema registry refused the schema of topic '{topic}' under subject '{subject}': {reason}"
    )]
    SchemaRefused {
        /// The topic.
        topic: String,
        /// The registry subject.
        subject: String,
        /// The registry's reason.
        reason: String,
    },
    /// The backplane cannot do this.
    #[error("this backplane does not support {feature}")]
    Unsupported {
        /// What is missing, for example `transactions (exactly-once delivery)`.
        feature: &'static str,
    },
    /// A transaction would commit offsets of a partition that a rebalance assigned to
    /// another member of the group since: this member is a zombie, and its transaction is
    /// aborted.
    #[error(
        "the transaction commits offsets of partition {partition} of topic '{topic}' for group '{group}', which a rebalance assigned to another member; it was aborted"
    )]
    Reassigned {
        /// The consumer group.
        group: String,
        /// The topic name.
        topic: String,
        /// The partition.
        partition: u32,
    },
    /// A newer transactional producer with the same id took over; this one must stop.
    #[error("transactional producer '{id}' was fenced by a newer instance with the same id")]
    Fenced {
        /// The transactional id.
        id: String,
    },
    /// Another consumer joined the group under this member's static name and took its
    /// place; this one must stop reading.
    #[error(
        "another process joined group '{group}' as static member '{member}' and fenced this one; \
         is the app running twice under one replica name?"
    )]
    MemberFenced {
        /// The consumer group.
        group: String,
        /// The static member's name (Kafka's `group.instance.id`).
        member: String,
    },
    /// A transaction could not be committed or aborted.
    #[error("{operation} of transactional producer '{id}' failed")]
    Transaction {
        /// `committing the transaction`, `aborting the transaction`, ...
        operation: &'static str,
        /// The transactional id.
        id: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// The record belonged to a transaction that was aborted; it will never be seen.
    #[error("the transaction of producer '{id}' was aborted")]
    Aborted {
        /// The transactional id.
        id: String,
    },
    /// The backplane was shut down while the operation was pending.
    #[error("the backplane is closed")]
    Closed,
}

impl Error {
    /// Whether retrying the same operation later may succeed (a broker that is
    /// unreachable for a moment), as opposed to a mistake that retrying cannot fix.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Produce { .. }
                | Error::Consume { .. }
                | Error::Commit { .. }
                | Error::Admin { .. }
                | Error::Transaction { .. }
        )
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
