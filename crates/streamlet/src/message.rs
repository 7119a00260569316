//! [`Message`]: a decoded input record with where it came from and how to commit it; its
//! [`CommitToken`], and the `InletHandle` the tokens of one inlet share.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use runnel_backend::{Headers, Record};
use runnel_blueprint::descriptor::BadDataPolicy;
use tokio::sync::OwnedSemaphorePermit;

use crate::acknowledgement::Acknowledgements;
use crate::dead_letter::DeadLetters;
use crate::gate::HandedOut;
use crate::{InstanceMetrics, Result};

/// A value read from an inlet, with its key, headers, event timestamp and origin.
///
/// Commit it once everything derived from it has been sent: the runtime then commits its
/// offset as soon as those outputs are acknowledged by the log. Committing a message also
/// covers every earlier message of the same partition (Kafka's offset semantics); a message
/// dropped without a commit is read again after a restart unless a later one on its
/// partition is committed.
///
/// A message the streamlet cannot process is [rejected](Message::reject) instead: the
/// inlet's [`BadDataPolicy`](runnel_blueprint::descriptor::BadDataPolicy) decides whether it
/// goes to the dead-letter topic, is skipped, or fails the streamlet.
pub struct Message<T> {
    value: T,
    token: CommitToken,
}

impl<T> Message<T> {
    pub(crate) fn new(value: T, token: CommitToken) -> Self {
        Message { value, token }
    }

    /// The decoded value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The record key, if it has one.
    pub fn key(&self) -> Option<&[u8]> {
        self.token.record.key.as_deref()
    }

    /// The record key as UTF-8 text, if it has one and it is text.
    pub fn key_str(&self) -> Option<&str> {
        self.key().and_then(|key| std::str::from_utf8(key).ok())
    }

    /// The record headers.
    pub fn headers(&self) -> &Headers {
        &self.token.record.headers
    }

    /// The event timestamp, in milliseconds since the Unix epoch.
    pub fn timestamp(&self) -> i64 {
        self.token.record.timestamp
    }

    /// The topic the record was read from.
    pub fn topic(&self) -> &str {
        &self.token.inlet.topic
    }

    /// The partition the record was read from.
    pub fn partition(&self) -> u32 {
        self.token.partition
    }

    /// The offset of the record in its partition.
    pub fn offset(&self) -> u64 {
        self.token.offset
    }

    /// Marks the message as done; see [`CommitToken::commit`].
    pub fn commit(self) {
        self.token.commit();
    }

    /// Hands the message to its inlet's bad-data policy because the streamlet cannot process
    /// it; see [`CommitToken::reject`].
    ///
    /// # Errors
    ///
    /// Under the `fail` policy, an [`ErrorKind::BadData`](crate::ErrorKind::BadData) error
    /// naming the record and `reason`; when the dead-letter topic cannot be written.
    pub async fn reject(self, reason: impl fmt::Display) -> Result<()> {
        self.token.reject(reason).await
    }

    /// Splits the message into its value and the token that commits it, so the value can be
    /// moved into the streamlet's logic and the commit made later.
    pub fn into_parts(self) -> (T, CommitToken) {
        (self.value, self.token)
    }

    /// The same message with its value transformed.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Message<U> {
        Message {
            value: f(self.value),
            token: self.token,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Message<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("value", &self.value)
            .field("topic", &self.token.inlet.topic)
            .field("partition", &self.token.partition)
            .field("offset", &self.token.offset)
            .field("timestamp", &self.token.record.timestamp)
            .finish_non_exhaustive()
    }
}

/// What commits (or rejects) one message, separated from its value by
/// [`Message::into_parts`].
///
/// It keeps the record as it was read (key, encoded value, headers, timestamp), so a
/// rejected message reaches the dead-letter topic exactly as it arrived. Holding it also
/// holds one of the instance's slots for uncommitted messages, which bound how far the
/// streamlet reads ahead.
pub struct CommitToken {
    pub(crate) inlet: Arc<InletHandle>,
    pub(crate) partition: u32,
    pub(crate) offset: u64,
    pub(crate) record: Record,
    permit: OwnedSemaphorePermit,
    /// When the message was handed to the streamlet, for the processing-latency histogram;
    /// only on sampled messages (see [`PROCESSING_LATENCY_SAMPLE`]).
    delivered: Option<Instant>,
    /// Counts the message as held by the streamlet (exactly-once) until the token goes.
    _held: HandedOut,
}

/// One message in this many (per inlet, starting with the first) is timed for the
/// processing-latency histogram: two clock reads per message cost more than the rest of a
/// commit, and a sample of the messages gives the same distribution.
pub(crate) const PROCESSING_LATENCY_SAMPLE: u64 = 16;

impl CommitToken {
    pub(crate) fn new(
        inlet: Arc<InletHandle>,
        partition: u32,
        offset: u64,
        record: Record,
        permit: OwnedSemaphorePermit,
        timed: bool,
    ) -> Self {
        CommitToken {
            _held: inlet.acknowledgements.hand_out(),
            inlet,
            partition,
            offset,
            record,
            permit,
            delivered: timed.then(Instant::now),
        }
    }

    /// Marks the message as done: its offset is committed once every output sent before
    /// this call is acknowledged by the log.
    pub fn commit(self) {
        let processing = self.delivered.map(|delivered| delivered.elapsed());
        self.inlet.acknowledgements.commit(
            self.inlet.index,
            self.partition,
            self.offset,
            processing,
            self.permit,
        );
    }

    /// Hands the message to its inlet's bad-data policy because the streamlet cannot process
    /// it, and logs and counts it with `reason` and the record's origin:
    ///
    /// - `dead-letter` (the default): the record, as it was read, goes to the dead-letter
    ///   topic with `reason` and its origin in headers; it is committed once that write is
    ///   acknowledged;
    /// - `skip`: it is committed and nothing else happens;
    /// - `fail`: the streamlet fails with an error naming the record and `reason`.
    ///
    /// Outputs already sent for the message stay sent.
    ///
    /// # Errors
    ///
    /// Under the `fail` policy, an [`ErrorKind::BadData`](crate::ErrorKind::BadData) error
    /// ([`RejectedRecord`](crate::RejectedRecord)); an
    /// [`ErrorKind::External`](crate::ErrorKind::External) error when the dead-letter topic
    /// cannot be written.
    pub async fn reject(self, reason: impl fmt::Display) -> Result<()> {
        let reason = format!("was rejected by the streamlet: {reason}");
        self.apply_policy(reason).await
    }

    /// Settles a message after handling it: commits it when `outcome` is `Ok`,
    /// [rejects](CommitToken::reject) it when handling failed on bad data (an
    /// [`ErrorKind::BadData`](crate::ErrorKind::BadData) error, such as an output too large
    /// for its topic), and returns any other error, which fails the streamlet. The helpers
    /// ([`Processor`](crate::Processor) and the others) settle every message this way.
    ///
    /// # Errors
    ///
    /// `outcome`'s error unless it is bad data; the errors of [`reject`](CommitToken::reject).
    pub async fn settle(self, outcome: Result<()>) -> Result<()> {
        match outcome {
            Ok(()) => {
                self.commit();
                Ok(())
            }
            Err(error) if error.kind() == crate::ErrorKind::BadData => {
                self.apply_policy(format!("could not be processed: {error:#}"))
                    .await
            }
            Err(error) => Err(error),
        }
    }

    /// The offset of the message this token commits.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The key of the message this token commits.
    pub fn key(&self) -> Option<&[u8]> {
        self.record.key.as_deref()
    }

    /// The event timestamp of the message this token commits.
    pub fn timestamp(&self) -> i64 {
        self.record.timestamp
    }

    /// The headers of the message this token commits.
    pub fn headers(&self) -> &Headers {
        &self.record.headers
    }

    /// Applies the inlet's policy; `reason` completes "record at offset ... on inlet '...'".
    pub(crate) async fn apply_policy(self, reason: String) -> Result<()> {
        let inlet = self.inlet.clone();
        inlet.apply_policy(self, reason).await
    }

    pub(crate) fn into_commit(self) -> (Arc<InletHandle>, u32, u64, Record, OwnedSemaphorePermit) {
        (
            self.inlet,
            self.partition,
            self.offset,
            self.record,
            self.permit,
        )
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

/// What every message of one inlet shares: where it came from, how to commit it, and how to
/// reject it (its bad-data `policy`, which `rejection.rs` applies).
#[derive(Debug)]
pub(crate) struct InletHandle {
    pub(crate) index: usize,
    pub(crate) port: &'static str,
    pub(crate) topic: Arc<str>,
    pub(crate) policy: BadDataPolicy,
    pub(crate) acknowledgements: Acknowledgements,
    pub(crate) dead_letters: Arc<DeadLetters>,
    pub(crate) metrics: Arc<InstanceMetrics>,
}
