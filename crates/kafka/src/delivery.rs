//! [`Delivery`]: where librdkafka's delivery report of one record meets the receipt that
//! waits for it.
//!
//! One allocation per record serves as both librdkafka's opaque (an `Arc`, which rdkafka
//! passes without boxing it again) and the receipt's state, where a oneshot channel needed
//! a boxed sender as the opaque besides the channel itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::error::LibrdkafkaError;

/// A record's delivery outcome: its offset, or why the broker did not take it.
pub(crate) type Outcome = std::result::Result<u64, LibrdkafkaError>;

/// The delivery of one record: completed once by the delivery report, awaited by its
/// receipt.
#[derive(Debug, Default)]
pub(crate) struct Delivery {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    outcome: Option<Outcome>,
    /// The receipt waiting for the outcome.
    waiter: Option<Waker>,
    /// The report was handled (the outcome may have been taken since).
    reported: bool,
}

impl Delivery {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the outcome and wakes the receipt.
    pub(crate) fn complete(&self, outcome: Outcome) {
        let mut state = self.lock();
        state.outcome = Some(outcome);
        state.reported = true;
        let waiter = state.waiter.take();
        drop(state);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// Waits for the outcome; `None` when the report will never come.
    pub(crate) fn wait(self: Arc<Self>) -> Waiting {
        Waiting { delivery: self }
    }
}

/// The future of [`Delivery::wait`].
#[derive(Debug)]
pub(crate) struct Waiting {
    delivery: Arc<Delivery>,
}

impl Future for Waiting {
    type Output = Option<Outcome>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.delivery.lock();
        if let Some(outcome) = state.outcome.take() {
            return Poll::Ready(Some(outcome));
        }
        if state.reported {
            return Poll::Ready(None); // taken by an earlier poll: never polled again in practice
        }
        // The only other holder is librdkafka's opaque: if it is gone, so is the report
        // (a record librdkafka refused at once). librdkafka reports every record it took,
        // purged ones too when the producer is dropped, so a waiting receipt is woken by
        // `complete`; one whose opaque librdkafka leaks (a producer destroyed before its
        // flush ends) waits forever, as a oneshot receiver whose sender leaked did.
        if Arc::strong_count(&self.delivery) == 1 {
            return Poll::Ready(None);
        }
        match &mut state.waiter {
            Some(waiter) if waiter.will_wake(cx.waker()) => {}
            waiter => *waiter = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_receipt_gets_the_reported_outcome() {
        let delivery = Arc::new(Delivery::default());
        let waiting = tokio::spawn(delivery.clone().wait());
        tokio::task::yield_now().await;
        delivery.complete(Ok(41));
        assert_eq!(
            waiting.await.unwrap().map(|outcome| outcome.ok()),
            Some(Some(41))
        );
    }

    #[tokio::test]
    async fn an_unreported_delivery_ends_its_receipt_when_the_report_is_dropped() {
        let delivery = Arc::new(Delivery::default());
        let waiting = delivery.clone().wait();
        drop(delivery);
        assert!(waiting.await.is_none());
    }
}
