//! [`Delivery`]: where librdkafka's delivery report of one record meets the receipt that
//! waits for it.
//!
//! One allocation per record serves as librdkafka's opaque (an `Arc`, which rdkafka passes
//! without boxing it again) and as the receipt itself (a [`ReceiptSource`]), where a
//! oneshot channel needed the channel, a boxed sender as the opaque and a boxed future for
//! the receipt.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use rdkafka::types::RDKafkaErrorCode;
use runnel_backend::{Error, ReceiptSource};

use crate::error::LibrdkafkaError;

/// A record's delivery outcome: its offset, or why the broker did not take it.
pub(crate) type Outcome = std::result::Result<u64, LibrdkafkaError>;

/// The delivery of one record: completed once by the delivery report, polled by its
/// receipt.
#[derive(Debug)]
pub(crate) struct Delivery {
    state: Mutex<State>,
    /// Where the record went, and its size, for the receipt's errors.
    topic: Arc<str>,
    partition: u32,
    size: usize,
}

#[derive(Debug, Default)]
struct State {
    outcome: Option<Outcome>,
    /// The receipt's task, waiting for the outcome.
    waiter: Option<Waker>,
}

impl Delivery {
    /// The delivery of a record of `size` bytes (as librdkafka counts them) to `partition`
    /// of `topic`.
    pub(crate) fn new(topic: Arc<str>, partition: u32, size: usize) -> Self {
        Delivery {
            state: Mutex::default(),
            topic,
            partition,
            size,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the outcome and wakes the receipt.
    pub(crate) fn complete(&self, outcome: Outcome) {
        let mut state = self.lock();
        state.outcome = Some(outcome);
        let waiter = state.waiter.take();
        drop(state);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

/// librdkafka reports every record it took (purged ones too, when the producer is dropped),
/// so a waiting receipt is woken by [`Delivery::complete`]. One whose opaque librdkafka
/// leaks (a producer destroyed before its flush ends) waits forever, as a oneshot receiver
/// whose sender leaked did.
impl ReceiptSource for Delivery {
    fn poll_receipt(&self, _index: u32, cx: &mut Context<'_>) -> Poll<runnel_backend::Result<u64>> {
        let mut state = self.lock();
        let Some(outcome) = state.outcome.clone() else {
            match &mut state.waiter {
                Some(waiter) if waiter.will_wake(cx.waker()) => {}
                waiter => *waiter = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        };
        drop(state);
        Poll::Ready(match outcome {
            Ok(offset) => Ok(offset),
            // The broker refused it: the topic's `max.message.bytes` is below the producer's
            // `message.max.bytes`.
            Err(cause) if cause.code() == Some(RDKafkaErrorCode::MessageSizeTooLarge) => {
                Err(Error::RecordTooLarge {
                    topic: self.topic.to_string(),
                    partition: self.partition,
                    size: self.size,
                    limit: None,
                })
            }
            Err(cause) => Err(Error::Produce {
                topic: self.topic.to_string(),
                partition: self.partition,
                source: Box::new(cause),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use runnel_backend::Receipt;

    use super::*;

    #[tokio::test]
    async fn a_receipt_gets_the_reported_outcome() {
        let delivery = Arc::new(Delivery::new(Arc::from("out"), 2, 10));
        let waiting = tokio::spawn(Receipt::shared(delivery.clone(), 0));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the receipt waits for the report");
        delivery.complete(Ok(41));
        assert_eq!(waiting.await.unwrap().unwrap(), 41);
    }
}
