//! [`KafkaProducer`]: appends records to explicit partitions through librdkafka, with a
//! receipt per record completed by the delivery report.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message as _, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use runnel_backend::{Error, Producer, Receipt, Record, Result, TrySend};
use tokio::sync::Notify;

use crate::context;
use crate::delivery::Delivery;
use crate::error::Redactor;
use crate::metadata::{Metadata, blocking};
use crate::targets::{Destination, Targets};
use crate::topic_limits::{BATCH_OVERHEAD, TopicLimits};

/// librdkafka's default `message.max.bytes`.
const DEFAULT_MAX_RECORD_BYTES: usize = 1_000_000;

/// A record's size as librdkafka counts it against `message.max.bytes`: key, value and
/// headers plus the largest per-record overhead of the v2 batch format.
fn wire_size(record: &Record) -> usize {
    /// `RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD`: varint lengths, attributes, deltas.
    const OVERHEAD: usize = 5 + 1 + 10 + 5 + 5 + 5 + 5;
    let headers: usize = record
        .headers
        .iter()
        .map(|header| header.key.len() + header.value.len() + 10)
        .sum();
    OVERHEAD + record.key.as_ref().map_or(0, |key| key.len()) + record.value_len() + headers
}

/// How long `flush` waits for outstanding deliveries at most.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(300);

/// Completes receipts from delivery reports and wakes senders waiting for queue space.
pub(crate) struct DeliveryContext {
    redactor: Redactor,
    /// Senders waiting for room in librdkafka's queue.
    space: Notify,
    waiting: AtomicUsize,
}

impl ClientContext for DeliveryContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        context::log(&self.redactor, level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        context::report_error(&self.redactor, &error, reason);
    }
}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = Arc<Delivery>;

    fn delivery(&self, result: &DeliveryResult<'_>, delivery: Self::DeliveryOpaque) {
        let outcome = match result {
            Ok(message) => {
                delivery.written().delivered(message.offset());
                Ok(message.offset().max(0) as u64)
            }
            Err((error, _)) => Err(self.redactor.error(error)),
        };
        delivery.complete(outcome);
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.space.notify_waiters();
        }
    }
}

pub(crate) type Client = ThreadedProducer<DeliveryContext>;

/// How often [`drain`] looks at librdkafka's count of undelivered records.
const DRAIN_CHECK: Duration = Duration::from_millis(1);

/// Waits until librdkafka holds no undelivered record of `client` (nor any event not yet
/// served: delivery reports, client errors), for at most `timeout`; says whether it got
/// there. Blocks the thread.
///
/// Call it before rust-rdkafka's `flush`, and before its `commit_transaction`, which
/// flushes first: that flush waits for delivery reports on the producer's queue in steps of
/// up to 100 ms, but a [`ThreadedProducer`]'s own thread serves that queue, so a step that
/// starts with a record in flight sleeps its whole 100 ms. Committing every second at
/// 100,000 records/s, that was about one commit in four (docs/benchmarks.md). Once this
/// returns true, their flush finds nothing to wait for.
pub(crate) fn drain(client: &Client, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if client.in_flight_count() == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(DRAIN_CHECK);
    }
}

/// A producer on Kafka: idempotent with acks=all, or transactional.
pub(crate) struct KafkaProducer {
    pub(crate) client: Arc<Client>,
    /// The topics this producer writes: partition counts and limits.
    targets: Targets,
    pub(crate) redactor: Redactor,
    /// librdkafka's `message.max.bytes`: larger records are refused before they are sent.
    max_record_bytes: usize,
}

impl std::fmt::Debug for KafkaProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaProducer").finish_non_exhaustive()
    }
}

impl KafkaProducer {
    pub(crate) fn new(
        config: &rdkafka::ClientConfig,
        metadata: Arc<Metadata>,
        limits: Arc<TopicLimits>,
        redactor: Redactor,
    ) -> std::result::Result<Self, KafkaError> {
        let context = DeliveryContext {
            redactor: redactor.clone(),
            space: Notify::new(),
            waiting: AtomicUsize::new(0),
        };
        let client: Client = config.create_with_context(context)?;
        let max_record_bytes = config
            .get("message.max.bytes")
            .and_then(|bytes| bytes.parse().ok())
            .unwrap_or(DEFAULT_MAX_RECORD_BYTES);
        Ok(KafkaProducer {
            client: Arc::new(client),
            targets: Targets::new(metadata, limits),
            redactor,
            max_record_bytes,
        })
    }

    fn produce_error(
        &self,
        topic: &str,
        partition: u32,
        error: &KafkaError,
        record: &Record,
    ) -> Error {
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::MessageSizeTooLarge) {
            return Error::RecordTooLarge {
                topic: topic.to_owned(),
                partition,
                size: wire_size(record),
                limit: Some(self.max_record_bytes),
            };
        }
        Error::Produce {
            topic: topic.to_owned(),
            partition,
            source: self.redactor.boxed(error),
        }
    }
}

/// What one attempt to hand a record to librdkafka came to.
enum Attempt {
    Sent(Receipt),
    /// librdkafka's queue is full; deliveries make room.
    Full,
    Failed(Error),
}

impl KafkaProducer {
    /// Checks `record` against the topic's limit and hands it to librdkafka once.
    fn attempt(
        &self,
        topic: &str,
        partition: u32,
        record: &Record,
        destination: &Destination,
    ) -> Attempt {
        let record_size = wire_size(record);
        if let Some(limit) = destination.limit {
            let size = record_size + BATCH_OVERHEAD;
            if size > limit {
                return Attempt::Failed(Error::RecordTooLarge {
                    topic: topic.to_owned(),
                    partition,
                    size,
                    limit: Some(limit),
                });
            }
        }
        // The partition's shared cell, not a copy of the name: the receipt needs the name
        // only for an error, the delivery report the cell for the acknowledged end.
        let delivery = Arc::new(Delivery::new(destination.written.clone(), record_size));
        let mut base: BaseRecord<'_, [u8], [u8], _> =
            BaseRecord::with_opaque_to(topic, delivery.clone())
                .partition(partition as i32)
                .timestamp(record.timestamp);
        // No payload at all is Kafka's null value (a tombstone); an empty one stays empty.
        if let Some(value) = &record.value {
            base = base.payload(&value[..]);
        }
        // librdkafka allocates and frees a header list per record that has one at all.
        if !record.headers.is_empty() {
            let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
            for header in &record.headers {
                headers = headers.insert(Header {
                    key: &header.key,
                    value: Some(&header.value[..]),
                });
            }
            base = base.headers(headers);
        }
        if let Some(key) = &record.key {
            base = base.key(&key[..]);
        }
        match self.client.send(base) {
            Ok(()) => Attempt::Sent(Receipt::shared(delivery, 0)),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => Attempt::Full,
            Err((error, _)) => {
                Attempt::Failed(self.produce_error(topic, partition, &error, record))
            }
        }
    }
}

#[async_trait]
impl Producer for KafkaProducer {
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt> {
        let destination = self.targets.destination(topic, partition).await?;
        let context = self.client.context();
        loop {
            // Register interest before trying, so a delivery between the failed attempt and
            // the wait cannot be missed.
            // (`space` is only signalled with `notify_waiters`, which a `Notified` receives
            // from its creation on: enabling it, a lock per send, is not needed.)
            let space = context.space.notified();
            tokio::pin!(space);
            match self.attempt(topic, partition, &record, &destination) {
                Attempt::Sent(receipt) => return Ok(receipt),
                Attempt::Failed(error) => return Err(error),
                Attempt::Full => {
                    context.waiting.fetch_add(1, Ordering::AcqRel);
                    // Deliveries make room; the timeout covers librdkafka's own retries.
                    let _ = tokio::time::timeout(Duration::from_millis(50), space).await;
                    context.waiting.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }

    fn try_send(&self, topic: &str, partition: u32, record: Record) -> TrySend {
        let Some(destination) = self.targets.cached(topic, partition) else {
            return TrySend::Wait(record);
        };
        match self.attempt(topic, partition, &record, &destination) {
            Attempt::Sent(receipt) => TrySend::Sent(Ok(receipt)),
            Attempt::Failed(error) => TrySend::Sent(Err(error)),
            Attempt::Full => TrySend::Wait(record),
        }
    }

    async fn flush(&self) -> Result<()> {
        let client = self.client.clone();
        let redactor = self.redactor.clone();
        blocking(move || {
            drain(&client, FLUSH_TIMEOUT);
            client.flush(FLUSH_TIMEOUT).map_err(|error| Error::Admin {
                operation: "flushing the kafka producer".to_owned(),
                source: redactor.boxed(&error),
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::Written;
    use crate::settings::KafkaSettings;

    /// A producer whose broker never answers: what it is given stays undelivered.
    fn unanswered() -> Client {
        let context = DeliveryContext {
            redactor: Redactor::new(Arc::new(KafkaSettings::default())),
            space: Notify::new(),
            waiting: AtomicUsize::new(0),
        };
        rdkafka::ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .set("message.timeout.ms", "60000")
            .create_with_context(context)
            .unwrap()
    }

    #[test]
    fn drain_returns_true_once_nothing_is_in_flight() {
        // Not at once: the refused connection's error is an event on the producer's queue
        // until its thread serves it, and librdkafka counts that too.
        assert!(drain(&unanswered(), Duration::from_secs(30)));
    }

    #[test]
    fn drain_gives_up_at_its_timeout_while_a_record_is_undelivered() {
        let client = unanswered();
        let delivery = Arc::new(Delivery::new(Arc::new(Written::new("t".into(), 0)), 1));
        let record: BaseRecord<'_, [u8], [u8], _> = BaseRecord::with_opaque_to("t", delivery)
            .partition(0)
            .payload(b"x");
        client.send(record).map_err(|(error, _)| error).unwrap();

        let started = Instant::now();
        assert!(!drain(&client, Duration::from_millis(50)));
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(client.in_flight_count(), 1);
    }
}
