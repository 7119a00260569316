//! The embedded log's [`TransactionalProducer`]: records go to the partitions as they are
//! sent, in transactional batches carrying the producer id and epoch; commit and abort go
//! through the [`Coordinator`](crate::coordinator::Coordinator), which writes a marker to
//! every partition the transaction touched.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use runnel_backend::{
    Consumer, ConsumerConfig, GroupOffsets, Isolation, Producer, Receipt, Record,
    TransactionConfig, TransactionalProducer,
};

use crate::batch::{Control, TransactionFields};
use crate::consumer::EmbeddedConsumer;
use crate::coordinator::{Decided, StepError};
use crate::error::Error;
use crate::partition::lock;
use crate::pending::Completion;
use crate::shared::Shared;
use crate::transaction_index::AbortedRange;

/// A topic name and a partition number.
type PartitionKey = (Arc<str>, u32);

/// A transactional producer of an [`EmbeddedBackend`](crate::EmbeddedBackend).
#[derive(Debug)]
pub(crate) struct EmbeddedTransactionalProducer {
    shared: Arc<Shared>,
    id: String,
    /// Producer id and epoch (`control` is always data).
    fields: TransactionFields,
    /// How long a transaction may stay undecided before the log aborts it.
    timeout: Duration,
    /// The id's ending lock: see [`Coordinator::ending_lock`](crate::coordinator::Coordinator::ending_lock).
    ending: Arc<tokio::sync::Mutex<()>>,
    /// The partitions of the open transaction, with the completion of the last record sent
    /// to each.
    open: Mutex<HashMap<PartitionKey, Option<Arc<Completion>>>>,
    /// Held shared by every send and exclusively by commit and abort, so that a record is
    /// either in the transaction that ends or in the next one, never in between (after its
    /// partition's marker but not in the next transaction's partitions).
    sending: tokio::sync::RwLock<()>,
    /// Per consumer group: the member this producer's consumer joined as, whose partitions
    /// a commit may commit offsets of.
    members: Mutex<HashMap<String, runnel_backend::group::MemberId>>,
}

impl EmbeddedTransactionalProducer {
    /// Registers a new producer for `config.id`, fencing the previous one and finishing
    /// its transaction first (rolled forward if it had decided to commit, aborted
    /// otherwise).
    pub(crate) async fn begin(
        shared: Arc<Shared>,
        config: &TransactionConfig,
    ) -> runnel_backend::Result<Self> {
        let id = config.id.as_str();
        let timeout = transaction_timeout(config)?;
        let ending = shared.coordinator.ending_lock(id);
        let guard = ending.lock().await;
        let begun = {
            let shared = shared.clone();
            let id = id.to_owned();
            blocking(move || shared.coordinator.begin(&id)).await?
        };
        let (fields, unfinished) =
            begun.map_err(|error| transaction_error("starting the producer", id, error))?;
        if let Some(decided) = unfinished {
            finish(&shared, id, decided, Context::Async)
                .await
                .map_err(|error| {
                    transaction_error("finishing the previous producer's transaction", id, error)
                })?;
        }
        drop(guard);
        Ok(EmbeddedTransactionalProducer {
            shared,
            id: id.to_owned(),
            fields,
            timeout,
            ending,
            open: Mutex::default(),
            sending: tokio::sync::RwLock::new(()),
            members: Mutex::default(),
        })
    }

    fn fenced(&self) -> runnel_backend::Error {
        runnel_backend::Error::Fenced {
            id: self.id.clone(),
        }
    }

    /// Decides the open transaction (`Control::Commit` with `offsets`, or `Control::Abort`)
    /// and finishes it.
    async fn end(
        &self,
        control: Control,
        offsets: Vec<(String, String, u32, u64)>,
        operation: &'static str,
    ) -> runnel_backend::Result<()> {
        let decided = {
            let shared = self.shared.clone();
            let id = self.id.clone();
            let fields = self.fields;
            blocking(move || shared.coordinator.decide(&id, fields, control, offsets)).await?
        };
        let decided = match decided {
            Ok(decided) => decided,
            Err(StepError::Fenced) => {
                // The newer producer aborted this one's transaction when it began.
                lock(&self.open).clear();
                return Err(self.fenced());
            }
            Err(StepError::Failed(error)) => {
                return Err(transaction_error(operation, &self.id, error));
            }
        };
        finish(&self.shared, &self.id, decided, Context::Async)
            .await
            .map_err(|error| transaction_error(operation, &self.id, error))?;
        lock(&self.open).clear();
        Ok(())
    }

    /// The completions of the last record sent to each partition of the transaction.
    fn last_completions(&self) -> Vec<Arc<Completion>> {
        lock(&self.open).values().flatten().cloned().collect()
    }
}

#[async_trait]
impl Producer for EmbeddedTransactionalProducer {
    async fn send(
        &self,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> runnel_backend::Result<Receipt> {
        let log = self.shared.partition(topic, partition)?;
        let key: PartitionKey = (log.topic.clone(), partition);
        let _sending = self.sending.read().await;
        if !lock(&self.open).contains_key(&key) {
            let added = {
                let shared = self.shared.clone();
                let id = self.id.clone();
                let (fields, timeout) = (self.fields, self.timeout);
                let log = log.clone();
                blocking(move || shared.coordinator.add_partition(&id, fields, &log, timeout))
                    .await?
            };
            match added {
                Ok(()) => {}
                Err(StepError::Fenced) => return Err(self.fenced()),
                Err(StepError::Failed(error)) => return Err(error.into_produce(topic, partition)),
            }
            lock(&self.open).entry(key.clone()).or_insert(None);
        }
        let accepted =
            log.append_as(&record, Some(self.fields))
                .await
                .map_err(|error| match error {
                    Error::ProducerFenced => self.fenced(),
                    other => other.into_produce(topic, partition),
                })?;
        lock(&self.open).insert(key, Some(accepted.completion.clone()));
        Ok(accepted.into_receipt(&log.topic, partition))
    }

    /// Waits until every record of the open transaction is durable (not committed).
    async fn flush(&self) -> runnel_backend::Result<()> {
        for completion in self.last_completions() {
            completion
                .wait()
                .await
                .map_err(|error| transaction_error("flushing", &self.id, Error::Shared(error)))?;
        }
        Ok(())
    }
}

#[async_trait]
impl TransactionalProducer for EmbeddedTransactionalProducer {
    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        for topic in &config.topics {
            self.shared.topic(topic)?;
        }
        let consumer =
            EmbeddedConsumer::join(self.shared.clone(), config, Isolation::ReadCommitted);
        lock(&self.members).insert(config.group.clone(), consumer.member());
        Ok(Arc::new(consumer))
    }

    async fn commit(&self, offsets: &[GroupOffsets]) -> runnel_backend::Result<()> {
        let _sending = self.sending.write().await;
        let _ending = self.ending.lock().await;
        // The decision must not be taken before the records are durable: a commit point
        // over records a failed disk lost would commit their inputs' offsets without them.
        for completion in self.last_completions() {
            completion.wait().await.map_err(|error| {
                transaction_error("committing the transaction", &self.id, Error::Shared(error))
            })?;
        }
        // A member a rebalance replaced must not commit offsets of partitions it lost: its
        // new owner resumes them from what was committed before.
        let members = lock(&self.members).clone();
        let owned = self
            .shared
            .groups
            .check_owned(&members, offsets, |topic| self.shared.partitions_of(topic));
        if let Err(reassigned) = owned {
            self.end(Control::Abort, Vec::new(), "aborting the transaction")
                .await?;
            return Err(reassigned);
        }
        let mut entries = Vec::new();
        for group in offsets {
            for offset in &group.offsets {
                self.shared.partition(&offset.topic, offset.partition)?;
                entries.push((
                    group.group.clone(),
                    offset.topic.to_string(),
                    offset.partition,
                    offset.offset,
                ));
            }
        }
        self.end(Control::Commit, entries, "committing the transaction")
            .await
    }

    async fn abort(&self) -> runnel_backend::Result<()> {
        let _sending = self.sending.write().await;
        let _ending = self.ending.lock().await;
        self.end(Control::Abort, Vec::new(), "aborting the transaction")
            .await
    }
}

impl Drop for EmbeddedTransactionalProducer {
    /// Aborts an open transaction in the background, so that read-committed readers are
    /// not held back until a producer with the same id begins or the log is reopened.
    fn drop(&mut self) {
        if lock(&self.open).is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (shared, id, fields, ending) = (
            self.shared.clone(),
            self.id.clone(),
            self.fields,
            self.ending.clone(),
        );
        runtime.spawn(async move {
            let _ending = ending.lock().await;
            let decided = {
                let shared = shared.clone();
                let id = id.clone();
                blocking(move || shared.coordinator.decide(&id, fields, Control::Abort, Vec::new()))
                    .await
            };
            // A fenced producer's transaction was aborted by its successor already.
            if let Ok(Ok(decided)) = decided
                && let Err(error) = finish(&shared, &id, decided, Context::Async).await
            {
                tracing::warn!(id = %id, error = %error, "aborting the transaction of a dropped producer failed; it is aborted when a producer with its id begins or the log is reopened");
            }
        });
    }
}

/// Where [`finish`] runs: in async code (disk work on the blocking pool), or in
/// synchronous code that may block (the recovery in
/// [`EmbeddedBackend::open`](crate::EmbeddedBackend::open), the timeout thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Context {
    Async,
    Blocking,
}

/// Writes a decided transaction's markers, waits until they are durable, stores its
/// offsets (on commit) and tells the coordinator and the partitions that it ended.
pub(crate) async fn finish(
    shared: &Arc<Shared>,
    id: &str,
    decided: Decided,
    context: Context,
) -> Result<(), Error> {
    let producer_id = decided.fields.producer_id;
    let mut markers = Vec::with_capacity(decided.partitions.len());
    for ((topic, number), first) in &decided.partitions {
        // Topics are never deleted from the embedded log, so this only skips a partition
        // the state names wrongly.
        let Ok(partition) = shared.partition(topic, *number) else {
            tracing::warn!(topic = %topic, partition = number, "a transaction names a partition the log does not have");
            continue;
        };
        // After a restart the partition learns of the open transaction from the state.
        lock(&partition.transactions).open(producer_id, *first);
        let accepted = partition.append_marker(decided.fields)?;
        markers.push((partition, *first, accepted.completion));
    }
    let mut ended = Vec::with_capacity(markers.len());
    for (partition, first, completion) in markers {
        let marker = completion.wait().await.map_err(Error::Shared)?;
        ended.push((partition, first, marker));
    }
    let aborted: Vec<_> = if decided.fields.control == Control::Abort {
        ended
            .iter()
            .map(|(partition, first, marker)| {
                let key = (partition.topic.to_string(), partition.number);
                let range = AbortedRange {
                    producer_id,
                    first: *first,
                    marker: *marker,
                };
                (key, range)
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut groups: BTreeMap<String, Vec<(String, u32, u64)>> = BTreeMap::new();
    for (group, topic, partition, offset) in decided.offsets {
        groups
            .entry(group)
            .or_default()
            .push((topic, partition, offset));
    }
    // The partitions learn that the transaction ended before the coordinator forgets it:
    // a caller dropped between the two leaves the transaction decided, and the next
    // producer with the id finishes it again (the steps are idempotent), instead of
    // leaving readers held at a transaction nobody will end.
    for (partition, _, marker) in &ended {
        let aborted_at = (decided.fields.control == Control::Abort).then_some(*marker);
        let mut transactions = lock(&partition.transactions);
        transactions.close(producer_id, aborted_at);
        transactions.forget_before(partition.start());
        drop(transactions);
        partition.wake_readers();
    }
    let shared = shared.clone();
    let id = id.to_owned();
    let fields = decided.fields;
    let work = move || -> Result<(), Error> {
        for (group, offsets) in &groups {
            shared.offsets.commit(group, offsets)?;
        }
        shared
            .coordinator
            .complete(&id, fields, aborted, |(topic, number)| {
                shared.partition(topic, *number).ok().map(|p| p.start())
            })
    };
    match context {
        Context::Async => blocking(work).await.map_err(|_| Error::Closed)?,
        Context::Blocking => work(),
    }
}

/// The producer setting that bounds how long a transaction may stay undecided, with
/// Kafka's name and default.
pub(crate) const TIMEOUT_SETTING: &str = "transaction.timeout.ms";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

fn transaction_timeout(config: &TransactionConfig) -> runnel_backend::Result<Duration> {
    match config.producer.settings.get(TIMEOUT_SETTING) {
        None => Ok(DEFAULT_TIMEOUT),
        Some(text) => text
            .parse()
            .ok()
            .filter(|milliseconds| *milliseconds > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| runnel_backend::Error::InvalidSetting {
                setting: TIMEOUT_SETTING.to_owned(),
                value: text.clone(),
                expected: "a positive number of milliseconds",
            }),
    }
}

/// Runs disk work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> runnel_backend::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| runnel_backend::Error::Closed)
}

fn transaction_error(
    operation: &'static str,
    id: &str,
    error: impl Into<Error>,
) -> runnel_backend::Error {
    match error.into() {
        Error::Closed => runnel_backend::Error::Closed,
        Error::ProducerFenced => runnel_backend::Error::Fenced { id: id.to_owned() },
        other => runnel_backend::Error::Transaction {
            operation,
            id: id.to_owned(),
            source: Box::new(other),
        },
    }
}
