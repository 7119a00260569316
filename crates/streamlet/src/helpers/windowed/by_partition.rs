//! [`WindowedAggregate`] with its state kept by input partition: one window operator and
//! one watermark per partition this member is assigned, each restored when the partition is
//! first seen and dropped when it is taken away.
//!
//! The windows are keyed state: every checkpoint writes the entries of the keys whose windows
//! changed since the last (`window/changes.rs`) to the partition's changelog, and a
//! checkpoint record with the watermarks and the changelog ranges to the partition's
//! checkpoint; a restore replays the ranges and registers the keys' timers again. Keys whose
//! timers come due at the same time may fire in another order after a restore than before;
//! each key's panes are the same.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::FutureExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{Template, WindowedAggregate, Windows, send};
use crate::checkpoint::{ChangelogBatch, PartitionCheckpoint, PartitionSave, unique_id};
use crate::state::changelog::{self, MAX_RANGES, Reading};
use crate::state::freeing;
use crate::state::query::{self, PendingTimer, StateEntry};
use crate::state::standby::{MIN_STANDBY_INTERVAL, Standbys};
use crate::state::{StateQueries, StateSize};
use crate::watermark::{ScriptedWatermarks, WatermarkHolder, Watermarks};
use crate::window::{Aggregate, Key, Pane, State, WindowOperator, WindowSpec};
use crate::{Checkpoints, Context, Data, Error, Result};

/// The windows and the watermark of one input partition.
struct PartitionWindows<K, A: Aggregate> {
    operator: WindowOperator<K, A>,
    watermarks: WatermarkHolder,
    /// This member's identity on the partition's changelog.
    writer: u64,
    /// Whether anything changed since the partition was last checkpointed.
    changed: bool,
}

/// The checkpoint record's value of a partition: what is not in the changelog.
#[derive(Serialize)]
struct Saved<'a> {
    /// The operator's watermark.
    watermark: i64,
    watermarks: &'a WatermarkHolder,
}

/// A checkpoint record's value as read back: [`Saved`], or the whole state of the
/// partition's windows as checkpoints held it before the windows were keyed state.
#[derive(Deserialize)]
#[serde(bound(
    deserialize = "K: Key + DeserializeOwned, Acc: DeserializeOwned, Out: DeserializeOwned"
))]
struct Restoring<K, Acc, Out> {
    watermarks: WatermarkHolder,
    #[serde(default)]
    watermark: Option<i64>,
    #[serde(default)]
    operator: Option<State<K, Acc, Out>>,
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
        let mut watermarks = WatermarkHolder::new(strategy);
        if let Some(state) = restored.state() {
            let saved: Restoring<K, A::Accumulator, A::Output> = serde_json::from_slice(state)
                .map_err(|error| {
                    Error::msg(format!(
                        "the last checkpoint of input partition {partition} does not decode: {error}"
                    ))
                })?;
            if let Some(whole) = saved.operator {
                // Written before the windows were keyed state: the first checkpoint writes
                // every key to the changelog.
                operator.set_state(whole);
                operator.snapshot_next();
            }
            if let Some(watermark) = saved.watermark {
                operator.set_watermark(watermark);
            }
            watermarks = saved.watermarks.with_strategy(strategy);
        }
        operator.rebuild_timers();
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
        let saved = Saved {
            watermark: self.operator.watermark(),
            watermarks: &self.watermarks,
        };
        self.changed = false;
        PartitionSave {
            partition,
            state: serde_json::to_vec(&saved)
                .expect("watermarks serialize")
                .into(),
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
struct Held<K: Key + Serialize + DeserializeOwned, A: Aggregate> {
    partitions: BTreeMap<u32, PartitionWindows<K, A>>,
    checkpoints: Checkpoints,
    queries: StateQueries,
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
    /// Saves the partitions that changed (all of them with `everything`, and those in
    /// `also`).
    fn save(&mut self, everything: bool, also: &BTreeSet<u32>) {
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
    async fn take_over(
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
            _ => (
                WindowOperator::new(self.spec, aggregate),
                Reading::default(),
            ),
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
        if let Some(watermark) = scripted {
            windows.operator.advance_watermark(watermark, now, panes);
        }
        self.publish_size();
        Ok(restored.next_offset(self.inlet))
    }

    /// Starts keeping warm copies of the partitions this member does not hold, made by
    /// `template`'s aggregates, once the input's partition count is known.
    fn keep_standbys(&mut self, template: &dyn Template<A>, interval: Duration) {
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

    /// Forgets `partitions`, which this member no longer holds (a warm copy is kept of them
    /// again, if asked for).
    fn release(&mut self, partitions: &BTreeSet<u32>) {
        for partition in partitions {
            if let Some(standbys) = &self.standbys {
                standbys.release(*partition);
            }
            if let Some(windows) = self.partitions.remove(partition) {
                let keys = windows.operator.key_count();
                freeing::free(windows, keys);
            }
        }
        self.publish_size();
    }

    /// Tells the status how large the windows held are.
    fn publish_size(&self) {
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
    fn answer(&self, key: &[u8], assigned: &[u32], total: u32) -> query::KeyState {
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

pub(super) async fn run<In, K, A>(
    aggregate: WindowedAggregate<In, K, A>,
    make: Box<dyn Template<A>>,
    mut ctx: Context,
) -> Result<()>
where
    In: Data,
    K: Key + Default + Serialize + DeserializeOwned,
    A: Aggregate<Input = In>,
    Pane<K, A::Output>: Data,
{
    let mut input = ctx.inlet(aggregate.inlet);
    let output = ctx.outlet(aggregate.outlet);
    let late = aggregate.late.map(|late| ctx.outlet(late));
    let clock = ctx.clock().clone();
    let mut scripted = ctx.scripted_watermarks();
    let checkpoints = ctx
        .checkpoints()
        .ok_or_else(|| Error::msg("a streamlet checkpointed by partition has checkpoints"))?;
    let queries = ctx.state_queries().clone();
    let mut asked = queries.connect();
    let mut held = Held {
        partitions: BTreeMap::new(),
        checkpoints,
        queries,
        spec: aggregate.spec,
        strategy: aggregate.watermarks,
        inlet: aggregate.inlet.name(),
        standbys: None,
        restored_entries: 0,
    };
    let mut next_checkpoint: Option<Instant> = None;
    let mut panes = Vec::new();
    loop {
        if aggregate.standby {
            held.keep_standbys(&*make, aggregate.checkpoint_every);
        }
        let idle = held
            .partitions
            .values()
            .filter_map(|windows| windows.watermarks.next_idle_deadline())
            .filter(|_| scripted.is_none());
        let deadline = held
            .partitions
            .values()
            .filter_map(|windows| windows.operator.next_processing_deadline())
            .chain(idle)
            .min();
        let wake = match deadline {
            Some(deadline) => clock.sleep_until(deadline),
            None => std::future::pending().boxed(),
        };
        let scripted_change = async {
            match &mut scripted {
                Some(scripted) => scripted.changed().await,
                None => std::future::pending().await,
            }
        };
        let checkpoint_due = async {
            match next_checkpoint {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = checkpoint_due => {
                // Partitions taken away in a rebalance get a last checkpoint and are dropped:
                // their new owner restores them from their last checkpoint (this one, or an
                // earlier one if it restored first) and reads again what came after.
                let assigned: BTreeSet<u32> = input.partitions().into_iter().collect();
                let revoked: BTreeSet<u32> = held
                    .partitions
                    .keys()
                    .filter(|partition| !assigned.contains(partition))
                    .copied()
                    .collect();
                let listed: Vec<u32> = revoked.iter().copied().collect();
                held.checkpoints.check_revoked(&listed)?;
                held.save(false, &revoked);
                held.release(&revoked);
                next_checkpoint = None;
            }
            Some(asked) = asked.recv() => {
                let total = held.queries.input_partitions();
                let partition = (total > 0).then(|| runnel_backend::partition_for_key(&asked.key, total));
                if let Some(partition) = partition
                    && !held.partitions.contains_key(&partition)
                    && input.partitions().contains(&partition)
                {
                    // Assigned, and no message of it came yet: restore it to answer.
                    let current = scripted.as_mut().map(ScriptedWatermarks::current);
                    let now = clock.now_millis();
                    let resume = held.take_over(partition, make.make(), current, now, &mut panes).await?;
                    send(&output, &mut panes).await?;
                    if let Some(offset) = resume
                        && let Err(error) = input.rewind(partition, offset).await
                    {
                        if input.partitions().contains(&partition) {
                            return Err(error);
                        }
                        // A rebalance took the partition away during the restore.
                        held.release(&BTreeSet::from([partition]));
                    }
                }
                let answer = held.answer(&asked.key, &input.partitions(), total);
                // The asker may have given up waiting; nothing to tell then.
                let _ = asked.reply.send(answer);
            }
            message = input.next() => {
                let Some(message) = message? else { break };
                let partition = message.partition();
                if !held.partitions.contains_key(&partition) {
                    let current = scripted.as_mut().map(ScriptedWatermarks::current);
                    let now = clock.now_millis();
                    let resume = held.take_over(partition, make.make(), current, now, &mut panes).await?;
                    send(&output, &mut panes).await?;
                    if let Some(offset) = resume {
                        // Read the partition again from where its checkpoint stands; this
                        // message comes again if it is not in the state.
                        drop(message);
                        input.rewind(partition, offset).await?;
                        continue;
                    }
                }
                let windows = held.partitions.get_mut(&partition).expect("restored above");
                windows.changed = true;
                let target = Windows {
                    operator: &mut windows.operator,
                    watermarks: &mut windows.watermarks,
                    follows_script: scripted.is_some(),
                    key: aggregate.key,
                    timestamp: aggregate.timestamp,
                };
                let now = clock.now_millis();
                target.add(&ctx, message, late.as_ref(), &output, now, &mut panes).await?;
                next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
            }
            watermark = scripted_change => {
                let now = clock.now_millis();
                for windows in held.partitions.values_mut() {
                    windows.operator.advance_watermark(watermark, now, &mut panes);
                    windows.changed |= !panes.is_empty();
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
                    }
                }
            }
            () = wake => {
                let now = clock.now_millis();
                for windows in held.partitions.values_mut() {
                    windows.operator.advance_processing_time(now, &mut panes);
                    if scripted.is_none() && let Some(watermark) = windows.watermarks.check_idle(now) {
                        windows.operator.advance_watermark(watermark, now, &mut panes);
                    }
                    windows.changed |= !panes.is_empty();
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
                    }
                }
            }
        }
        if let Some(watermark) = held
            .partitions
            .values()
            .map(|w| w.operator.watermark())
            .min()
        {
            ctx.report_watermark(watermark);
        }
    }
    if !ctx.is_stopping() {
        // A bounded input ended: every window of every partition is complete.
        let now = clock.now_millis();
        for windows in held.partitions.values_mut() {
            let end = windows.watermarks.finish();
            windows.operator.advance_watermark(end, now, &mut panes);
            send(&output, &mut panes).await?;
        }
    }
    held.save(true, &BTreeSet::new());
    held.publish_size();
    Ok(())
}
