//! [`Delivery`]: where librdkafka's delivery report of one record meets the receipt that
//! waits for it.
//!
//! One allocation per record serves as librdkafka's opaque (an `Arc`, which rdkafka passes
//! without boxing it again) and as the receipt itself (a [`ReceiptSource`]), where a
//! oneshot channel needed the channel, a boxed sender as the opaque and a boxed future for
//! the receipt. The report and the receipt meet without a lock: the outcome is set once
//! and the receipt's waker is kept in an [`AtomicWaker`].

use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use rdkafka::types::RDKafkaErrorCode;
use runnel_backend::{Error, ReceiptSource};

use crate::error::LibrdkafkaError;
use crate::metadata::Written;

/// A record's delivery outcome: its offset, or why the broker did not take it.
pub(crate) type Outcome = std::result::Result<u64, LibrdkafkaError>;

/// The delivery of one record: completed once by the delivery report, polled by its
/// receipt.
#[derive(Debug)]
pub(crate) struct Delivery {
    outcome: OnceLock<Outcome>,
    /// The receipt's task, waiting for the outcome.
    waiter: AtomicWaker,
    /// Where the record went (for the acknowledged end and the receipt's errors).
    written: Arc<Written>,
    /// The record's size, for the receipt's errors.
    size: usize,
}

impl Delivery {
    /// The delivery of a record of `size` bytes (as librdkafka counts them) to `written`.
    pub(crate) fn new(written: Arc<Written>, size: usize) -> Self {
        Delivery {
            outcome: OnceLock::new(),
            waiter: AtomicWaker::new(),
            written,
            size,
        }
    }

    /// The partition the record went to.
    pub(crate) fn written(&self) -> &Written {
        &self.written
    }

    /// Records the outcome and wakes the receipt. Only the first outcome counts.
    pub(crate) fn complete(&self, outcome: Outcome) {
        let _ = self.outcome.set(outcome);
        self.waiter.wake();
    }
}

/// librdkafka reports every record it took (purged ones too, when the producer is dropped),
/// so a waiting receipt is woken by [`Delivery::complete`]. One whose opaque librdkafka
/// leaks (a producer destroyed before its flush ends) waits forever, as a oneshot receiver
/// whose sender leaked did.
impl ReceiptSource for Delivery {
    fn poll_receipt(&self, _index: u32, cx: &mut Context<'_>) -> Poll<runnel_backend::Result<u64>> {
        let outcome = match self.outcome.get() {
            Some(outcome) => outcome,
            None => {
                self.waiter.register(cx.waker());
                // Set between the first look and the registration: its wake may have
                // found no waker.
                match self.outcome.get() {
                    Some(outcome) => outcome,
                    None => return Poll::Pending,
                }
            }
        };
        Poll::Ready(match outcome {
            Ok(offset) => Ok(*offset),
            // The broker refused it: the topic's `max.message.bytes` is below the producer's
            // `message.max.bytes`.
            Err(cause) if cause.code() == Some(RDKafkaErrorCode::MessageSizeTooLarge) => {
                Err(Error::RecordTooLarge {
                    topic: self.written.topic.to_string(),
                    partition: self.written.partition,
                    size: self.size,
                    limit: None,
                })
            }
            Err(cause) => Err(Error::Produce {
                topic: self.written.topic.to_string(),
                partition: self.written.partition,
                source: Box::new(cause.clone()),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use runnel_backend::Receipt;

    use super::*;

    fn written() -> Arc<Written> {
        Arc::new(Written::new(Arc::from("out"), 2))
    }

    #[tokio::test]
    async fn a_receipt_gets_the_reported_outcome() {
        let delivery = Arc::new(Delivery::new(written(), 10));
        let waiting = tokio::spawn(Receipt::shared(delivery.clone(), 0));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the receipt waits for the report");
        delivery.complete(Ok(41));
        assert_eq!(waiting.await.unwrap().unwrap(), 41);
    }

    #[tokio::test]
    async fn a_receipt_polled_after_the_report_is_ready_at_once() {
        let delivery = Arc::new(Delivery::new(written(), 10));
        delivery.complete(Ok(7));
        // A later outcome does not replace the first.
        delivery.complete(Ok(8));
        assert_eq!(Receipt::shared(delivery, 0).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_refused_record_fails_its_receipt_with_where_it_went() {
        let delivery = Arc::new(Delivery::new(written(), 10));
        delivery.complete(Err(crate::error::Redactor::new(Arc::default()).error(
            &rdkafka::error::KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge),
        )));
        match Receipt::shared(delivery, 0).await {
            Err(Error::RecordTooLarge {
                topic,
                partition,
                size,
                limit,
            }) => assert_eq!((&*topic, partition, size, limit), ("out", 2, 10, None)),
            other => panic!("expected a record too large, got {other:?}"),
        }
    }

    #[test]
    fn many_receipts_each_get_their_own_outcome_across_threads() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let deliveries: Vec<Arc<Delivery>> = (0..2_000)
            .map(|_| Arc::new(Delivery::new(written(), 10)))
            .collect();
        let reporter = std::thread::spawn({
            let deliveries = deliveries.clone();
            move || {
                for (offset, delivery) in deliveries.iter().enumerate() {
                    delivery.complete(Ok(offset as u64));
                }
            }
        });
        let offsets = runtime.block_on(async {
            let mut offsets = Vec::new();
            for delivery in deliveries {
                offsets.push(Receipt::shared(delivery, 0).await.unwrap());
            }
            offsets
        });
        reporter.join().unwrap();
        assert_eq!(offsets, (0..2_000).collect::<Vec<u64>>());
    }
}
