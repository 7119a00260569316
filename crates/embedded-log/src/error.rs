//! The crate's [`Error`]: what failed in the embedded log, with the file and byte position.
//!
//! Backplane callers see these as the `source()` of a [`runnel_backend::Error`]; the
//! conversion is [`Error::into_backend`] and friends.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// What went wrong in the embedded log.
///
/// Variants are named for what failed and carry the path and, where it matters, the byte
/// position in the file. An I/O cause is returned by `source()` and not repeated in the
/// message.
///
/// ```
/// use std::error::Error as _;
/// let error = runnel_embedded_log::Error::Sync {
///     path: "/data/topics/t/0/00000000000000000000.log".into(),
///     source: std::io::Error::other("input/output error"),
/// };
/// assert_eq!(error.to_string(), "syncing '/data/topics/t/0/00000000000000000000.log' to disk failed");
/// assert_eq!(error.source().unwrap().to_string(), "input/output error");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process (or another [`EmbeddedBackend`](crate::EmbeddedBackend) in this one)
    /// has the data directory open.
    #[error("log directory '{}' is in use by {}", directory.display(), holder(*pid))]
    DirectoryLocked {
        /// The data directory.
        directory: PathBuf,
        /// The process id written in the lock file, if it could be read.
        pid: Option<u32>,
    },
    /// Taking the lock on the data directory failed for a reason other than contention.
    #[error("locking '{}' failed", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Creating a directory failed.
    #[error("creating directory '{}' failed", path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Listing a directory failed.
    #[error("listing directory '{}' failed", path.display())]
    ListDirectory {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Opening or creating a file failed.
    #[error("opening '{}' failed", path.display())]
    OpenFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Reading a file failed.
    #[error("reading '{}' at byte {position} failed", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Where the read started.
        position: u64,
        /// The cause.
        source: io::Error,
    },
    /// Writing a file failed.
    #[error("writing '{}' at byte {position} failed", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Where the write started.
        position: u64,
        /// The cause.
        source: io::Error,
    },
    /// Flushing a file or directory to disk (`fsync`) failed.
    #[error("syncing '{}' to disk failed", path.display())]
    Sync {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Cutting a file to a length failed.
    #[error("truncating '{}' to {length} bytes failed", path.display())]
    Truncate {
        /// The file.
        path: PathBuf,
        /// The length asked for.
        length: u64,
        /// The cause.
        source: io::Error,
    },
    /// Renaming a file failed.
    #[error("renaming '{}' to '{}' failed", from.display(), to.display())]
    Rename {
        /// The file's old name.
        from: PathBuf,
        /// The file's new name.
        to: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Removing a file failed.
    #[error("removing '{}' failed", path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A directory the topic tools were pointed at holds no embedded log.
    #[error("'{}' is not an embedded log directory (it has no topics/)", path.display())]
    NotALog {
        /// The directory.
        path: PathBuf,
    },
    /// A topic (or `topic/partition`) the topic tools asked for does not exist.
    #[error("topic '{topic}' not found")]
    TopicNotFound {
        /// The topic, or `topic/partition`.
        topic: String,
    },
    /// A record batch failed its checks (checksum, length, offsets) somewhere other than the
    /// torn tail that recovery truncates.
    #[error("corrupt record batch in '{}' at byte {position}: {problem}", path.display())]
    CorruptBatch {
        /// The segment file.
        path: PathBuf,
        /// The byte position of the batch in the file.
        position: u64,
        /// What was wrong with it.
        problem: String,
    },
    /// A metadata file (topic settings, committed offsets) could not be understood.
    #[error("corrupt metadata file '{}': {problem}", path.display())]
    CorruptMetadata {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        problem: String,
    },
    /// A record is larger than [`LogConfig::max_record_bytes`](crate::LogConfig).
    #[error("record of {size} bytes exceeds the limit of {limit} bytes")]
    RecordTooLarge {
        /// The record's encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An earlier write or sync of this partition failed, so it refuses further appends until
    /// the log is reopened (which runs recovery).
    #[error("partition directory '{}' stopped after an earlier failure", path.display())]
    PartitionFailed {
        /// The partition directory.
        path: PathBuf,
        /// The failure that stopped it.
        source: SharedError,
    },
    /// A consumer-group name cannot be stored as a file name (too long once encoded).
    #[error("consumer group name of {length} bytes is too long to store")]
    GroupNameTooLong {
        /// The length of the name in bytes.
        length: usize,
    },
    /// A transactional producer's record was refused because a newer producer with the
    /// same transactional id took over (its epoch is older than the partition's newest).
    #[error("a newer producer with the same transactional id fenced this one")]
    ProducerFenced,
    /// A batch the operation waited for failed.
    #[error(transparent)]
    Shared(SharedError),
    /// The log was shut down while the operation was pending.
    #[error("the embedded log is closed")]
    Closed,
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process (its pid is unknown)".to_owned(),
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An [`Error`] shared by everyone waiting on the same batch: its message and cause are the
/// shared error's own. Receipts of a failed batch carry it as their `source()`.
///
/// ```
/// use std::sync::Arc;
/// use runnel_embedded_log::{Error, SharedError};
/// let shared = SharedError(Arc::new(Error::Closed));
/// assert_eq!(shared.to_string(), "the embedded log is closed");
/// ```
#[derive(Clone, Debug)]
pub struct SharedError(pub Arc<Error>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Error {
    /// The error as the backplane reports a failed append to `topic`/`partition`.
    pub(crate) fn into_produce(self, topic: &str, partition: u32) -> runnel_backend::Error {
        match self {
            Error::Closed => runnel_backend::Error::Closed,
            Error::RecordTooLarge { size, limit } => runnel_backend::Error::RecordTooLarge {
                topic: topic.to_owned(),
                partition,
                size,
                limit: Some(limit),
            },
            other => runnel_backend::Error::Produce {
                topic: topic.to_owned(),
                partition,
                source: Box::new(other),
            },
        }
    }

    /// The error as the backplane reports a failed read of `topic`.
    pub(crate) fn into_consume(self, topic: &str) -> runnel_backend::Error {
        match self {
            Error::Closed => runnel_backend::Error::Closed,
            other => runnel_backend::Error::Consume {
                topic: topic.to_owned(),
                source: Box::new(other),
            },
        }
    }

    /// The error as the backplane reports a failed commit for `group`.
    pub(crate) fn into_commit(self, group: &str) -> runnel_backend::Error {
        match self {
            Error::Closed => runnel_backend::Error::Closed,
            other => runnel_backend::Error::Commit {
                group: group.to_owned(),
                source: Box::new(other),
            },
        }
    }

    /// The error as the backplane reports a failed administrative `operation`.
    pub(crate) fn into_admin(self, operation: impl Into<String>) -> runnel_backend::Error {
        match self {
            Error::Closed => runnel_backend::Error::Closed,
            other => runnel_backend::Error::Admin {
                operation: operation.into(),
                source: Box::new(other),
            },
        }
    }
}

/// Opening the log is an administrative operation to the backplane.
impl From<Error> for runnel_backend::Error {
    fn from(error: Error) -> Self {
        error.into_admin("opening the embedded log")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn the_cause_is_printed_once() {
        let error = Error::Read {
            path: "/data/0.log".into(),
            position: 12,
            source: io::Error::other("disk on fire"),
        };
        assert_eq!(error.to_string(), "reading '/data/0.log' at byte 12 failed");
        assert_eq!(error.source().unwrap().to_string(), "disk on fire");
    }

    #[test]
    fn a_locked_directory_names_the_holder() {
        let error = Error::DirectoryLocked {
            directory: "/data".into(),
            pid: Some(42),
        };
        assert_eq!(
            error.to_string(),
            "log directory '/data' is in use by process 42"
        );
    }
}
