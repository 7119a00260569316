//! The three traits every backplane implements: [`Backend`], [`Producer`] and [`Consumer`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::reader::GroupReader;
use crate::{
    CommitOffset, ConsumedRecord, Error, PartitionOffsets, PartitionReader, ReaderConfig, Record,
    Result, TopicCreation, TopicInfo, TopicPartition, TopicSpec, TransactionConfig,
    TransactionalProducer,
};

/// A durable, partitioned log: the backplane that connects streamlets.
///
/// Implementations: [`MemoryBackend`](crate::MemoryBackend) for tests, the embedded log
/// (`runnel-embedded-log`) for one machine, and Kafka.
#[async_trait]
pub trait Backend: fmt::Debug + Send + Sync + 'static {
    /// Creates a topic, or leaves an existing one with the same partition count alone.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionCountMismatch`](crate::Error::PartitionCountMismatch) when the topic
    /// exists with another partition count, [`Error::InvalidTopic`](crate::Error::InvalidTopic)
    /// for a spec the backplane cannot honour.
    async fn create_topic(&self, spec: &TopicSpec) -> Result<TopicCreation>;

    /// Describes a topic, or `None` when it does not exist.
    async fn topic(&self, name: &str) -> Result<Option<TopicInfo>>;

    /// The start and end offsets of every partition of a topic, indexed by partition.
    async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>>;

    /// The offsets a consumer group committed for each partition of a topic, indexed by
    /// partition; `None` where the group never committed.
    async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>>;

    /// A producer that can append to any topic.
    async fn producer(&self, config: &ProducerConfig) -> Result<Arc<dyn Producer>>;

    /// Joins a consumer group and subscribes to topics.
    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>>;

    /// Reads the partitions `config` names, each from its offset on, as `config`'s
    /// isolation allows, without a consumer group: no join to wait for, no commits, no
    /// effect on any group. A start past a partition's end waits at the end for new records;
    /// a start below its first kept record reads from that record.
    ///
    /// The default implementation joins a consumer group of its own (a unique name), seeks
    /// each partition to its start and drops records of the other partitions, so it pays
    /// for the group join (seconds on Kafka). [`MemoryBackend`](crate::MemoryBackend), the
    /// embedded log and Kafka implement it without a group; a backplane that wraps another
    /// should hand the call on.
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] or [`Error::PartitionNotFound`] for a partition that does
    /// not exist.
    ///
    /// ```
    /// use runnel_backend::{Backend, MemoryBackend, ProducerConfig, ReaderConfig, Record, TopicSpec};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> runnel_backend::Result<()> {
    /// let backend = MemoryBackend::new();
    /// backend.create_topic(&TopicSpec::new("changes", 2)).await?;
    /// let producer = backend.producer(&ProducerConfig::default()).await?;
    /// for value in ["a", "b", "c"] {
    ///     producer.send("changes", 1, Record::new(value)).await?.await?;
    /// }
    /// let reader = backend.partition_reader(&ReaderConfig::new("changes", 1, 1)).await?;
    /// let records = reader.poll(10).await?;
    /// assert_eq!(records[0].record.value.as_deref(), Some(&b"b"[..]));
    /// assert_eq!(reader.positions()[0].1, 3);
    /// # Ok(()) }
    /// ```
    async fn partition_reader(&self, config: &ReaderConfig) -> Result<Box<dyn PartitionReader>> {
        Ok(Box::new(GroupReader::start(self, config).await?))
    }

    /// Whether [`transactional_producer`](Backend::transactional_producer) is available, so
    /// a runner can refuse an exactly-once streamlet before starting anything.
    fn supports_transactions(&self) -> bool {
        false
    }

    /// Whether topics can be created with `cleanup.policy=compact` (the log keeps the
    /// last record of each key). A keyed state's changelog is compacted where the backend
    /// compacts but cannot [delete records](Backend::deletes_records).
    fn supports_compaction(&self) -> bool {
        false
    }

    /// Whether [`delete_records_before`](Backend::delete_records_before) deletes records, so
    /// that a changelog need not be compacted: its records can each hold many entries, and
    /// those a snapshot superseded are deleted.
    fn deletes_records(&self) -> bool {
        false
    }

    /// Whether the existing `topic` is compacted (its `cleanup.policy` holds `compact`), so
    /// that a changelog created by an earlier version keeps its one record per entry (a
    /// compacted topic refuses records without a key). `false` where the backend compacts
    /// nothing (the default).
    ///
    /// # Errors
    ///
    /// When the topic's settings cannot be read.
    async fn topic_compacted(&self, topic: &str) -> Result<bool> {
        let _ = topic;
        Ok(false)
    }

    /// Whether the backplane keeps the schemas written to each topic
    /// ([`topic_schemas`](Backend::topic_schemas), [`register_schema`](Backend::register_schema)),
    /// so that records written with an older schema stay readable after a producer's type
    /// changed. Backplanes that do not (the default) leave readers to the schemas their
    /// blueprint names.
    fn keeps_schemas(&self) -> bool {
        false
    }

    /// The schemas records of `topic` were written with, in the order they were registered;
    /// the first is the topic's base schema (see [`TopicSchema`](crate::TopicSchema)).
    /// Empty where the backplane keeps none, or nothing registered one yet.
    ///
    /// # Errors
    ///
    /// When the topic does not exist or its schemas cannot be read.
    async fn topic_schemas(&self, topic: &str) -> Result<Vec<crate::TopicSchema>> {
        let _ = topic;
        Ok(Vec::new())
    }

    /// Registers `schema` for `topic` before records written with it are appended (a second
    /// registration of the same fingerprint changes nothing), durably; returns every schema
    /// of the topic afterwards, as [`topic_schemas`](Backend::topic_schemas) does.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] from backplanes that keep no schemas (the default); when the
    /// topic does not exist or the schema cannot be stored.
    async fn register_schema(
        &self,
        topic: &str,
        schema: &crate::TopicSchema,
    ) -> Result<Vec<crate::TopicSchema>> {
        let _ = (topic, schema);
        Err(Error::Unsupported {
            feature: "keeping the schemas written to a topic",
        })
    }

    /// How records name the schema they were written with, where the backplane
    /// [keeps schemas](Backend::keeps_schemas): in a header (the default), or by a schema
    /// registry's id at the start of each value.
    fn schema_naming(&self) -> crate::SchemaNaming {
        crate::SchemaNaming::Header
    }

    /// The schema the registry knows by `id`, for a record that names a schema its reader
    /// was not told of (an outside producer registered it after the reader started).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaNotFound`] when the registry has no such schema;
    /// [`Error::Unsupported`] from backplanes without a registry (the default); when the
    /// registry cannot be reached.
    async fn schema_by_id(&self, id: u32) -> Result<crate::TopicSchema> {
        let _ = id;
        Err(Error::Unsupported {
            feature: "a schema registry",
        })
    }

    /// Deletes the records of `partition` of `topic` below `offset` that the backplane can
    /// delete (Kafka's `DeleteRecords`): a log of segments keeps a segment that holds any
    /// record at or above `offset`. Returns the partition's first offset afterwards. For
    /// topics that are not compacted, whose writer knows which records are no longer
    /// needed, as a keyed state's changelog does after a snapshot.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`](crate::Error::Unsupported) from backplanes that keep every
    /// record (the default), or the topic's or partition's absence.
    async fn delete_records_before(&self, topic: &str, partition: u32, offset: u64) -> Result<u64> {
        let _ = (topic, partition, offset);
        Err(crate::Error::Unsupported {
            feature: "deleting records before an offset",
        })
    }

    /// A producer whose records and consumer offsets commit atomically (exactly-once
    /// delivery); see [`TransactionalProducer`].
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] from backplanes without transactions (the default).
    async fn transactional_producer(
        &self,
        config: &TransactionConfig,
    ) -> Result<Arc<dyn TransactionalProducer>> {
        let _ = config;
        Err(Error::Unsupported {
            feature: "transactions (exactly-once delivery)",
        })
    }
}

/// Appends records to topics.
#[async_trait]
pub trait Producer: fmt::Debug + Send + Sync {
    /// Hands a record over for appending to one partition.
    ///
    /// Returns once the record is accepted into the producer's bounded buffer (waiting when it
    /// is full, which is how a slow log slows its writers down). The returned [`Receipt`]
    /// completes when the record is acknowledged: durable according to the backplane's
    /// policy. Records sent to one partition are appended in the order of the calls.
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt>;

    /// Hands a record over as [`send`](Producer::send) does when that needs no waiting (the
    /// buffer has room, the partition is known), without building `send`'s future; gives the
    /// record back for `send` otherwise. Order and acknowledgement are `send`'s: the record
    /// is appended after every record sent to the partition before it.
    ///
    /// The default always gives the record back.
    ///
    /// ```
    /// use runnel_backend::{Backend, MemoryBackend, Producer, ProducerConfig, Record, TopicSpec, TrySend};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> runnel_backend::Result<()> {
    /// let backend = MemoryBackend::new();
    /// backend.create_topic(&TopicSpec::new("readings", 1)).await?;
    /// let producer = backend.producer(&ProducerConfig::default()).await?;
    /// let receipt = match producer.try_send("readings", 0, Record::new("21.5")) {
    ///     TrySend::Sent(receipt) => receipt?,
    ///     TrySend::Wait(record) => producer.send("readings", 0, record).await?,
    /// };
    /// assert_eq!(receipt.await?, 0);
    /// # Ok(()) }
    /// ```
    fn try_send(&self, topic: &str, partition: u32, record: Record) -> TrySend {
        let _ = (topic, partition);
        TrySend::Wait(record)
    }

    /// Waits until every record sent so far is acknowledged.
    async fn flush(&self) -> Result<()>;
}

/// What [`Producer::try_send`] did with a record.
#[derive(Debug)]
pub enum TrySend {
    /// Handed over (or refused, as `send` would have refused it).
    Sent(Result<Receipt>),
    /// Not handed over: it needs [`Producer::send`], which may wait.
    Wait(Record),
}

/// Reads records as a member of a consumer group.
#[async_trait]
pub trait Consumer: fmt::Debug + Send + Sync {
    /// Waits for records on the partitions assigned to this member and returns at most
    /// `max_records` of them, in offset order per partition.
    ///
    /// Cancel safe: dropping the future before it completes loses no records. Only
    /// acknowledged records are ever returned. It may return no records when the positions
    /// moved past records it does not hand out (transaction markers, and aborted records
    /// when reading committed), as a Kafka poll may.
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>>;

    /// Stores offsets for this consumer's group. Each offset is that of the next record to
    /// read. Once this returns, a restarted member of the group resumes from there.
    async fn commit(&self, offsets: &[CommitOffset]) -> Result<()>;

    /// Positions this member on an assigned partition: the next [`poll`](Consumer::poll)
    /// returns that partition's records from `offset` on (as Kafka's `seek`). Seeking
    /// back reads records again; seeking past the end waits there for new ones. Committed offsets
    /// are not changed. Stateful streamlets use it to resume from the input offsets stored
    /// with their checkpoint.
    ///
    /// # Errors
    ///
    /// [`Error::NotAssigned`](crate::Error::NotAssigned) when this member does not own the
    /// partition.
    async fn seek(&self, topic: &str, partition: u32, offset: u64) -> Result<()>;

    /// Tells the consumer which offsets are safe to commit (their outputs are acknowledged)
    /// ahead of the next [`commit`](Consumer::commit), so that it can commit them itself when
    /// it is about to lose partitions in a rebalance. The default ignores them: backplanes
    /// whose rebalances do not interrupt a member need nothing more.
    fn stage(&self, offsets: &[CommitOffset]) {
        let _ = offsets;
    }

    /// The offset to commit on `partition` of `topic` once every record before `next` is
    /// handled: `next` itself, or, when the last record this consumer returned from the
    /// partition was the one before `next` and it has moved past offsets it does not hand out
    /// since (transaction markers, and aborted records when reading committed), its position
    /// past them. So a group at rest on a transactional topic has committed up to the end,
    /// and its lag counts records, not markers (as Kafka Streams commits past them). The
    /// default is `next`.
    fn committable(&self, topic: &str, partition: u32, next: u64) -> u64 {
        let _ = (topic, partition);
        next
    }

    /// The partitions currently assigned to this member, with the offset of the next record
    /// [`poll`](Consumer::poll) returns from each.
    fn positions(&self) -> Vec<(TopicPartition, u64)>;

    /// Whether the group has given this member its partitions yet. Until it has,
    /// [`positions`](Consumer::positions) is empty because nothing was assigned, not because
    /// the member has no partitions: on Kafka a member is assigned its partitions after it
    /// joins the group, a moment after the consumer is made. The default, `true`, is for
    /// backplanes that assign partitions as the consumer is made.
    fn assigned(&self) -> bool {
        true
    }

    /// The lag of each assigned partition as the backplane's client library itself measures
    /// it, where it does: on Kafka, librdkafka's statistics (the partition's last stable
    /// offset minus the group's committed offset, refreshed every `statistics.interval.ms`).
    /// The default reports nothing; the runner measures lag on every backplane from end and
    /// committed offsets anyway.
    fn client_lag(&self) -> Vec<(TopicPartition, u64)> {
        Vec::new()
    }

    /// How many times a rebalance has taken partitions from this member. A partition taken
    /// away and given back (Kafka's eager rebalance takes every partition and assigns them
    /// anew) starts again at the group's committed offset, not where this member had read to,
    /// so whatever is kept per partition (windows, keyed state) must be restored again once
    /// this count moves. The default stays 0: for backplanes whose rebalances never take
    /// partitions away.
    fn revocations(&self) -> u64 {
        0
    }

    /// Leaves the group so its partitions move to the remaining members.
    async fn close(&self) -> Result<()>;
}

/// Where a consumer group starts on a partition for which it has no committed offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StartFrom {
    /// The oldest record still kept.
    #[default]
    Earliest,
    /// Only records appended after the consumer joined.
    Latest,
}

/// How to join a consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// The consumer group; members of one group share the partitions.
    pub group: String,
    /// The topics to read.
    pub topics: Vec<String>,
    /// Where to start without a committed offset.
    pub start_from: StartFrom,
    /// Implementation settings, with Kafka's names (`session.timeout.ms`, ...).
    pub settings: BTreeMap<String, String>,
    /// A name this member keeps when its process restarts, unique in the group, for
    /// backplanes with static membership (Kafka's `group.instance.id`): a member that comes
    /// back under its name gets its partitions again at once, without a rebalance and
    /// without waiting for the group to give up on its previous incarnation. In exchange a
    /// static member does not leave the group when it stops: its partitions wait for it
    /// until the session timeout. `None`: a new member each time, which leaves on close.
    pub static_member: Option<String>,
}

impl ConsumerConfig {
    /// A member of `group` reading `topics` from the earliest offset.
    pub fn new<T: Into<String>>(
        group: impl Into<String>,
        topics: impl IntoIterator<Item = T>,
    ) -> Self {
        ConsumerConfig {
            group: group.into(),
            topics: topics.into_iter().map(Into::into).collect(),
            start_from: StartFrom::Earliest,
            settings: BTreeMap::new(),
            static_member: None,
        }
    }

    /// Joins as the static member `name` (see the field of that name).
    ///
    /// ```
    /// use runnel_backend::ConsumerConfig;
    /// let config = ConsumerConfig::new("shop.enrich.in", ["orders"]).static_member("shop.enrich.0");
    /// assert_eq!(config.static_member.as_deref(), Some("shop.enrich.0"));
    /// ```
    pub fn static_member(mut self, name: impl Into<String>) -> Self {
        self.static_member = Some(name.into());
        self
    }

    /// Sets where to start without a committed offset.
    pub fn start_from(mut self, start_from: StartFrom) -> Self {
        self.start_from = start_from;
        self
    }

    /// Sets which records of transactions the consumer reads, as the
    /// [`Isolation::SETTING`] setting.
    ///
    /// ```
    /// use runnel_backend::{ConsumerConfig, Isolation};
    /// let config = ConsumerConfig::new("audit", ["payments"]).isolation(Isolation::ReadUncommitted);
    /// assert_eq!(config.settings["isolation.level"], "read_uncommitted");
    /// assert_eq!(config.isolation_level()?, Isolation::ReadUncommitted);
    /// assert_eq!(ConsumerConfig::new("g", ["t"]).isolation_level()?, Isolation::ReadCommitted);
    /// # Ok::<(), runnel_backend::Error>(())
    /// ```
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.settings
            .insert(Isolation::SETTING.to_owned(), isolation.as_str().to_owned());
        self
    }

    /// The isolation the settings ask for: [`Isolation::ReadCommitted`] unless
    /// `isolation.level` says otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] for a value other than `read_committed` or
    /// `read_uncommitted`.
    pub fn isolation_level(&self) -> Result<Isolation> {
        match self.settings.get(Isolation::SETTING).map(String::as_str) {
            None | Some("read_committed") => Ok(Isolation::ReadCommitted),
            Some("read_uncommitted") => Ok(Isolation::ReadUncommitted),
            Some(other) => Err(Error::InvalidSetting {
                setting: Isolation::SETTING.to_owned(),
                value: other.to_owned(),
                expected: "read_committed or read_uncommitted",
            }),
        }
    }
}

/// Which records of transactions a consumer reads (Kafka's `isolation.level`).
///
/// Runnel's consumers read committed on every backplane unless told otherwise; on a
/// partition no transaction ever wrote to, both levels read the same records. Kafka and
/// the embedded log honour both levels; [`MemoryBackend`](crate::MemoryBackend) appends a
/// transaction's records only when it commits, so there both read committed records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Records of committed transactions and plain records only, and nothing at or after
    /// the first record of a transaction still open (the last stable offset):
    /// `read_committed`.
    #[default]
    ReadCommitted,
    /// Every acknowledged record, including those of open and aborted transactions:
    /// `read_uncommitted`. Transaction markers are never returned.
    ReadUncommitted,
}

impl Isolation {
    /// The consumer setting that holds the isolation, with Kafka's name.
    pub const SETTING: &'static str = "isolation.level";

    /// The setting's value: `read_committed` or `read_uncommitted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read_committed",
            Isolation::ReadUncommitted => "read_uncommitted",
        }
    }
}

/// How to create a producer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Implementation settings, with Kafka's names (`linger.ms`, `compression.type`, ...).
    pub settings: BTreeMap<String, String>,
}

/// Completes when a sent record is acknowledged, with the offset it was given.
///
/// ```
/// # async fn demo() -> runnel_backend::Result<()> {
/// let receipt = runnel_backend::Receipt::ready(Ok(41));
/// assert_eq!(receipt.await?, 41);
/// # Ok(()) }
/// ```
#[must_use = "a receipt says when the record is durable; dropping it does not cancel the send"]
pub struct Receipt(Delivery);

/// Where a receipt's outcome comes from.
enum Delivery {
    /// A future of its own.
    Future(BoxFuture<'static, Result<u64>>),
    /// Record `index` of an acknowledgement shared with other records.
    Shared {
        source: Arc<dyn ReceiptSource>,
        index: u32,
    },
}

impl Receipt {
    /// A receipt that completes when `delivery` does.
    pub fn new(delivery: impl Future<Output = Result<u64>> + Send + 'static) -> Self {
        Receipt(Delivery::Future(Box::pin(delivery)))
    }

    /// A receipt that is already complete.
    pub fn ready(result: Result<u64>) -> Self {
        Receipt::new(std::future::ready(result))
    }

    /// The receipt of record `index` of `source`, which acknowledges many records at once
    /// (a batch): no allocation of its own, unlike [`new`](Receipt::new).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::task::{Context, Poll};
    /// /// A batch acknowledged at offsets from 40 on.
    /// struct Batch;
    /// impl runnel_backend::ReceiptSource for Batch {
    ///     fn poll_receipt(&self, index: u32, _: &mut Context<'_>) -> Poll<runnel_backend::Result<u64>> {
    ///         Poll::Ready(Ok(40 + u64::from(index)))
    ///     }
    /// }
    /// # async fn demo() -> runnel_backend::Result<()> {
    /// let receipt = runnel_backend::Receipt::shared(Arc::new(Batch), 1);
    /// assert_eq!(receipt.await?, 41);
    /// # Ok(()) }
    /// ```
    pub fn shared(source: Arc<dyn ReceiptSource>, index: u32) -> Self {
        Receipt(Delivery::Shared { source, index })
    }
}

/// Acknowledges many records at once (a batch of the log, a produce request): the
/// receipts made with [`Receipt::shared`] poll it with their record's index.
pub trait ReceiptSource: Send + Sync + 'static {
    /// The outcome of record `index`: its offset once acknowledged, or why it was not. While
    /// pending, `cx`'s waker is woken when that changes, as for [`Future::poll`].
    fn poll_receipt(&self, index: u32, cx: &mut Context<'_>) -> Poll<Result<u64>>;
}

impl Future for Receipt {
    type Output = Result<u64>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Delivery::Future(delivery) => delivery.as_mut().poll(cx),
            Delivery::Shared { source, index } => source.poll_receipt(*index, cx),
        }
    }
}

impl fmt::Debug for Receipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Receipt")
    }
}
