//! The runtime's error type.

use std::time::Duration;

/// Why a run could not start or did not end cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A managed topic could not be created.
    #[error("creating topic '{topic}' failed")]
    CreateTopic {
        /// The topic name.
        topic: String,
        /// The cause.
        #[source]
        source: runnel_backend::Error,
    },
    /// A topic marked `managed = false` does not exist.
    #[error(
        "topic '{topic}' does not exist, and the blueprint says it is not managed by runnel (managed = false)"
    )]
    MissingTopic {
        /// The topic name.
        topic: String,
    },
    /// Looking up a topic failed.
    #[error("looking up topic '{topic}' failed")]
    DescribeTopic {
        /// The topic name.
        topic: String,
        /// The cause.
        #[source]
        source: runnel_backend::Error,
    },
    /// `run-streamlet` named an instance the blueprint does not have.
    #[error("'{name}' is not a streamlet of the blueprint; it has: {}", known.join(", "))]
    UnknownInstance {
        /// The name asked for.
        name: String,
        /// The instances of the blueprint.
        known: Vec<String>,
    },
    /// An exactly-once streamlet was asked to run on a backplane without transactions.
    #[error(
        "streamlet '{instance}' asks for exactly-once delivery, which this backplane does not support; run it on Kafka (--kafka)"
    )]
    TransactionsUnsupported {
        /// The instance.
        instance: String,
    },
    /// Inlets cannot read records already on their topics (a schema changed in a way that
    /// does not resolve what was written before), or outlets' schemas break their topics'
    /// compatibility rules.
    #[error("{}", unreadable.iter().map(ToString::to_string).chain(incompatible.iter().map(ToString::to_string)).collect::<Vec<_>>().join("\n"))]
    UnreadableSchemas {
        /// Each inlet and schema that does not resolve, naming the field.
        unreadable: Vec<runnel_host::UnreadableSchema>,
        /// Each outlet whose schema breaks its topic's rule, naming the version and field.
        incompatible: Vec<runnel_host::IncompatibleSchema>,
    },
    /// Reading the schemas kept with a topic failed.
    #[error("reading the schemas of the topics failed")]
    TopicSchemas(#[source] runnel_backend::Error),
    /// Streamlets kept running after a shutdown request for longer than allowed.
    #[error("streamlets {} did not stop within {timeout:?} of the shutdown request", pending.join(", "))]
    DrainTimeout {
        /// How long the run waited.
        timeout: Duration,
        /// The instances still running.
        pending: Vec<String>,
    },
}
