//! The acknowledgement queue: events from every handle of one instance to its committer, in
//! program order, with the committer woken per batch of events rather than per event.
//!
//! An unbounded channel wakes its receiver on every send, and at a million records a second
//! the committer's wake-ups (and the context switches behind them) cost more than what it
//! does. Here a sender wakes the committer only when
//!
//! - [`WAKE_AFTER`] events are queued,
//! - an event is [urgent](Wake::Now) (a checkpoint, the finish),
//! - the sender is about to wait for something the committer may be holding up
//!   ([`EventSender::flush`]: before waiting for a permit, before polling the log), or
//! - the last sender is gone,
//!
//! and the committer also takes whatever is queued when its own timer fires (every commit
//! interval at least), so an event never waits longer than that. Waking later never
//! reorders events: they are taken in the order they were pushed, under one lock.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// Queued events that wake a waiting committer without a flush.
pub(crate) const WAKE_AFTER: usize = 256;

/// Whether an event wakes the committer at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Once [`WAKE_AFTER`] events are queued, or at the next flush.
    Batched,
    /// Now.
    Now,
}

/// What the senders and the receiver share.
#[derive(Debug)]
struct Shared<E> {
    state: Mutex<State<E>>,
    woken: Notify,
}

#[derive(Debug)]
struct State<E> {
    events: Vec<E>,
    /// Live [`EventSender`] clones.
    senders: usize,
    /// The receiver is gone: new events are dropped.
    closed: bool,
    /// The receiver waits for a wake-up that has not been sent yet.
    waiting: bool,
    /// Something since the last take calls for one: a full batch, an urgent event, a
    /// flush. Kept when the receiver is busy, so it takes the events as soon as it asks.
    due: bool,
}

impl<E> Shared<E> {
    fn lock(&self) -> MutexGuard<'_, State<E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes a waiting receiver if a wake-up is due; unlocks first.
    fn wake_if_due(&self, mut state: MutexGuard<'_, State<E>>) {
        let wake = state.due && state.waiting;
        if wake {
            state.waiting = false;
        }
        drop(state);
        if wake {
            self.woken.notify_one();
        }
    }
}

/// A new queue's two ends.
pub(crate) fn queue<E>() -> (EventSender<E>, EventReceiver<E>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            events: Vec::new(),
            senders: 1,
            closed: false,
            waiting: false,
            due: false,
        }),
        woken: Notify::new(),
    });
    (
        EventSender {
            shared: shared.clone(),
        },
        EventReceiver { shared },
    )
}

/// Pushes events; cloned into every inlet, outlet and message of an instance.
#[derive(Debug)]
pub(crate) struct EventSender<E> {
    shared: Arc<Shared<E>>,
}

impl<E> EventSender<E> {
    /// Queues `event` after every event pushed before (by any clone). Once the receiver is
    /// gone the event is dropped.
    pub(crate) fn push(&self, event: E, wake: Wake) {
        let mut state = self.shared.lock();
        if state.closed {
            drop(state);
            drop(event);
            return;
        }
        state.events.push(event);
        if wake == Wake::Now || state.events.len() >= WAKE_AFTER {
            state.due = true;
        }
        self.shared.wake_if_due(state);
    }

    /// Wakes the receiver if events are queued: the caller is about to wait for something
    /// (a permit, the log) that taking them may be what releases.
    pub(crate) fn flush(&self) {
        let mut state = self.shared.lock();
        if !state.events.is_empty() {
            state.due = true;
        }
        self.shared.wake_if_due(state);
    }
}

impl<E> Clone for EventSender<E> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        EventSender {
            shared: self.shared.clone(),
        }
    }
}

impl<E> Drop for EventSender<E> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.senders -= 1;
        if state.senders == 0 {
            state.due = true;
        }
        self.shared.wake_if_due(state);
    }
}

/// Takes events, in the order they were pushed; the committer's end.
#[derive(Debug)]
pub struct EventReceiver<E> {
    shared: Arc<Shared<E>>,
}

impl<E> EventReceiver<E> {
    /// Appends every queued event to `into`, without waiting; returns how many.
    pub fn take(&mut self, into: &mut Vec<E>) -> usize {
        let mut state = self.shared.lock();
        state.due = false;
        let taken = state.events.len();
        if into.is_empty() {
            // Swapping keeps both buffers' allocations in use: no copy, no reallocation.
            std::mem::swap(&mut state.events, into);
        } else {
            into.append(&mut state.events);
        }
        taken
    }

    /// Waits until a sender wakes the receiver (see the module documentation), then appends
    /// every queued event to `into`. Returns `false` once every sender is gone and nothing
    /// is queued. Cancel safe: events stay queued until taken.
    pub async fn recv_many(&mut self, into: &mut Vec<E>) -> bool {
        loop {
            {
                let mut state = self.shared.lock();
                let due = state.due || state.events.len() >= WAKE_AFTER;
                if (due || state.senders == 0) && !state.events.is_empty() {
                    drop(state);
                    self.take(into);
                    return true;
                }
                if state.senders == 0 {
                    return false;
                }
                state.due = false;
                state.waiting = true;
            }
            // A wake-up sent between the unlock and this wait is kept by `Notify` as a permit.
            self.shared.woken.notified().await;
        }
    }
}

impl<E> Drop for EventReceiver<E> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        let events = std::mem::take(&mut state.events);
        drop(state);
        // Dropped outside the lock: events hold permits, whose release wakes their waiters.
        drop(events);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn batched_events_wait_for_a_full_batch_or_a_flush() {
        let (sender, mut receiver) = queue();
        let mut taken = Vec::new();
        sender.push(1, Wake::Batched);
        let waiting =
            tokio::time::timeout(Duration::from_millis(50), receiver.recv_many(&mut taken)).await;
        assert!(
            waiting.is_err(),
            "one batched event does not wake the receiver"
        );
        sender.flush();
        assert!(receiver.recv_many(&mut taken).await);
        assert_eq!(taken, [1]);
    }

    #[tokio::test]
    async fn a_full_batch_or_an_urgent_event_wakes_the_receiver_in_order() {
        let (sender, mut receiver) = queue();
        let waiter = tokio::spawn(async move {
            let mut taken = Vec::new();
            receiver.recv_many(&mut taken).await;
            (receiver, taken)
        });
        tokio::task::yield_now().await;
        for event in 0..WAKE_AFTER {
            sender.push(event, Wake::Batched);
        }
        let (mut receiver, taken) = waiter.await.unwrap();
        assert_eq!(taken, (0..WAKE_AFTER).collect::<Vec<_>>());

        let waiter = tokio::spawn(async move {
            let mut taken = Vec::new();
            receiver.recv_many(&mut taken).await;
            (receiver, taken)
        });
        tokio::task::yield_now().await;
        sender.push(7, Wake::Batched);
        sender.push(8, Wake::Now);
        let (_, taken) = waiter.await.unwrap();
        assert_eq!(taken, [7, 8]);
    }

    #[tokio::test]
    async fn the_receiver_takes_queued_events_without_a_wake_up_and_sees_the_senders_leave() {
        let (sender, mut receiver) = queue();
        let clone = sender.clone();
        sender.push(1, Wake::Batched);
        clone.push(2, Wake::Batched);
        let mut taken = Vec::new();
        assert_eq!(receiver.take(&mut taken), 2);
        assert_eq!(taken, [1, 2]);
        drop(sender);
        clone.push(3, Wake::Batched);
        drop(clone);
        let mut taken = Vec::new();
        assert!(
            receiver.recv_many(&mut taken).await,
            "queued events come first"
        );
        assert_eq!(taken, [3]);
        assert!(!receiver.recv_many(&mut taken).await);
    }

    #[test]
    fn events_pushed_after_the_receiver_is_gone_are_dropped() {
        let (sender, receiver) = queue();
        let event = Arc::new(());
        sender.push(event.clone(), Wake::Batched);
        drop(receiver);
        sender.push(event.clone(), Wake::Batched);
        assert_eq!(Arc::strong_count(&event), 1);
    }
}
