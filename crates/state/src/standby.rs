//! Warm standbys: copies of the keyed state of the input partitions other members hold,
//! kept up to date from their checkpoints and changelog by a task of their own, so that a
//! member taking a partition over (its owner crashed, or a rebalance moved it) replays only
//! the changelog records its copy has not read yet instead of the partition's whole state.
//!
//! A copy holds exactly what the owner's last checkpoint names: every round, the task reads
//! the last checkpoint of each partition whose checkpoint topic moved since, and applies the changelog records its ranges cover that
//! the copy has not read, skipping the records outside them (their keys are marked changed,
//! as a restore does). A snapshot starts a new generation of ranges, and the copy starts
//! again from it. Taking the copy over, the restore reads the partition's last checkpoint
//! itself and goes on from where the copy stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::changelog::{self, Reading};
use super::changelog_entries::ReplayTarget;
use super::freeing;
use super::query::StateQueries;
use crate::checkpoint::{ChangelogRange, CheckpointSource, read_last};

/// How often warm standbys read the other partitions' checkpoints at most.
pub const MIN_STANDBY_INTERVAL: Duration = Duration::from_millis(100);

/// A copy of one partition's state: a keyed state's store, or a window operator.
#[derive(Debug)]
pub struct WarmCopy<T> {
    /// The copy.
    pub store: T,
    /// Where the ranges it follows begin (a snapshot's start).
    generation: u64,
    /// The next changelog offset to read.
    pub position: u64,
    /// The end of the partition of the checkpoint topic when the copy last read its last
    /// checkpoint: while it stays there, there is nothing new to read.
    checkpoint_end: u64,
}

impl<T> WarmCopy<T> {
    /// Whether this copy follows the generation `ranges` belong to.
    pub fn follows(&self, ranges: &[ChangelogRange]) -> bool {
        ranges
            .first()
            .is_some_and(|first| first.from == self.generation)
    }
}

#[derive(Debug)]
struct Shared<T> {
    /// The partitions this member holds: no copy is kept of them.
    held: BTreeSet<u32>,
    copies: BTreeMap<u32, WarmCopy<T>>,
}

/// The warm copies of one instance's other partitions, and the task keeping them.
#[derive(Debug)]
pub struct Standbys<T: ReplayTarget + Send + 'static> {
    shared: Arc<Mutex<Shared<T>>>,
    task: JoinHandle<()>,
}

impl<T: ReplayTarget + Send + 'static> Standbys<T> {
    /// Starts keeping copies of the partitions below `partitions` this member does not
    /// hold, reading each partition's checkpoint and changelog every `interval`; `empty`
    /// makes a copy with nothing in it. The copies' size goes to `queries` after every
    /// round.
    pub fn start(
        source: Arc<CheckpointSource>,
        partitions: u32,
        interval: Duration,
        queries: StateQueries,
        empty: Box<dyn Fn() -> T + Send>,
    ) -> Standbys<T> {
        let shared = Arc::new(Mutex::new(Shared {
            held: BTreeSet::new(),
            copies: BTreeMap::new(),
        }));
        let keeping = Keeping {
            source,
            partitions,
            interval,
            queries,
            empty,
        };
        let task = tokio::spawn(keeping.run(shared.clone()));
        Standbys { shared, task }
    }

    /// This member holds `partition` from now on: returns its copy, if there is one.
    pub fn take(&self, partition: u32) -> Option<WarmCopy<T>> {
        let mut shared = lock(&self.shared);
        shared.held.insert(partition);
        shared.copies.remove(&partition)
    }

    /// This member no longer holds `partition`: a copy is kept again.
    pub fn release(&self, partition: u32) {
        lock(&self.shared).held.remove(&partition);
    }

    /// The partitions with a copy here, and the entries the copies hold.
    pub fn size(&self) -> (Vec<u32>, u64) {
        lock(&self.shared).size()
    }
}

impl<T: ReplayTarget> Shared<T> {
    fn size(&self) -> (Vec<u32>, u64) {
        let entries = self.copies.values().map(|copy| copy.store.held_entries());
        (self.copies.keys().copied().collect(), entries.sum())
    }
}

impl<T: ReplayTarget + Send + 'static> Drop for Standbys<T> {
    fn drop(&mut self) {
        self.task.abort();
        let copies = std::mem::take(&mut lock(&self.shared).copies);
        let entries = copies
            .values()
            .map(|copy| copy.store.held_entries())
            .sum::<u64>();
        freeing::free(copies, usize::try_from(entries).unwrap_or(usize::MAX));
    }
}

fn lock<T>(shared: &Mutex<Shared<T>>) -> std::sync::MutexGuard<'_, Shared<T>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the task keeping the copies needs.
struct Keeping<T> {
    source: Arc<CheckpointSource>,
    partitions: u32,
    interval: Duration,
    queries: StateQueries,
    /// Makes an empty copy.
    empty: Box<dyn Fn() -> T + Send>,
}

impl<T: ReplayTarget + Send + 'static> Keeping<T> {
    /// Brings every copy up to date, every `interval`, until aborted. Only partitions
    /// whose checkpoint topic moved since their copy's last round are read again.
    async fn run(self, shared: Arc<Mutex<Shared<T>>>) {
        loop {
            let ends = match self.source.backend.offsets(&self.source.topic).await {
                Ok(ends) => ends,
                Err(error) => {
                    tracing::warn!(
                        topic = %self.source.topic,
                        error = %error,
                        "reading the checkpoint topic's ends for warm copies failed; trying again"
                    );
                    Vec::new()
                }
            };
            for (partition, bounds) in (0..self.partitions).zip(ends) {
                let copy = {
                    let mut shared = lock(&shared);
                    let unchanged = shared
                        .copies
                        .get(&partition)
                        .is_some_and(|copy| copy.checkpoint_end == bounds.end);
                    if unchanged || shared.held.contains(&partition) {
                        continue;
                    }
                    shared.copies.remove(&partition)
                };
                let empty = (self.empty)();
                match follow(&self.source, partition, copy, empty, bounds.end).await {
                    Ok(Some(copy)) => {
                        let mut shared = lock(&shared);
                        // Taken over meanwhile: the new owner restored it without the copy.
                        if !shared.held.contains(&partition) {
                            shared.copies.insert(partition, copy);
                        }
                    }
                    Ok(None) => {}
                    Err(error) => tracing::warn!(
                        partition,
                        topic = %self.source.topic,
                        error = %error,
                        "keeping a warm copy of an input partition's keyed state failed; it starts again"
                    ),
                }
            }
            let (partitions, entries) = lock(&shared).size();
            self.queries.publish_standby_size(partitions, entries);
            tokio::time::sleep(self.interval).await;
        }
    }
}

/// `copy` (or a new one, from `empty`) brought up to the partition's last checkpoint, the
/// checkpoint topic's partition ending at `checkpoint_end` before it was read; `None` while
/// the partition has no checkpoint naming changelog records.
async fn follow<T: ReplayTarget>(
    source: &CheckpointSource,
    partition: u32,
    copy: Option<WarmCopy<T>>,
    empty: T,
    checkpoint_end: u64,
) -> crate::Result<Option<WarmCopy<T>>> {
    let last = read_last(&*source.backend, &source.topic, partition).await?;
    let Some(ranges) = last.map(|last| last.changelog) else {
        return Ok(None);
    };
    let Some(first) = ranges.first() else {
        return Ok(None);
    };
    let mut copy = match copy {
        Some(copy) if copy.follows(&ranges) => copy,
        _ => WarmCopy {
            store: empty,
            generation: first.from,
            position: first.from,
            checkpoint_end,
        },
    };
    // What the checkpoint covers: records after its ranges may belong to the next one.
    let covered = ranges
        .iter()
        .map(|range| range.to)
        .try_fold(0, |end, to| to.map(|to| end.max(to)));
    let reading = Reading {
        from: Some(copy.position),
        to: covered,
    };
    let replayed = changelog::replay(source, partition, &ranges, &mut copy.store, reading).await?;
    copy.position = replayed.position;
    copy.checkpoint_end = checkpoint_end;
    Ok(Some(copy))
}
