//! [`InletStream`]: the records of one inlet, decoded, one [`Message`] at a time.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use runnel_backend::{Backend, ConsumedRecord, Consumer, TopicPartition};
use runnel_blueprint::descriptor::BadDataPolicy;
use runnel_codec::{Codec, SCHEMA_HEADER};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::acknowledgement::Acknowledgements;
use crate::dead_letter::DeadLetters;
use crate::message::{CommitToken, InletHandle, PROCESSING_LATENCY_SAMPLE};
use crate::metrics::PortMetrics;
use crate::rejection::FailedAttempts;
use crate::turns::Turns;
use crate::{Data, Error, InstanceMetrics, Message, Result};

/// How long [`InletStream::assigned_partitions`] waits for the group to assign this member
/// its partitions at most: Kafka's group join takes a few seconds at worst
/// (`group.initial.rebalance.delay.ms`, 3 s by default, plus a round of heartbeats).
const ASSIGNMENT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// How often [`InletStream::assigned_partitions`] looks whether the partitions are
/// assigned.
const ASSIGNMENT_CHECK: std::time::Duration = std::time::Duration::from_millis(5);

/// Everything an inlet needs except its value type; the host prepares it.
#[derive(Debug)]
pub(crate) struct InletParts {
    pub(crate) index: usize,
    pub(crate) port: &'static str,
    pub(crate) topic: Arc<str>,
    pub(crate) consumer: Arc<dyn Consumer>,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) writer_schemas: Vec<serde_json::Value>,
    pub(crate) base_schema: Option<serde_json::Value>,
    pub(crate) registry_schemas: Option<Vec<(u32, serde_json::Value)>>,
    pub(crate) end_of_input: watch::Receiver<bool>,
    pub(crate) policy: BadDataPolicy,
    pub(crate) metrics: Arc<PortMetrics>,
    pub(crate) instance_metrics: Arc<InstanceMetrics>,
    pub(crate) acknowledgements: Acknowledgements,
    pub(crate) dead_letters: Arc<DeadLetters>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) poll_batch: usize,
    pub(crate) attempts: Arc<FailedAttempts>,
    /// Per partition, the first offset not yet reflected in the restored checkpoint:
    /// records before it are skipped, wherever the consumer group starts reading.
    pub(crate) resume: BTreeMap<u32, u64>,
}

/// What [`InletStream::next_restored`] hands out.
#[derive(Debug)]
pub(crate) enum Next<T> {
    /// The next decoded message.
    Message(Message<T>),
    /// The next record is of this partition, which is not restored yet.
    Unrestored(u32),
    /// A rebalance took partitions from this member since the last call. One given back
    /// starts again at the group's committed offset, not where this member had read to, so
    /// whatever the caller holds per partition must be saved and dropped now, and restored
    /// when the partition's records come again.
    Revoked,
}

/// The records arriving on one inlet, decoded.
///
/// [`next`](InletStream::next) returns `None` when the streamlet is asked to stop, and when
/// the input is bounded and fully read (every producer of the topic finished, in local runs).
/// Records that fail to decode never reach the streamlet: the inlet's [`BadDataPolicy`]
/// sends them to the dead-letter topic (the default), skips them, or fails the streamlet.
/// So does a record that failed the streamlet too often in a row (see
/// [`FailedAttempts`]).
pub struct InletStream<T> {
    parts: InletParts,
    handle: Arc<InletHandle>,
    codec: Codec<T>,
    buffer: VecDeque<ConsumedRecord>,
    input_may_end: bool,
    /// The end offset of each partition when last asked. Ends never move back, so while this
    /// member is behind one of them the input cannot be read to its end, and the backplane
    /// (a network round trip on Kafka) need not be asked again.
    known_ends: Vec<u64>,
    /// Messages handed out, to time one in [`PROCESSING_LATENCY_SAMPLE`].
    handed_out: u64,
    /// The consumer's [`revocations`](runnel_backend::Consumer::revocations) when last
    /// looked at.
    revocations: u64,
    /// When to yield while handing out buffered messages.
    turns: Turns,
}

impl<T: Data> InletStream<T> {
    /// The stream of the inlet's records, read with `T`'s schema, or `schema` where the
    /// inlet's schema is given at run time.
    pub(crate) fn new(
        parts: InletParts,
        format: runnel_blueprint::descriptor::Format,
        schema: Option<&serde_json::Value>,
    ) -> Self {
        let codec = parts
            .writer_schemas
            .iter()
            .fold(crate::port::codec(format, schema), |codec, definition| {
                codec.with_writer_schema(definition)
            });
        let mut codec = match &parts.base_schema {
            Some(base) => codec.with_base_schema(base),
            None => codec,
        };
        if let Some(known) = &parts.registry_schemas {
            codec = codec.framed_by_registry();
            for (id, definition) in known {
                codec.add_registry_schema(*id, definition);
            }
        }
        let handle = Arc::new(InletHandle {
            index: parts.index,
            port: parts.port,
            topic: parts.topic.clone(),
            policy: parts.policy,
            acknowledgements: parts.acknowledgements.clone(),
            dead_letters: parts.dead_letters.clone(),
            metrics: parts.instance_metrics.clone(),
        });
        InletStream {
            parts,
            handle,
            codec,
            buffer: VecDeque::new(),
            input_may_end: true,
            known_ends: Vec::new(),
            handed_out: 0,
            revocations: 0,
            turns: Turns::new(Instant::now()),
        }
    }

    /// The next decoded message, waiting for one if necessary; `None` at the end.
    ///
    /// Cancel safe: if the future is dropped before it completes, no record is lost; the
    /// next call delivers it.
    ///
    /// # Errors
    ///
    /// When the log cannot be read, or a record does not decode and the inlet's policy is
    /// [`BadDataPolicy::Fail`].
    pub async fn next(&mut self) -> Result<Option<Message<T>>> {
        loop {
            match self.next_restored(|_| true).await? {
                Some(Next::Message(message)) => return Ok(Some(message)),
                Some(Next::Unrestored(_)) => unreachable!("every partition counts as restored"),
                // Nothing is held per partition here: records read again are delivered
                // again, as at-least-once allows.
                Some(Next::Revoked) => {}
                None => return Ok(None),
            }
        }
    }

    /// As [`next`](Self::next), but a record of a partition for which `restored` is false is
    /// not decoded: its partition comes back instead, for the caller (a streamlet that
    /// keeps state by partition) to restore the partition and [`rewind`](Self::rewind) the
    /// inlet to the offset its state reflects. So records a checkpoint covers are never
    /// decoded again (nor, failing that, rejected as bad data). When a rebalance took
    /// partitions away since the last call, [`Next::Revoked`] comes first.
    pub(crate) async fn next_restored(
        &mut self,
        restored: impl Fn(u32) -> bool,
    ) -> Result<Option<Next<T>>> {
        loop {
            let revocations = self.parts.consumer.revocations();
            if revocations != self.revocations {
                self.revocations = revocations;
                // Records read ahead from partitions now another member's are its to read.
                let assigned = self.partitions();
                self.buffer
                    .retain(|consumed| assigned.contains(&consumed.partition));
                return Ok(Some(Next::Revoked));
            }
            while let Some(front) = self.buffer.front() {
                if !restored(front.partition) {
                    return Ok(Some(Next::Unrestored(front.partition)));
                }
                // A streamlet handed buffered records never waits, so without this it would
                // not yield to the runtime until the buffer ran dry: a task it woke (its
                // committer, in the worker's LIFO slot, which other workers cannot steal)
                // would wait that long, and with it the commits. See `Turns`.
                if self.turns.due(Instant::now) {
                    tokio::task::yield_now().await;
                    self.turns.yielded(Instant::now());
                }
                if let Some(message) = self.deliver_front(None).await? {
                    return Ok(Some(Next::Message(message)));
                }
            }
            if self.parts.shutdown.is_cancelled() || self.read_everything().await? {
                return Ok(None);
            }
            let watching_end = self.input_may_end && !*self.parts.end_of_input.borrow();
            // The commits and sends queued so far go to the committer now rather than wait
            // for a full batch: reading the log may wait, and so would they.
            self.parts.acknowledgements.flush();
            tokio::select! {
                biased;
                () = self.parts.shutdown.cancelled() => return Ok(None),
                polled = self.parts.consumer.poll(self.parts.poll_batch) => {
                    let polled = polled.map_err(Error::external)?;
                    if self.parts.resume.is_empty() {
                        self.buffer.extend(polled);
                    } else {
                        let resume = &mut self.parts.resume;
                        for consumed in polled {
                            match resume.get(&consumed.partition) {
                                Some(&first) if consumed.offset < first => continue,
                                Some(_) => {
                                    // Past the checkpoint: nothing more to skip here.
                                    resume.remove(&consumed.partition);
                                }
                                None => {}
                            }
                            self.buffer.push_back(consumed);
                        }
                    }
                }
                changed = self.parts.end_of_input.changed(), if watching_end => {
                    // A dropped sender means nobody will ever declare the end.
                    self.input_may_end = changed.is_ok();
                }
            }
        }
    }

    /// The messages as a [`Stream`](futures::Stream), for stream combinators. The stream
    /// ends where [`next`](InletStream::next) returns `None`; an error is yielded once and
    /// the stream goes on after it.
    ///
    /// ```no_run
    /// # use runnel_streamlet::prelude::*;
    /// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
    /// # const IN: Inlet<Reading> = Inlet::new("in");
    /// use futures::StreamExt;
    /// # async fn demo(mut ctx: Context) -> Result<()> {
    /// let mut hot = ctx.inlet(IN).into_stream().filter(|message| {
    ///     std::future::ready(message.as_ref().map_or(true, |m| m.value().celsius > 30.0))
    /// });
    /// while let Some(message) = hot.next().await {
    ///     message?.commit();
    /// }
    /// # Ok(()) }
    /// ```
    pub fn into_stream(self) -> futures::stream::BoxStream<'static, Result<Message<T>>> {
        use futures::StreamExt;
        futures::stream::unfold(self, |mut inlet| async move {
            match inlet.next().await {
                Ok(Some(message)) => Some((Ok(message), inlet)),
                Ok(None) => None,
                Err(error) => Some((Err(error), inlet)),
            }
        })
        .boxed()
    }

    /// The next message if it can be handed out without waiting: read from the log
    /// already, within the bound on uncommitted messages, and (exactly-once) with no commit
    /// under way; `None` otherwise. A streamlet that works on batches takes the first
    /// message with [`next`](InletStream::next) and the rest of the batch with this, so it
    /// never waits for more input, nor for a commit, while it holds messages it has not
    /// committed (an exactly-once commit waits for those).
    ///
    /// # Errors
    ///
    /// As [`next`](InletStream::next).
    pub async fn next_ready(&mut self) -> Result<Option<Message<T>>> {
        loop {
            if self.buffer.is_empty()
                || self.parts.shutdown.is_cancelled()
                || self.parts.consumer.revocations() != self.revocations
            {
                return Ok(None);
            }
            let Some(permit) = self.parts.acknowledgements.try_message_permit() else {
                return Ok(None);
            };
            if let Some(message) = self.deliver_front(Some(permit)).await? {
                return Ok(Some(message));
            }
        }
    }

    /// The schema some producer of the topic wrote with, by the fingerprint an
    /// [`AvroDatum`]'s `writer` names; `None` when the inlet does not know it.
    ///
    /// [`AvroDatum`]: runnel_codec::AvroDatum
    pub fn writer_schema(&self, fingerprint: &[u8]) -> Option<serde_json::Value> {
        self.codec.writer_schema(fingerprint)
    }

    /// The inlet's name.
    pub fn name(&self) -> &'static str {
        self.parts.port
    }

    /// The partitions of the topic this inlet reads (all of them, unless several members
    /// of the consumer group share the topic). Event-time streamlets declare them to their
    /// [`WatermarkHolder`](crate::watermark::WatermarkHolder) so that a partition that has
    /// not delivered yet holds the watermark back.
    pub fn partitions(&self) -> Vec<u32> {
        self.parts
            .consumer
            .positions()
            .iter()
            .map(|(partition, _)| partition.partition)
            .collect()
    }

    /// [`partitions`](Self::partitions), once the consumer group has given this member its
    /// partitions. On Kafka a member is assigned its partitions a moment after the streamlet
    /// starts (when it has joined the group), and until then `partitions` is empty; an
    /// event-time streamlet that declared no partitions would let the first records of one
    /// partition (or of one of its inlets) move the watermark past records still to come
    /// from the others, which would then be late. Returns at once on the embedded log, and
    /// when the streamlet is asked to stop; after 30 s without an assignment it warns and
    /// returns what is assigned.
    ///
    /// ```no_run
    /// # use runnel_streamlet::prelude::*;
    /// # use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
    /// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
    /// # const IN: Inlet<Reading> = Inlet::new("in");
    /// # async fn demo(mut ctx: Context) -> Result<()> {
    /// let input = ctx.inlet(IN);
    /// let mut watermarks = WatermarkHolder::new(Watermarks::bounded(std::time::Duration::from_secs(1)));
    /// for partition in input.assigned_partitions().await {
    ///     watermarks.add_partition(partition, ctx.clock().now_millis());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn assigned_partitions(&self) -> Vec<u32> {
        let patience = tokio::time::sleep(ASSIGNMENT_PATIENCE);
        tokio::pin!(patience);
        while !self.parts.consumer.assigned() {
            tokio::select! {
                () = self.parts.shutdown.cancelled() => break,
                () = &mut patience => {
                    tracing::warn!(
                        inlet = self.parts.port,
                        topic = %self.parts.topic,
                        "no partitions assigned after {} s; going on with none declared",
                        ASSIGNMENT_PATIENCE.as_secs()
                    );
                    break;
                }
                () = tokio::time::sleep(ASSIGNMENT_CHECK) => {}
            }
        }
        self.partitions()
    }

    /// Positions the inlet at `offset` of `partition` (one assigned to this member), as if
    /// nothing after it had been read: records of the partition read ahead are dropped, and
    /// the next ones come from `offset`. A streamlet checkpointed by partition rewinds each
    /// partition it restores to the offset its checkpoint reflects
    /// ([`Checkpoints::restore_partition`](crate::Checkpoints::restore_partition)).
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::External`](crate::ErrorKind::External) error when the backplane
    /// refuses the position (the partition is not assigned to this member); the records of
    /// the partition read ahead are dropped then too.
    pub async fn rewind(&mut self, partition: u32, offset: u64) -> Result<()> {
        // What was read ahead goes either way: read again from `offset`, or (when a
        // rebalance took the partition away and the seek fails) not this member's to read.
        self.buffer
            .retain(|consumed| consumed.partition != partition);
        self.parts.resume.remove(&partition);
        self.parts
            .consumer
            .seek(&self.parts.topic, partition, offset)
            .await
            .map_err(Error::external)
    }

    /// Whether the input is bounded and this member has read all of its partitions.
    async fn read_everything(&mut self) -> Result<bool> {
        if !*self.parts.end_of_input.borrow() {
            return Ok(false);
        }
        let positions = self.parts.consumer.positions();
        // No partitions yet: a Kafka member is assigned its partitions during its first
        // polls, and has read nothing until then.
        if positions.is_empty() || behind(&positions, &self.known_ends) {
            return Ok(false);
        }
        let ends = self
            .parts
            .backend
            .offsets(&self.parts.topic)
            .await
            .map_err(Error::external)?;
        self.known_ends = ends.iter().map(|offsets| offsets.end).collect();
        Ok(!behind(&positions, &self.known_ends))
    }

    /// Asks the schema registry for the schema of `id`, which a record names and the codec
    /// does not know yet (an outside producer registered it after the inlet started). An id
    /// the registry does not have is remembered, and the record decodes as written before
    /// the registry or is bad data; a registry that cannot be reached fails the streamlet,
    /// which restarts and asks again.
    async fn learn_registry_schema(&mut self, id: u32) -> Result<()> {
        match self.parts.backend.schema_by_id(id).await {
            Ok(schema) => {
                if let Ok(definition) = serde_json::from_str(&schema.definition) {
                    self.codec.add_registry_schema(id, &definition);
                }
                Ok(())
            }
            Err(runnel_backend::Error::SchemaNotFound { .. }) => {
                self.codec.add_missing_registry_id(id);
                Ok(())
            }
            Err(error) => Err(Error::external(error)),
        }
    }

    /// Decodes the first buffered record; one that does not decode, or that failed the
    /// streamlet too often, is handled by the bad-data policy and yields `None`. Cancel
    /// safe: the record leaves the buffer only once it is delivered or handled.
    /// `permit` is the message's permit when the caller took it already; otherwise this
    /// waits for one.
    async fn deliver_front(
        &mut self,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Result<Option<Message<T>>> {
        let unknown_schema = self
            .buffer
            .front()
            .and_then(|front| front.record.value.as_deref())
            .and_then(|value| self.codec.unknown_registry_id(value));
        if let Some(id) = unknown_schema {
            self.learn_registry_schema(id).await?;
        }
        let permit = match permit {
            Some(permit) => permit,
            None => self.parts.acknowledgements.message_permit().await,
        };
        let front = self
            .buffer
            .front()
            .expect("deliver_front is called with a buffered record");
        let position = (self.parts.index, front.partition, front.offset);
        let reason = match self.parts.attempts.deliver(position) {
            Some(give_up) => {
                self.parts.instance_metrics.count_given_up();
                format!(
                    "failed the streamlet {} times in a row; the last time: {}",
                    give_up.failures, give_up.last_error
                )
            }
            None => {
                let writer = front
                    .record
                    .headers
                    .get(SCHEMA_HEADER)
                    .map(|value| &value[..]);
                match self
                    .codec
                    .decode_value(front.record.value.as_deref(), writer)
                {
                    Ok(value) => {
                        let consumed = self.buffer.pop_front().expect("the front record exists");
                        self.parts.metrics.record(consumed.record.value_len());
                        let timed = self.handed_out.is_multiple_of(PROCESSING_LATENCY_SAMPLE);
                        self.handed_out += 1;
                        let token = CommitToken::new(
                            self.handle.clone(),
                            consumed.partition,
                            consumed.offset,
                            consumed.record,
                            permit,
                            timed,
                        );
                        return Ok(Some(Message::new(value, token)));
                    }
                    Err(error) => format!("does not decode: {error}"),
                }
            }
        };
        // A copy (the bytes are shared) goes with the token, so the record stays buffered
        // until the policy is applied, in case this future is dropped on the way.
        let token = CommitToken::new(
            self.handle.clone(),
            front.partition,
            front.offset,
            front.record.clone(),
            permit,
            false,
        );
        token.apply_policy(reason).await?;
        let consumed = self.buffer.pop_front().expect("the front record exists");
        self.parts.metrics.record(consumed.record.value_len());
        Ok(None)
    }
}

impl<T> std::fmt::Debug for InletStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InletStream")
            .field("port", &self.parts.port)
            .field("topic", &self.parts.topic)
            .field("buffered", &self.buffer.len())
            .finish_non_exhaustive()
    }
}

/// Whether some partition's position is short of its end offset in `ends` (partitions
/// without a known end count as read).
fn behind(positions: &[(TopicPartition, u64)], ends: &[u64]) -> bool {
    positions.iter().any(|(partition, position)| {
        ends.get(partition.partition as usize)
            .is_some_and(|end| position < end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(partition: u32, position: u64) -> (TopicPartition, u64) {
        (TopicPartition::new("t", partition), position)
    }

    #[test]
    fn a_member_is_behind_while_one_of_its_partitions_is_short_of_its_end() {
        let ends = [10, 20];
        assert!(behind(&[at(0, 10), at(1, 19)], &ends));
        assert!(!behind(&[at(0, 10), at(1, 20)], &ends));
        // Only its own partitions count, and unknown ends count as read.
        assert!(!behind(&[at(1, 20)], &ends));
        assert!(!behind(&[at(0, 3)], &[]));
    }
}
