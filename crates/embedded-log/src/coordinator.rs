//! The transaction coordinator of the embedded log: gives transactional ids their producer
//! ids and epochs, fences zombies, and drives each transaction through the phases recovery
//! must know about, keeping them in `transactions.state` (see `transaction_state.rs`).
//!
//! A transaction, as Kafka runs one:
//!
//! 1. **Begin.** A new producer with a transactional id bumps the id's epoch. If the id's
//!    previous producer left a transaction unfinished, it is finished first: rolled forward
//!    if it had decided to commit, aborted otherwise (its markers carry the new epoch, so
//!    the old producer's records that arrive later are refused by the partitions).
//! 2. **Add a partition.** Before a transaction's first record in a partition, the
//!    partition is recorded durably with its end offset (a bound below every record the
//!    transaction writes there), and read-committed readers of the partition stop there.
//! 3. **Decide.** `commit` first waits until the transaction's records are durable, then
//!    records the decision and the consumer offsets durably: that write is the commit point.
//!    `abort` records its decision the same way.
//! 4. **Finish.** A marker goes to each partition the transaction wrote to; once every
//!    marker is durable, the offsets are stored (on commit), the aborted ranges are recorded
//!    (on abort), readers are released and the phase returns to empty.
//!
//! A crash anywhere leaves the state file at a phase recovery completes when the log is
//! opened again: a decided transaction is finished as decided, an undecided one aborted.
//! The directory lock guarantees that no producer of the previous process is alive then.
//!
//! A transaction still undecided when its producer's `transaction.timeout.ms` (60 s by
//! default, as in Kafka) has passed since its first record is aborted by the log, with the
//! epoch bumped so that the stalled producer is fenced: see [`Deadlines`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::batch::{Control, TransactionFields};
use crate::error::{Error, Result};
use crate::partition::{Partition, lock};
use crate::transaction_index::AbortedRange;
use crate::transaction_state::{GroupOffset, PartitionKey, Phase, TransactionState};

/// The transaction coordinator of one open log.
#[derive(Debug)]
pub(crate) struct Coordinator {
    directory: PathBuf,
    state: Mutex<TransactionState>,
    /// Per transactional id, held while a transaction of the id ends or a producer with it
    /// begins, so those never overlap.
    ending: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// When each open transaction times out.
    deadlines: Arc<Deadlines>,
}

/// When each open transaction times out: a transactional id, the producer fields of the
/// transaction, and the instant its producer's timeout runs out. Shared with the thread
/// that aborts expired transactions, which looks here without holding the log open.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    open: Mutex<HashMap<String, (TransactionFields, Instant, Duration)>>,
}

impl Deadlines {
    /// The transactions whose deadline passed by `now`.
    pub(crate) fn expired(&self, now: Instant) -> Vec<(String, TransactionFields)> {
        lock(&self.open)
            .iter()
            .filter(|(_, (_, deadline, _))| *deadline <= now)
            .map(|(id, (fields, _, _))| (id.clone(), *fields))
            .collect()
    }

    fn start(&self, id: &str, fields: TransactionFields, timeout: Duration) {
        lock(&self.open).insert(id.to_owned(), (fields, Instant::now() + timeout, timeout));
    }

    /// Gives a decided transaction, as `fields`, as long again to be finished: if its
    /// producer stops before it wrote the markers (a killed process), the log finishes it.
    fn decided(&self, id: &str, fields: TransactionFields) {
        if let Some(open) = lock(&self.open).get_mut(id) {
            *open = (fields, Instant::now() + open.2, open.2);
        }
    }

    fn end(&self, id: &str) {
        lock(&self.open).remove(id);
    }
}

/// Why a coordinator step failed.
#[derive(Debug)]
pub(crate) enum StepError {
    /// The producer's epoch is not the id's current one.
    Fenced,
    /// Writing the state or a marker failed.
    Failed(Error),
}

impl From<Error> for StepError {
    fn from(error: Error) -> Self {
        match error {
            Error::ProducerFenced => StepError::Fenced,
            other => StepError::Failed(other),
        }
    }
}

/// A transaction whose outcome is decided (or must be: an abort) and whose markers may
/// still have to be written.
#[derive(Clone, Debug)]
pub(crate) struct Decided {
    /// The markers' producer fields; `control` says commit or abort.
    pub(crate) fields: TransactionFields,
    pub(crate) partitions: BTreeMap<PartitionKey, u64>,
    pub(crate) offsets: Vec<GroupOffset>,
}

impl Coordinator {
    /// Loads the coordinator's state from the log directory.
    pub(crate) fn open(directory: &Path) -> Result<Coordinator> {
        Ok(Coordinator {
            directory: directory.to_owned(),
            state: Mutex::new(TransactionState::load(directory)?),
            ending: Mutex::default(),
            deadlines: Arc::default(),
        })
    }

    /// When open transactions time out.
    pub(crate) fn deadlines(&self) -> Arc<Deadlines> {
        self.deadlines.clone()
    }

    /// Aborts `id`'s transaction of `fields` if it is still undecided and its deadline
    /// passed by `now`: bumps the epoch, fencing the producer, and returns what
    /// [`finish`](crate::transactional_producer::finish) must write. Durable. Hold the id's
    /// [ending lock](Self::ending_lock).
    pub(crate) fn expire(
        &self,
        id: &str,
        fields: TransactionFields,
        now: Instant,
    ) -> Result<Option<Decided>> {
        let mut state = lock(&self.state);
        // The deadline is checked again under the state lock: the transaction that expired
        // may have ended since, and the next one of the same producer begun.
        let expired = lock(&self.deadlines.open)
            .get(id)
            .is_some_and(|(open, deadline, _)| *open == fields && *deadline <= now);
        if !expired {
            return Ok(None);
        }
        self.deadlines.end(id);
        let Ok(entry) = current_mut(&mut state, id, fields) else {
            return Ok(None);
        };
        match entry.phase {
            Phase::Empty => return Ok(None),
            // Decided, but its producer stopped before finishing: the decision stands.
            Phase::Committing | Phase::Aborting => return Ok(Some(decided(entry))),
            Phase::Ongoing => {}
        }
        entry.epoch += 1;
        entry.phase = Phase::Aborting;
        let decided = decided(entry);
        state.store(&self.directory)?;
        Ok(Some(decided))
    }

    /// The lock held while a transaction of `id` ends or a producer with `id` begins.
    pub(crate) fn ending_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.ending).entry(id.to_owned()).or_default().clone()
    }

    /// The aborted ranges recorded for every partition, to seed the partitions' indexes.
    pub(crate) fn aborted_ranges(&self) -> Vec<(PartitionKey, AbortedRange)> {
        lock(&self.state).aborted.clone()
    }

    /// Every transaction a previous process left unfinished, decided as recovery finishes
    /// it (commit if it had decided to, abort otherwise), with the epoch bumped so that the
    /// markers outrank anything of the old producer. Durable.
    pub(crate) fn recover(&self) -> Result<Vec<(String, Decided)>> {
        let mut state = lock(&self.state);
        let mut unfinished = Vec::new();
        for (id, entry) in state.producers.iter_mut() {
            if entry.phase == Phase::Empty {
                continue;
            }
            entry.epoch += 1;
            if entry.phase == Phase::Ongoing {
                entry.phase = Phase::Aborting;
            }
            unfinished.push((id.clone(), decided(entry)));
        }
        if !unfinished.is_empty() {
            state.store(&self.directory)?;
        }
        Ok(unfinished)
    }

    /// Registers a new producer for `id`: bumps the epoch (fencing the previous producer)
    /// and returns the producer fields, with the previous producer's transaction if it must
    /// be finished first. Durable. Hold the id's [ending lock](Self::ending_lock).
    pub(crate) fn begin(&self, id: &str) -> Result<(TransactionFields, Option<Decided>)> {
        let mut state = lock(&self.state);
        let entry = state.entry(id);
        entry.epoch += 1;
        let unfinished = match entry.phase {
            Phase::Empty => None,
            Phase::Committing | Phase::Aborting => Some(decided(entry)),
            Phase::Ongoing => {
                entry.phase = Phase::Aborting;
                Some(decided(entry))
            }
        };
        match &unfinished {
            // The new producer finishes it; should it stop first (a killed process), the
            // log does once the deadline passes.
            Some(unfinished) => self.deadlines.decided(id, unfinished.fields),
            None => self.deadlines.end(id),
        }
        let fields = TransactionFields {
            producer_id: entry.producer_id,
            epoch: entry.epoch,
            control: Control::Data,
        };
        state.store(&self.directory)?;
        Ok((fields, unfinished))
    }

    /// Adds `partition` to `id`'s transaction before its first record there, durably, and
    /// holds read-committed readers of the partition at its current end. The transaction's
    /// `timeout` runs from its first partition.
    pub(crate) fn add_partition(
        &self,
        id: &str,
        fields: TransactionFields,
        partition: &Partition,
        timeout: Duration,
    ) -> Result<(), StepError> {
        let mut state = lock(&self.state);
        let key = (partition.topic.to_string(), partition.number);
        let entry = current_mut(&mut state, id, fields)?;
        if entry.partitions.contains_key(&key) {
            return Ok(());
        }
        if entry.partitions.is_empty() {
            self.deadlines.start(id, fields, timeout);
        }
        let first = partition.open_transaction(fields.producer_id);
        entry.partitions.insert(key, first);
        entry.phase = Phase::Ongoing;
        state.store(&self.directory)?;
        Ok(())
    }

    /// Decides `id`'s transaction: to commit with `offsets` (the commit point), or to
    /// abort. Durable. Returns what [`finish`](crate::transactional_producer) must write.
    /// A transaction decided already keeps its decision (an abort of one decided to commit,
    /// whose finishing was interrupted, finishes the commit): some of its partitions may
    /// have their markers already.
    pub(crate) fn decide(
        &self,
        id: &str,
        fields: TransactionFields,
        control: Control,
        offsets: Vec<GroupOffset>,
    ) -> Result<Decided, StepError> {
        let mut state = lock(&self.state);
        let entry = current_mut(&mut state, id, fields)?;
        if matches!(entry.phase, Phase::Committing | Phase::Aborting) {
            return Ok(decided(entry));
        }
        entry.phase = match control {
            Control::Commit => Phase::Committing,
            Control::Abort | Control::Data => Phase::Aborting,
        };
        entry.offsets = if control == Control::Commit {
            offsets
        } else {
            Vec::new()
        };
        let decided = decided(entry);
        self.deadlines.decided(id, decided.fields);
        if !decided.partitions.is_empty() || !decided.offsets.is_empty() {
            state.store(&self.directory)?;
        }
        Ok(decided)
    }

    /// Ends `id`'s decided transaction once its markers and offsets are durable: records
    /// the aborted ranges (dropping those retention made moot, per `start_of`) and empties
    /// the phase. Durable. A completion by a producer fenced since (`fields` of an older
    /// epoch, finishing late on a blocking thread) leaves the newer producer's entry alone.
    pub(crate) fn complete(
        &self,
        id: &str,
        fields: TransactionFields,
        aborted: Vec<(PartitionKey, AbortedRange)>,
        start_of: impl Fn(&PartitionKey) -> Option<u64>,
    ) -> Result<()> {
        let mut state = lock(&self.state);
        let before = state.aborted.len() + aborted.len();
        state.aborted.extend(aborted);
        state
            .aborted
            .retain(|(key, range)| start_of(key).is_some_and(|start| range.marker >= start));
        let mut changed = state.aborted.len() != before;
        if let Some(entry) = state
            .producers
            .get_mut(id)
            .filter(|entry| entry.producer_id == fields.producer_id && entry.epoch == fields.epoch)
        {
            changed |= !entry.partitions.is_empty() || !entry.offsets.is_empty();
            self.deadlines.end(id);
            entry.phase = Phase::Empty;
            entry.partitions.clear();
            entry.offsets.clear();
        }
        // A transaction that wrote nothing and committed no offsets was never stored as
        // decided, so there is nothing to undo on disk.
        if changed {
            state.store(&self.directory)?;
        }
        Ok(())
    }
}

/// The decided transaction of `entry`, with markers of its current epoch.
fn decided(entry: &crate::transaction_state::ProducerEntry) -> Decided {
    Decided {
        fields: TransactionFields {
            producer_id: entry.producer_id,
            epoch: entry.epoch,
            control: if entry.phase == Phase::Committing {
                Control::Commit
            } else {
                Control::Abort
            },
        },
        partitions: entry.partitions.clone(),
        offsets: entry.offsets.clone(),
    }
}

fn current_mut<'a>(
    state: &'a mut TransactionState,
    id: &str,
    fields: TransactionFields,
) -> Result<&'a mut crate::transaction_state::ProducerEntry, StepError> {
    state
        .producers
        .get_mut(id)
        .filter(|entry| entry.producer_id == fields.producer_id && entry.epoch == fields.epoch)
        .ok_or(StepError::Fenced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decided_transaction_keeps_its_decision() {
        let directory = tempfile::tempdir().unwrap();
        let coordinator = Coordinator::open(directory.path()).unwrap();
        let (fields, unfinished) = coordinator.begin("p").unwrap();
        assert!(unfinished.is_none());
        let offsets = vec![("group".to_owned(), "t".to_owned(), 0, 7)];
        let committing = coordinator
            .decide("p", fields, Control::Commit, offsets.clone())
            .unwrap();
        assert_eq!(committing.fields.control, Control::Commit);
        // An abort that comes while the commit is being finished (a dropped producer's)
        // finishes the commit instead.
        let again = coordinator
            .decide("p", fields, Control::Abort, Vec::new())
            .unwrap();
        assert_eq!(again.fields.control, Control::Commit);
        assert_eq!(again.offsets, offsets);
    }

    #[test]
    fn a_fenced_producers_late_completion_leaves_its_successor_alone() {
        let directory = tempfile::tempdir().unwrap();
        let coordinator = Coordinator::open(directory.path()).unwrap();
        let (old, _) = coordinator.begin("p").unwrap();
        let offsets = vec![("group".to_owned(), "t".to_owned(), 0, 7)];
        coordinator
            .decide("p", old, Control::Commit, offsets.clone())
            .unwrap();
        let (new, unfinished) = coordinator.begin("p").unwrap();
        let unfinished = unfinished.unwrap();
        assert_eq!(
            unfinished.offsets, offsets,
            "rolled forward by the successor"
        );
        coordinator
            .complete("p", unfinished.fields, Vec::new(), |_| Some(0))
            .unwrap();
        coordinator
            .decide(
                "p",
                new,
                Control::Commit,
                vec![("group".to_owned(), "t".to_owned(), 0, 9)],
            )
            .unwrap();
        coordinator
            .complete("p", old, Vec::new(), |_| Some(0))
            .unwrap();
        let state = lock(&coordinator.state);
        assert_eq!(state.producers["p"].phase, Phase::Committing);
    }
}
