//! [`ToolError`]: why a topic or offset tool failed.

/// Why a tool failed. Messages say what was asked and of what.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The embedded log could not be read or opened.
    #[error("the embedded log in '{directory}' cannot be used")]
    Log {
        /// The data directory.
        directory: String,
        /// The cause.
        #[source]
        source: runnel_embedded_log::Error,
    },
    /// The backplane refused an operation.
    #[error("{operation} failed")]
    Backplane {
        /// What was asked, e.g. `reading topic 'metrics' partition 0`.
        operation: String,
        /// The cause.
        #[source]
        source: runnel_backend::Error,
    },
    /// A topic that does not exist.
    #[error("topic '{topic}' not found; the topics are: {known}")]
    TopicNotFound {
        /// The topic asked for.
        topic: String,
        /// The topics that exist, comma-separated.
        known: String,
    },
    /// A record could not be encoded with its topic's schema.
    #[error("line {line}: {reason}")]
    Encode {
        /// The input line (from 1).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Input could not be read, or output not written.
    #[error("{what} failed")]
    Io {
        /// `reading standard input`, `reading 'record.bin'`, ...
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An argument does not make sense.
    #[error("{0}")]
    Usage(String),
    /// Kafka was asked for but this binary was built without it.
    #[error("this binary was built without Kafka support (the `kafka` feature)")]
    NoKafka,
    /// Connecting to Kafka failed.
    #[cfg(feature = "kafka")]
    #[error("connecting to kafka failed")]
    Kafka(#[source] runnel_kafka::Error),
}

/// The result type of this crate.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;
