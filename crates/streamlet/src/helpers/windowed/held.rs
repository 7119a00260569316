//! [`Held`]: the windows of the input partitions a member of a [`WindowedAggregate`]'s
//! consumer group holds, kept by partition, and what restores, checkpoints, releases and
//! shows them.
//!
//! The windows are keyed state: every checkpoint writes the entries of the keys whose windows
//! changed since the last (`window/changes.rs`) to the partition's changelog, and a
//! checkpoint record with the watermarks and the changelog ranges to the partition's
//! checkpoint; a restore replays the ranges (from a warm copy's position, when there is one)
//! and registers the keys' timers again. Keys whose timers come due at the same time may
//! fire in another order after a restore than before; each key's panes are the same.
//!
//! [`WindowedAggregate`]: super::WindowedAggregate

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Template, restore_record, saved_record};
use crate::checkpoint::PartitionCheckpoint;
use crate::watermark::{WatermarkHolder, Watermarks};
use crate::window::{Aggregate, Key, Pane, WindowOperator, WindowSpec};
use crate::{Checkpoints, Error, Result};
use runnel_state::changelog::{self, MAX_RANGES, Reading};
use runnel_state::checkpoint::{ChangelogBatch, PartitionSave, unique_id};
use runnel_state::freeing;
use runnel_state::query::{self, PendingTimer, StateEntry};
use runnel_state::standby::{MIN_STANDBY_INTERVAL, Standbys};
use runnel_state::{StateQueries, StateSize};

/// The windows and the watermark of one input partition.
pub(super) struct PartitionWindows<K, A: Aggregate> {
    pub(super) operator: WindowOperator<K, A>,
    pub(super) watermarks: WatermarkHolder,
    /// This member's identity on the partition's changelog.
    writer: u64,
    /// Whether anything changed since the partition was last checkpointed.
    pub(super) changed: bool,
}

impl<K, A> PartitionWindows<K, A>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    /// The partition's windows as `restored` and its changelog ranges hold them (or empty),
    /// replayed into `operator` (empty, or a warm copy that read the records before
    /// `reading`'s start already); with the changelog entries replayed.
    async fn restore(
        partition: u32,
        checkpoints: &Checkpoints,
        restored: &PartitionCheckpoint,
        (mut operator, reading): (WindowOperator<K, A>, Reading),
        strategy: Watermarks,
        now: i64,
    ) -> Result<(Self, u64)> {
        operator.track_changes();
        let ranges = restored.changelog();
        let warm = reading.from.is_some();
        let replayed = changelog::replay(
            checkpoints.source(),
            partition,
            ranges,
            &mut operator,
            reading,
        )
        .await?;
        // A record written before the windows were keyed state holds the whole state.
        let mut watermarks =
            restore_record(&mut operator, restored.state(), strategy).map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of input partition {partition} does not decode: {error}"
                ))
            })?;
        if ranges.is_empty() || ranges.len() >= MAX_RANGES {
            // Start the changelog afresh: the first checkpoint holds the whole state.
            operator.snapshot_next();
        }
        tracing::info!(
            partition,
            keys = operator.key_count(),
            applied = replayed.applied,
            skipped = replayed.skipped,
            warm,
            "restored the windows of an input partition"
        );
        watermarks.add_partition(partition, now);
        let windows = PartitionWindows {
            operator,
            watermarks,
            writer: unique_id(),
            changed: false,
        };
        Ok((windows, replayed.applied + replayed.skipped))
    }

    /// What a checkpoint of the partition writes: the keys changed since the last, and the
    /// watermarks.
    fn save(&mut self, partition: u32) -> PartitionSave {
        let (entries, snapshot) = self.operator.take_changes();
        self.changed = false;
        PartitionSave {
            partition,
            state: saved_record(&self.operator, &self.watermarks).into(),
            changes: Some(ChangelogBatch {
                entries,
                snapshot,
                writer: self.writer,
            }),
        }
    }
}

/// The windows of the input partitions this member holds, and what restores, checkpoints
/// and shows them.
pub(super) struct Held<K: Key + Serialize + DeserializeOwned, A: Aggregate> {
    pub(super) partitions: BTreeMap<u32, PartitionWindows<K, A>>,
    /// The keys of `partitions`, apart: a future waiting for input borrows them to tell a
    /// restored partition's records, where the windows (of types that need not be `Sync`)
    /// cannot be borrowed across an await.
    pub(super) restored: BTreeSet<u32>,
    pub(super) checkpoints: Checkpoints,
    pub(super) queries: StateQueries,
    spec: WindowSpec,
    strategy: Watermarks,
    /// The inlet's name, whose offsets the checkpoints hold.
    inlet: &'static str,
    /// Warm copies of the partitions other members hold, if asked for.
    standbys: Option<Standbys<WindowOperator<K, A>>>,
    /// Changelog entries the restores of this member replayed.
    restored_entries: u64,
}

impl<K, A> Held<K, A>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    /// Holds no partition yet; restores them from `checkpoints` into windows of `spec`
    /// whose watermarks follow `strategy`, resuming inlet `inlet`; answers `queries`.
    pub(super) fn new(
        checkpoints: Checkpoints,
        queries: StateQueries,
        spec: WindowSpec,
        strategy: Watermarks,
        inlet: &'static str,
    ) -> Self {
        Held {
            partitions: BTreeMap::new(),
            restored: BTreeSet::new(),
            checkpoints,
            queries,
            spec,
            strategy,
            inlet,
            standbys: None,
            restored_entries: 0,
        }
    }

    /// Saves the partitions that changed (all of them with `everything`, and those in
    /// `also`).
    pub(super) fn save(&mut self, everything: bool, also: &BTreeSet<u32>) {
        let saves = self
            .partitions
            .iter_mut()
            .filter(|(partition, windows)| {
                everything
                    || windows.changed
                    || windows.operator.has_changes()
                    || also.contains(partition)
            })
            .map(|(partition, windows)| windows.save(*partition))
            .collect();
        self.checkpoints.save_changes(saves);
    }

    /// Restores `partition`, which this member was assigned and does not hold yet, with
    /// `aggregate`, moved on to the `scripted` watermark of the test kit if there is one
    /// (its panes go to `panes`). Returns the offset the inlet resumes the partition at, if
    /// it was checkpointed.
    pub(super) async fn take_over(
        &mut self,
        partition: u32,
        aggregate: A,
        scripted: Option<i64>,
        now: i64,
        panes: &mut Vec<Pane<K, A::Output>>,
    ) -> Result<Option<u64>> {
        let copy = self
            .standbys
            .as_ref()
            .and_then(|standbys| standbys.take(partition));
        let restored = self.checkpoints.restore_partition(partition).await?;
        // A warm copy of the same generation of ranges read the records before its
        // position already.
        let start = match copy {
            Some(copy) if copy.follows(restored.changelog()) => {
                let reading = Reading {
                    from: Some(copy.position),
                    to: None,
                };
                (copy.store, reading)
            }
            stale => {
                // A copy of another generation (a snapshot came since): of no use, and
                // maybe large.
                if let Some(stale) = stale {
                    let keys = stale.store.key_count();
                    freeing::free(stale, keys);
                }
                (
                    WindowOperator::new(self.spec, aggregate),
                    Reading::default(),
                )
            }
        };
        let (windows, replayed) = PartitionWindows::restore(
            partition,
            &self.checkpoints,
            &restored,
            start,
            self.strategy,
            now,
        )
        .await?;
        self.restored_entries += replayed;
        let windows = self.partitions.entry(partition).or_insert(windows);
        self.restored.insert(partition);
        if let Some(watermark) = scripted {
            windows.operator.advance_watermark(watermark, now, panes);
        }
        self.publish_size();
        Ok(restored.next_offset(self.inlet))
    }

    /// Starts keeping warm copies of the partitions this member does not hold, made by
    /// `template`'s aggregates, once the input's partition count is known.
    pub(super) fn keep_standbys(&mut self, template: &dyn Template<A>, interval: Duration) {
        let partitions = self.queries.input_partitions();
        if self.standbys.is_some() || partitions == 0 {
            return;
        }
        let (spec, template) = (self.spec, template.boxed());
        let empty = Box::new(move || WindowOperator::new(spec, template.make()));
        self.standbys = Some(Standbys::start(
            self.checkpoints.source().clone(),
            partitions,
            interval.max(MIN_STANDBY_INTERVAL),
            self.queries.clone(),
            empty,
        ));
    }

    /// Gives `partitions`, which a rebalance took away, a last checkpoint and forgets them:
    /// whoever holds them next (this member again, perhaps) restores them from it or from an
    /// earlier one.
    ///
    /// # Errors
    ///
    /// Exactly once, when they hold uncommitted work
    /// ([`Checkpoints::check_revoked`](crate::Checkpoints::check_revoked)).
    pub(super) fn hand_over(&mut self, partitions: &BTreeSet<u32>) -> Result<()> {
        let listed: Vec<u32> = partitions.iter().copied().collect();
        self.checkpoints.check_revoked(&listed)?;
        self.save(false, partitions);
        self.release(partitions);
        Ok(())
    }

    /// Forgets `partitions`, which this member no longer holds (a warm copy is kept of them
    /// again, if asked for).
    pub(super) fn release(&mut self, partitions: &BTreeSet<u32>) {
        for partition in partitions {
            if let Some(standbys) = &self.standbys {
                standbys.release(*partition);
            }
            self.restored.remove(partition);
            if let Some(windows) = self.partitions.remove(partition) {
                let keys = windows.operator.key_count();
                freeing::free(windows, keys);
            }
        }
        self.publish_size();
    }

    /// Tells the status how large the windows held are.
    pub(super) fn publish_size(&self) {
        let (standby_partitions, standby_entries) = self
            .standbys
            .as_ref()
            .map(Standbys::size)
            .unwrap_or_default();
        let windows = self.partitions.values().map(|windows| &windows.operator);
        self.queries.publish_size(StateSize {
            partitions: self.partitions.keys().copied().collect(),
            entries: windows
                .clone()
                .map(|operator| operator.key_count() as u64)
                .sum(),
            bytes: windows.map(WindowOperator::state_bytes).sum(),
            standby_partitions,
            standby_entries,
            restored_entries: self.restored_entries,
        });
    }

    /// The windows of `key` in the partitions held that are `assigned` (of `total`): the
    /// key as the windows encode it (JSON), or as the text of a string key.
    pub(super) fn answer(&self, key: &[u8], assigned: &[u32], total: u32) -> query::KeyState {
        let mut held = assigned.to_vec();
        held.sort_unstable();
        let decoded = serde_json::from_slice::<K>(key).ok().or_else(|| {
            let text = std::str::from_utf8(key).ok()?;
            serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
        });
        let (mut states, mut timers) = (Vec::new(), Vec::new());
        let found = self
            .partitions
            .iter()
            .filter(|(partition, _)| held.contains(partition))
            .filter_map(|(partition, windows)| {
                let state = windows.operator.key_state(decoded.as_ref()?)?;
                Some((*partition, state))
            });
        for (partition, state) in found {
            let (value, error) = match serde_json::to_value(state) {
                Ok(value) => (value, None),
                Err(error) => (serde_json::Value::Null, Some(error.to_string())),
            };
            states.push(StateEntry {
                name: "windows".to_owned(),
                kind: "windows".to_owned(),
                partition,
                value,
                error,
            });
            let pending = [
                ("event-time", state.event_timer),
                ("processing-time", state.processing_timer),
            ];
            for (domain, time) in pending {
                if let Some(time) = time {
                    timers.push(PendingTimer {
                        domain: domain.to_owned(),
                        time,
                        partition,
                    });
                }
            }
        }
        query::key_state(key, total, &held, states, timers)
    }
}

impl<K: Key + Serialize + DeserializeOwned, A: Aggregate> Drop for Held<K, A> {
    fn drop(&mut self) {
        let partitions = std::mem::take(&mut self.partitions);
        let keys = partitions
            .values()
            .map(|windows| windows.operator.key_count())
            .sum();
        freeing::free(partitions, keys);
    }
}
