//! At-least-once bookkeeping, the streamlet's side: every send and every commit of one
//! streamlet instance goes, in program order, into one queue (see [`queue`] for when the
//! committer is woken: per batch of events, not per event), which the host's committer
//! (`runnel-host`) drains. An input offset is committed only after every output sent
//! before its commit is acknowledged by the log.
//!
//! Two semaphores bound the queue: one counts unacknowledged sends, the other messages
//! handed to the streamlet and not yet committed, so a slow log slows the streamlet instead
//! of growing memory; the committer gives their permits back. In exactly-once mode a
//! [`Gate`] stops inlets from handing out messages while a transaction commits, and a
//! second one holds sends back from a checkpoint's save until its transaction is committed.

use std::sync::Arc;
use std::time::Duration;

use runnel_backend::Receipt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::gate::{Gate, HandedOut};
use runnel_state::checkpoint::{ChangelogRange, InletOffset, SavedState};

pub(crate) mod queue;

pub use queue::EventReceiver;
use queue::{EventSender, Wake};

/// One entry of the acknowledgement queue, for the host's committer to take in order.
#[derive(Debug)]
pub enum Event {
    /// A record was handed to the producer.
    Sent {
        /// Completes when the log has the record.
        receipt: Receipt,
        /// Counts the send as unacknowledged until the committer drops it.
        permit: OwnedSemaphorePermit,
    },
    /// The streamlet is done with an input record (and everything before it on its
    /// partition).
    Commit {
        /// The inlet, by its position among the shape's inlets.
        inlet: usize,
        /// The input partition.
        partition: u32,
        /// The record's offset.
        offset: u64,
        /// How long the streamlet had the message, for the processing-latency histogram.
        processing: Option<Duration>,
        /// Counts the message as uncommitted until the committer drops it.
        permit: OwnedSemaphorePermit,
    },
    /// A checkpointed streamlet saved its state, reflecting every commit before.
    Checkpoint {
        /// What the streamlet saved.
        state: SavedState,
        /// Exactly-once: messages the streamlet held, uncommitted, when it saved.
        held: usize,
    },
    /// A streamlet checkpointed by partition restored `partition`: what it committed there
    /// before is forgotten, and its inlets resume at `offsets`.
    Restored {
        /// The input partition.
        partition: u32,
        /// Where each inlet resumes on the partition.
        offsets: Vec<InletOffset>,
        /// Keyed state: the changelog ranges of the partition's last checkpoint.
        changelog: Vec<ChangelogRange>,
    },
    /// The streamlet returned: commit what is staged (or, in exactly-once mode after a
    /// failure, abort) and stop.
    Finish {
        /// Whether the streamlet succeeded.
        succeeded: bool,
    },
}

/// The sending side of the queue, cloned into every inlet, outlet and message.
#[derive(Clone, Debug)]
pub struct Acknowledgements {
    events: EventSender<Event>,
    sends: Arc<Semaphore>,
    messages: Arc<Semaphore>,
    /// Closed while an exactly-once commit waits for handed-out messages.
    gate: Option<Arc<Gate>>,
    /// Exactly-once: closed from a checkpoint's save until its transaction is committed.
    sending: Option<Arc<Gate>>,
}

impl Acknowledgements {
    /// A queue letting `max_unacknowledged_sends` sends wait for acknowledgement and
    /// `max_uncommitted_messages` messages be handed out uncommitted (each at least 1),
    /// with the receiving side for the committer. With a `gate` (exactly-once), inlets hand
    /// out no message while it is closed, and sends wait from a checkpoint's save until
    /// the committer opens [`sending`](Self::sending) again.
    pub fn new(
        max_unacknowledged_sends: usize,
        max_uncommitted_messages: usize,
        gate: Option<Arc<Gate>>,
    ) -> (Self, EventReceiver<Event>) {
        let (events, receiver) = queue::queue();
        let acknowledgements = Acknowledgements {
            events,
            sends: Arc::new(Semaphore::new(max_unacknowledged_sends.max(1))),
            messages: Arc::new(Semaphore::new(max_uncommitted_messages.max(1))),
            sending: gate.as_ref().map(|_| Arc::new(Gate::default())),
            gate,
        };
        (acknowledgements, receiver)
    }

    /// The semaphore counting handed-out, uncommitted messages.
    pub fn messages(&self) -> Arc<Semaphore> {
        self.messages.clone()
    }

    /// The gate that holds sends back while an exactly-once checkpoint commits.
    pub fn sending(&self) -> Option<Arc<Gate>> {
        self.sending.clone()
    }

    /// Waits for room for one more unacknowledged send (and, in exactly-once mode, until no
    /// checkpoint is being committed).
    pub(crate) async fn send_permit(&self) -> OwnedSemaphorePermit {
        if let Some(sending) = &self.sending
            && !sending.is_open()
        {
            // The checkpoint whose transaction this waits for is among the queued events.
            self.events.flush();
            sending.wait_open().await;
        }
        permit(&self.sends, &self.events).await
    }

    /// Waits for room for one more uncommitted message (and, in exactly-once mode, for the
    /// gate to be open).
    pub(crate) async fn message_permit(&self) -> OwnedSemaphorePermit {
        loop {
            let permit = permit(&self.messages, &self.events).await;
            // The permit is taken before the gate is looked at; see `gate.rs`.
            match &self.gate {
                Some(gate) if !gate.is_open() => {
                    drop(permit);
                    // The commit the gate waits for may be among the queued events.
                    self.events.flush();
                    gate.wait_open().await;
                }
                _ => return permit,
            }
        }
    }

    /// A permit for one more uncommitted message if one is free and (exactly-once) the gate
    /// is open, without waiting; `None` otherwise.
    pub(crate) fn try_message_permit(&self) -> Option<OwnedSemaphorePermit> {
        // The permit is taken before the gate is looked at, as in `message_permit`.
        let permit = self.messages.clone().try_acquire_owned().ok()?;
        match &self.gate {
            Some(gate) if !gate.is_open() => None,
            _ => Some(permit),
        }
    }

    /// Wakes the committer if events are queued: the caller is about to wait (for the log),
    /// and the events should not wait with it.
    pub(crate) fn flush(&self) {
        self.events.flush();
    }

    pub(crate) fn sent(&self, receipt: Receipt, permit: OwnedSemaphorePermit) {
        // A closed queue means the instance is finishing; the record is still appended and
        // simply not waited for, which can only delay commits, never lose data.
        self.events
            .push(Event::Sent { receipt, permit }, Wake::Batched);
    }

    pub(crate) fn commit(
        &self,
        inlet: usize,
        partition: u32,
        offset: u64,
        processing: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) {
        let commit = Event::Commit {
            inlet,
            partition,
            offset,
            processing,
            permit,
        };
        self.events.push(commit, Wake::Batched);
    }

    /// Counts a message as held by the streamlet until the returned guard is dropped
    /// (exactly-once only; otherwise it counts nothing).
    pub(crate) fn hand_out(&self) -> HandedOut {
        HandedOut::new(self.gate.as_ref())
    }

    /// Whether the instance is exactly-once.
    pub(crate) fn is_exactly_once(&self) -> bool {
        self.sending.is_some()
    }

    pub(crate) fn restored(
        &self,
        partition: u32,
        offsets: Vec<InletOffset>,
        changelog: Vec<ChangelogRange>,
    ) {
        let restored = Event::Restored {
            partition,
            offsets,
            changelog,
        };
        self.events.push(restored, Wake::Batched);
    }

    pub(crate) fn checkpoint(&self, state: SavedState) {
        let held = self.gate.as_ref().map_or(0, |gate| gate.held());
        if let Some(sending) = &self.sending {
            // Opened by the committer once the checkpoint's transaction is committed.
            sending.close();
        }
        self.events
            .push(Event::Checkpoint { state, held }, Wake::Now);
    }

    /// Tells the committer the streamlet returned (successfully or not): it commits what is
    /// staged, or aborts, and stops.
    pub fn finish(&self, succeeded: bool) {
        self.events.push(Event::Finish { succeeded }, Wake::Now);
    }
}

/// A permit of `semaphore`: taken at once when one is free; otherwise the committer is woken
/// first (the permits it releases may be held by queued events) and the permit waited for.
async fn permit(semaphore: &Arc<Semaphore>, events: &EventSender<Event>) -> OwnedSemaphorePermit {
    if let Ok(permit) = semaphore.clone().try_acquire_owned() {
        return permit;
    }
    events.flush();
    // Boxed: the wait is rare, and every sending future would otherwise carry its state.
    Box::pin(semaphore.clone().acquire_owned())
        .await
        .expect("the acknowledgement semaphores are never closed")
}
