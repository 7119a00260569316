//! [`Message`]: a decoded input record with where it came from and how to commit it.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use runnel_backend::Headers;
use tokio::sync::OwnedSemaphorePermit;

use crate::acknowledgement::Acknowledgements;

/// A value read from an inlet, with its key, headers, event timestamp and origin.
///
/// Commit it once everything derived from it has been sent: the runtime then commits its
/// offset as soon as those outputs are acknowledged by the log. Committing a message also
/// covers every earlier message of the same partition (Kafka's offset semantics); a message
/// dropped without a commit is read again after a restart unless a later one on its
/// partition is committed.
pub struct Message<T> {
    value: T,
    key: Option<Bytes>,
    headers: Headers,
    timestamp: i64,
    topic: Arc<str>,
    partition: u32,
    offset: u64,
    commit: CommitToken,
}

impl<T> Message<T> {
    #[allow(clippy::too_many_arguments)] // an internal constructor, called in one place
    pub(crate) fn new(
        value: T,
        key: Option<Bytes>,
        headers: Headers,
        timestamp: i64,
        topic: Arc<str>,
        partition: u32,
        offset: u64,
        commit: CommitToken,
    ) -> Self {
        Message {
            value,
            key,
            headers,
            timestamp,
            topic,
            partition,
            offset,
            commit,
        }
    }

    /// The decoded value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The record key, if it has one.
    pub fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }

    /// The record key as UTF-8 text, if it has one and it is text.
    pub fn key_str(&self) -> Option<&str> {
        self.key().and_then(|key| std::str::from_utf8(key).ok())
    }

    /// The record headers.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// The event timestamp, in milliseconds since the Unix epoch.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The topic the record was read from.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition the record was read from.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The offset of the record in its partition.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Marks this message (and the earlier ones of its partition) as processed.
    pub fn commit(self) {
        self.commit.commit();
    }

    /// Splits the message into its value and its commit token, to commit later.
    pub fn into_parts(self) -> (T, CommitToken) {
        (self.value, self.commit)
    }

    /// Transforms the value, keeping the key, headers, timestamp, origin and commit token.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Message<U> {
        Message {
            value: f(self.value),
            key: self.key,
            headers: self.headers,
            timestamp: self.timestamp,
            topic: self.topic,
            partition: self.partition,
            offset: self.offset,
            commit: self.commit,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Message<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("value", &self.value)
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .field("timestamp", &self.timestamp)
            .finish_non_exhaustive()
    }
}

/// The right to commit one input record, separated from its value.
pub struct CommitToken {
    acknowledgements: Acknowledgements,
    inlet: usize,
    partition: u32,
    offset: u64,
    permit: OwnedSemaphorePermit,
    /// When the message was handed to the streamlet.
    delivered: Instant,
}

impl CommitToken {
    pub(crate) fn new(
        acknowledgements: Acknowledgements,
        inlet: usize,
        partition: u32,
        offset: u64,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        CommitToken {
            acknowledgements,
            inlet,
            partition,
            offset,
            permit,
            delivered: Instant::now(),
        }
    }

    /// Marks the record (and the earlier ones of its partition) as processed.
    pub fn commit(self) {
        let processing = Some(self.delivered.elapsed());
        self.acknowledgements.commit(
            self.inlet,
            self.partition,
            self.offset,
            processing,
            self.permit,
        );
    }

    /// The offset this token commits.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl fmt::Debug for CommitToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitToken")
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}
