//! [`KafkaProducer`]: appends records to explicit partitions through librdkafka, with a
//! receipt per record completed by the delivery report.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message as _, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use runnel_backend::{Error, Producer, Receipt, Record, Result};
use tokio::sync::{Notify, oneshot};

use crate::context;
use crate::error::{LibrdkafkaError, Redactor};
use crate::metadata::{Metadata, blocking};

/// How long `flush` waits for outstanding deliveries at most.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(300);

type Delivery = oneshot::Sender<std::result::Result<u64, LibrdkafkaError>>;

/// Completes receipts from delivery reports and wakes senders waiting for queue space.
pub(crate) struct DeliveryContext {
    redactor: Redactor,
    metadata: Arc<Metadata>,
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
    type DeliveryOpaque = Box<Delivery>;

    fn delivery(&self, result: &DeliveryResult<'_>, delivery: Self::DeliveryOpaque) {
        let outcome = match result {
            Ok(message) => {
                self.metadata
                    .delivered(message.topic(), message.partition(), message.offset());
                Ok(message.offset().max(0) as u64)
            }
            Err((error, _)) => Err(self.redactor.error(error)),
        };
        let _ = delivery.send(outcome);
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.space.notify_waiters();
        }
    }
}

pub(crate) type Client = ThreadedProducer<DeliveryContext>;

/// A producer on Kafka: idempotent with acks=all, or transactional.
pub(crate) struct KafkaProducer {
    pub(crate) client: Arc<Client>,
    metadata: Arc<Metadata>,
    pub(crate) redactor: Redactor,
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
        redactor: Redactor,
    ) -> std::result::Result<Self, KafkaError> {
        let context = DeliveryContext {
            redactor: redactor.clone(),
            metadata: metadata.clone(),
            space: Notify::new(),
            waiting: AtomicUsize::new(0),
        };
        let client: Client = config.create_with_context(context)?;
        Ok(KafkaProducer {
            client: Arc::new(client),
            metadata,
            redactor,
        })
    }

    fn produce_error(&self, topic: &str, partition: u32, error: &KafkaError) -> Error {
        Error::Produce {
            topic: topic.to_owned(),
            partition,
            source: self.redactor.boxed(error),
        }
    }
}

#[async_trait]
impl Producer for KafkaProducer {
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt> {
        let (_, mut partitions) = self.metadata.partitions(topic, false).await?;
        if partition >= partitions {
            partitions = self.metadata.partitions(topic, true).await?.1;
            if partition >= partitions {
                return Err(Error::PartitionNotFound {
                    topic: topic.to_owned(),
                    partition,
                    partitions,
                });
            }
        }
        let (delivered, receipt) = oneshot::channel();
        let mut base = BaseRecord::with_opaque_to(topic, Box::new(delivered))
            .partition(partition as i32)
            .payload(&record.value[..])
            .timestamp(record.timestamp);
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
        let context = self.client.context();
        loop {
            // Register interest before trying, so a delivery between the failed attempt and
            // the wait cannot be missed.
            let space = context.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            match self.client.send(base) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    base = returned;
                    context.waiting.fetch_add(1, Ordering::AcqRel);
                    // Deliveries make room; the timeout covers librdkafka's own retries.
                    let _ = tokio::time::timeout(Duration::from_millis(50), space).await;
                    context.waiting.fetch_sub(1, Ordering::AcqRel);
                }
                Err((error, _)) => return Err(self.produce_error(topic, partition, &error)),
            }
        }
        let (topic, partition_number) = (topic.to_owned(), partition);
        Ok(Receipt::new(async move {
            match receipt.await {
                Ok(Ok(offset)) => Ok(offset),
                Ok(Err(cause)) => Err(Error::Produce {
                    topic,
                    partition: partition_number,
                    source: Box::new(cause),
                }),
                Err(_) => Err(Error::Closed),
            }
        }))
    }

    async fn flush(&self) -> Result<()> {
        let client = self.client.clone();
        let redactor = self.redactor.clone();
        blocking(move || {
            client.flush(FLUSH_TIMEOUT).map_err(|error| Error::Admin {
                operation: "flushing the kafka producer".to_owned(),
                source: redactor.boxed(&error),
            })
        })
        .await
    }
}
