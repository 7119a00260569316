//! [`KafkaTransactionalProducer`]: exactly-once on Kafka. A transactional producer sends the
//! consumed offsets into its transaction with each consumer's group metadata
//! (`send_offsets_to_transaction`, KIP-447), so a member that lost its partitions in a
//! rebalance cannot commit them: the broker refuses the stale generation and the
//! transaction is aborted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::Producer as _;
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{
    Consumer, ConsumerConfig, Error, GroupOffsets, Producer, Receipt, Record, Result,
    TransactionalProducer, TrySend,
};

use crate::consumer::KafkaConsumer;
use crate::metadata::blocking;
use crate::producer::KafkaProducer;
use crate::{KafkaBackend, error::Redactor};

/// A transactional producer and the consumers whose offsets it commits.
pub(crate) struct KafkaTransactionalProducer {
    producer: KafkaProducer,
    id: String,
    backend: KafkaBackend,
    /// The consumers whose offsets this producer commits, by group, each with its count of
    /// revocations when the open transaction began.
    consumers: Mutex<HashMap<String, (Arc<KafkaConsumer>, u64)>>,
    timeout: Duration,
    /// A call into librdkafka did not return in time (see [`STUCK_MARGIN`]): the producer is
    /// given up, and every later call fails at once.
    stuck: Arc<AtomicBool>,
}

/// How long a transaction call may block past the timeouts it was given before the
/// producer is given up. librdkafka's `send_offsets_to_transaction` can block forever while
/// the group coordinator moves to another node: it never checks its coordinator request's
/// timeout (librdkafka issues 5456 and 5511, open). Met on Apache Kafka by killing the node
/// of the transaction and group coordinators under an exactly-once copy
/// (`crates/kafka/tests/it/faults.rs`). The call's thread stays blocked; the instance fails
/// and restarts with a new producer of the same transactional id, which fences this one.
const STUCK_MARGIN: Duration = Duration::from_secs(10);

impl std::fmt::Debug for KafkaTransactionalProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaTransactionalProducer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl KafkaTransactionalProducer {
    /// Registers the transactional id with the cluster (fencing older producers with it and
    /// aborting their open transaction) and begins the first transaction.
    pub(crate) async fn start(
        backend: KafkaBackend,
        producer: KafkaProducer,
        id: &str,
        timeout: Duration,
    ) -> Result<Self> {
        let (client, redactor, name) = (
            producer.client.clone(),
            producer.redactor.clone(),
            id.to_owned(),
        );
        blocking(move || {
            client
                .init_transactions(timeout)
                .and_then(|()| client.begin_transaction())
                .map_err(|error| {
                    transaction_error("starting transactions", &name, &error, &redactor)
                })
        })
        .await?;
        Ok(KafkaTransactionalProducer {
            producer,
            id: id.to_owned(),
            backend,
            consumers: Mutex::default(),
            timeout,
            stuck: Arc::default(),
        })
    }

    /// Runs `call` (librdkafka calls each bounded by the producer's timeout) on a thread of
    /// its own, and fails if it has not returned within that timeout and [`STUCK_MARGIN`]: a
    /// commit that slow is given up even if it would have finished, which costs a restart,
    /// never a duplicate.
    async fn bounded(
        &self,
        operation: &'static str,
        call: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<()> {
        let stuck = |text: String| Error::Transaction {
            operation,
            id: self.id.clone(),
            source: crate::error::message(text),
        };
        if self.stuck.load(Ordering::Relaxed) {
            return Err(stuck(
                "an earlier call of this transactional producer never returned; it is given up"
                    .to_owned(),
            ));
        }
        let limit = self.timeout + STUCK_MARGIN;
        // A thread of its own, not tokio's blocking pool: a runtime waits for its blocking
        // tasks when it shuts down, and this one may never return.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("runnel-kafka-transaction".to_owned())
            .spawn(move || {
                let _ = sender.send(call());
            })
            .map_err(|error| stuck(format!("starting a thread failed: {error}")))?;
        match tokio::time::timeout(limit, receiver).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(stuck("the transaction call panicked".to_owned())),
            Err(_) => {
                self.stuck.store(true, Ordering::Relaxed);
                tracing::error!(
                    id = %self.id,
                    "{operation}: librdkafka did not return within {} s; the transactional producer is given up",
                    limit.as_secs()
                );
                Err(stuck(format!(
                    "librdkafka did not return within {} s (it can block forever while a coordinator moves to another node, librdkafka issues 5456 and 5511); the producer is given up and a new one fences it",
                    limit.as_secs()
                )))
            }
        }
    }
}

/// Maps a transaction failure: fencing (another producer with this id, or this one timed
/// out) is [`Error::Fenced`]; the rest need an abort.
fn transaction_error(
    operation: &'static str,
    id: &str,
    error: &KafkaError,
    redactor: &Redactor,
) -> Error {
    let fenced = match error {
        KafkaError::Transaction(cause) => {
            cause.is_fatal()
                || matches!(
                    cause.code(),
                    RDKafkaErrorCode::ProducerFenced | RDKafkaErrorCode::InvalidProducerEpoch
                )
        }
        _ => false,
    };
    if fenced {
        tracing::warn!("transactional producer '{id}': {}", redactor.error(error));
        Error::Fenced { id: id.to_owned() }
    } else {
        Error::Transaction {
            operation,
            id: id.to_owned(),
            source: redactor.boxed(error),
        }
    }
}

#[async_trait]
impl Producer for KafkaTransactionalProducer {
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt> {
        self.producer.send(topic, partition, record).await
    }

    fn try_send(&self, topic: &str, partition: u32, record: Record) -> TrySend {
        self.producer.try_send(topic, partition, record)
    }

    async fn flush(&self) -> Result<()> {
        self.producer.flush().await
    }
}

#[async_trait]
impl TransactionalProducer for KafkaTransactionalProducer {
    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
        let consumer = Arc::new(self.backend.start_consumer(config, true)?);
        self.consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                config.group.clone(),
                (consumer.clone(), consumer.revocations()),
            );
        Ok(consumer)
    }

    async fn commit(&self, offsets: &[GroupOffsets]) -> Result<()> {
        let mut sends = Vec::new();
        let mut revocations = Vec::new();
        {
            let consumers = self
                .consumers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for group in offsets.iter().filter(|g| !g.offsets.is_empty()) {
                let metadata = consumers
                    .get(&group.group)
                    .and_then(|(consumer, _)| consumer.group_metadata())
                    .ok_or_else(|| Error::Transaction {
                        operation: "committing the transaction",
                        id: self.id.clone(),
                        source: crate::error::message(format!(
                            "no consumer of group '{}' was made by this producer",
                            group.group
                        )),
                    })?;
                let mut list = TopicPartitionList::new();
                for offset in &group.offsets {
                    let _ = list.add_partition_offset(
                        &offset.topic,
                        offset.partition as i32,
                        Offset::Offset(offset.offset as i64),
                    );
                }
                sends.push((list, metadata));
            }
            // After the group metadata: a rebalance that revokes partitions from here on gives
            // the group a new generation, and the broker refuses the offsets.
            for (group, (consumer, at_begin)) in consumers.iter() {
                let now = consumer.revocations();
                if now != *at_begin {
                    // Records of partitions now another member's may be in this transaction,
                    // and with the new generation the broker would take its offsets: their
                    // new owner reads them again from the last commit, so committing would
                    // write their outputs twice.
                    return Err(Error::Transaction {
                        operation: "committing the transaction",
                        id: self.id.clone(),
                        source: crate::error::message(format!(
                            "input partitions of group '{group}' were revoked while the transaction was open (a rebalance); it is dropped, not committed, so their next owner's outputs are the only ones"
                        )),
                    });
                }
                revocations.push((group.clone(), now));
            }
        }
        let (client, redactor, id, timeout) = (
            self.producer.client.clone(),
            self.producer.redactor.clone(),
            self.id.clone(),
            self.timeout,
        );
        self.bounded("committing the transaction", move || {
            for (list, metadata) in &sends {
                client
                    .send_offsets_to_transaction(list, metadata, timeout)
                    .map_err(|e| {
                        transaction_error("sending offsets to the transaction", &id, &e, &redactor)
                    })?;
            }
            // Deliveries first, without rust-rdkafka's 100 ms steps (`drain`); whatever is
            // left when it gives up, commit_transaction still waits for. Both share one
            // timeout, so a commit still fails within it rather than being given up as stuck.
            let deadline = Instant::now() + timeout;
            crate::producer::drain(&client, timeout);
            client
                .commit_transaction(deadline.saturating_duration_since(Instant::now()))
                .map_err(|e| transaction_error("committing the transaction", &id, &e, &redactor))?;
            client
                .begin_transaction()
                .map_err(|e| transaction_error("beginning a transaction", &id, &e, &redactor))
        })
        .await?;
        // The next transaction begins with the counts checked above: a revocation since
        // then, even during this commit, drops it.
        let mut consumers = self
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (group, count) in revocations {
            if let Some((_, at_begin)) = consumers.get_mut(&group) {
                *at_begin = count;
            }
        }
        Ok(())
    }

    async fn abort(&self) -> Result<()> {
        let (client, redactor, id, timeout) = (
            self.producer.client.clone(),
            self.producer.redactor.clone(),
            self.id.clone(),
            self.timeout,
        );
        self.bounded("aborting the transaction", move || {
            client
                .abort_transaction(timeout)
                .map_err(|e| transaction_error("aborting the transaction", &id, &e, &redactor))?;
            client
                .begin_transaction()
                .map_err(|e| transaction_error("beginning a transaction", &id, &e, &redactor))
        })
        .await?;
        for (consumer, at_begin) in self
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values_mut()
        {
            *at_begin = consumer.revocations();
        }
        Ok(())
    }
}
