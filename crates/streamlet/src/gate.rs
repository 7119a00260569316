//! [`Gate`]: stops inlets from handing out new messages while an exactly-once commit waits
//! for the messages already handed out to be committed.
//!
//! A transaction must hold exactly the outputs of the inputs whose offsets it commits. The
//! committer closes the gate, waits until no message is handed out and uncommitted, commits
//! the transaction, and opens the gate again. An inlet takes a message permit *before*
//! looking at the gate, and both sides look under the gate's lock, so either the committer
//! sees the permit taken (and waits for that message's commit) or the inlet sees the gate
//! closed (and gives the permit back).
//!
//! A second gate holds back sends while an exactly-once checkpoint is being committed: the
//! transaction takes every record sent until it commits, so a record sent after the
//! streamlet saved its state must wait for the next one.
//!
//! The gate also counts the messages the streamlet holds, handed out and not yet committed
//! or rejected ([`HandedOut`]): an exactly-once checkpoint must reflect all of them, since a
//! transaction committed with it would otherwise hold outputs of inputs it does not commit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// Open or closed, with a way to wait for it to open.
#[derive(Debug, Default)]
pub struct Gate {
    /// How many closes are not yet matched by an open: the gate is open at zero.
    closed: Mutex<usize>,
    opened: Notify,
    /// Messages handed to the streamlet and not yet committed or rejected by it.
    held: AtomicUsize,
}

impl Gate {
    /// Whether new messages may be handed out now.
    pub fn is_open(&self) -> bool {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) == 0
    }

    /// Waits until the gate is open.
    pub(crate) async fn wait_open(&self) {
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            if self.is_open() {
                return;
            }
            opened.await;
        }
    }

    /// Closes the gate until a matching [`open`](Self::open): with several closes, it opens
    /// once each was matched.
    pub fn close(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }

    /// Matches one [`close`](Self::close); the last one opens the gate and wakes every
    /// waiter.
    pub fn open(&self) {
        let mut closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
        *closed = closed.saturating_sub(1);
        if *closed == 0 {
            self.opened.notify_waiters();
        }
    }

    /// How many messages the streamlet holds: handed out, not committed or rejected yet.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// One message held by the streamlet, counted by its gate until this is dropped (when the
/// message is committed, rejected or dropped). Without a gate (not exactly-once) it counts
/// nothing and costs nothing.
#[derive(Debug)]
pub(crate) struct HandedOut(Option<Arc<Gate>>);

impl HandedOut {
    /// Counts one more message held, when there is a gate.
    pub(crate) fn new(gate: Option<&Arc<Gate>>) -> Self {
        if let Some(gate) = gate {
            gate.held.fetch_add(1, Ordering::AcqRel);
        }
        HandedOut(gate.cloned())
    }
}

impl Drop for HandedOut {
    fn drop(&mut self) {
        if let Some(gate) = &self.0 {
            gate.held.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn waiters_pass_once_the_gate_opens() {
        let gate = Arc::new(Gate::default());
        gate.close();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait_open().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        gate.open();
        waiter.await.unwrap();
        assert!(gate.is_open());
    }

    #[test]
    fn a_gate_closed_twice_opens_on_the_second_open() {
        let gate = Gate::default();
        gate.close();
        gate.close();
        gate.open();
        assert!(!gate.is_open());
        gate.open();
        assert!(gate.is_open());
    }

    #[test]
    fn held_messages_are_counted_until_dropped() {
        let gate = Arc::new(Gate::default());
        let first = HandedOut::new(Some(&gate));
        let second = HandedOut::new(Some(&gate));
        assert_eq!(gate.held(), 2);
        drop(first);
        assert_eq!(gate.held(), 1);
        drop(second);
        assert_eq!(gate.held(), 0);
        drop(HandedOut::new(None));
    }
}
