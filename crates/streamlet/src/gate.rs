//! [`Gate`]: stops inlets from handing out new messages while an exactly-once commit waits
//! for the messages already handed out to be committed.
//!
//! A transaction must hold exactly the outputs of the inputs whose offsets it commits. The
//! committer closes the gate, waits until no message is handed out and uncommitted, commits
//! the transaction, and opens the gate again. An inlet takes a message permit *before*
//! looking at the gate, and both sides look under the gate's lock, so either the committer
//! sees the permit taken (and waits for that message's commit) or the inlet sees the gate
//! closed (and gives the permit back).

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

/// Open or closed, with a way to wait for it to open.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    closed: Mutex<bool>,
    opened: Notify,
}

impl Gate {
    /// Whether new messages may be handed out now.
    pub(crate) fn is_open(&self) -> bool {
        !*self.closed.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Stops new messages from being handed out.
    pub(crate) fn close(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// Lets messages be handed out again, waking every waiting inlet.
    pub(crate) fn open(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = false;
        self.opened.notify_waiters();
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
}
