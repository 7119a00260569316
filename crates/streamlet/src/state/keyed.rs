//! [`KeyedState`]: reads an inlet through the keyed state of the partitions this member
//! holds, restoring each when it first sees it, firing timers and checkpointing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::inlet::Next;
use crate::watermark::{ScriptedWatermarks, WatermarkHolder, Watermarks};
use crate::{Checkpoints, Clock, Data, Error, InletStream, InstanceMetrics, Message, Result};
use runnel_state::changelog::{self, MAX_RANGES, Reading};
use runnel_state::checkpoint::{ChangelogBatch, PartitionSave, unique_id};
use runnel_state::freeing;
use runnel_state::query::{self, Query};
use runnel_state::standby::{MIN_STANDBY_INTERVAL, Standbys};
use runnel_state::store::PartitionStore;
use runnel_state::timers::{self, TimeDomain, Timer};
use runnel_state::{DeclaredState, KeyState, KeyedEntry, StateDecoders, StateQueries};

/// What [`KeyedState::next`] hands the streamlet: a message, or a timer that fired.
#[derive(Debug)]
pub enum Keyed<T> {
    /// The next message of the inlet.
    Message(Message<T>),
    /// A timer of a key that fired (already deleted from the state).
    Timer(Timer),
}

/// The keyed state of a streamlet whose shape says
/// [`keyed_state`](crate::Shape::keyed_state): one store per input partition this member of
/// the consumer group holds, read and changed through [`entry`](KeyedState::entry), and
/// checkpointed by [`next`](KeyedState::next).
///
/// Read the inlet through [`next`](KeyedState::next) (or
/// [`next_timed`](KeyedState::next_timed)): when a message comes from a partition it does not
/// hold yet, it restores the partition's state from the last checkpoint and the changelog,
/// and positions the inlet after the input that state reflects. Between messages it fires
/// due timers and, every checkpoint interval (one second unless
/// [`checkpoint_every`](KeyedState::checkpoint_every) says otherwise), writes the entries
/// changed since the last checkpoint to the changelog and a checkpoint with the committed
/// input offsets. Partitions a rebalance took away get a last checkpoint and are dropped.
/// It also answers queries of a key's state from outside (the admin endpoint's
/// `/api/state/{instance}`, `runnel state get`; see [`StateQueries`]) between messages, so
/// no lock guards the state; [`declare`](KeyedState::declare) the states to show their
/// values from the start.
///
/// **Commit each message (or timer's work) before asking for the next**: a checkpoint taken
/// in `next` reflects the input committed so far, so state changed for a message still held
/// would be counted again after a restart (and an exactly-once instance fails).
///
/// ```
/// use runnel_streamlet::prelude::*;
/// use runnel_streamlet::state::{Keyed, TimeDomain, ValueState};
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Payment { card: String, cents: i64 }
///
/// const PAYMENTS: Inlet<Payment> = Inlet::new("payments");
/// const TOTALS: Outlet<Payment> = Outlet::new("totals");
/// /// Per card: the sum of the current minute's payments.
/// const SUM: ValueState<i64> = ValueState::new("sum");
///
/// /// Sums each card's payments per minute of processing time.
/// struct MinuteTotals;
///
/// impl Streamlet for MinuteTotals {
///     fn shape(&self) -> Shape {
///         Shape::new().inlet(PAYMENTS).outlet(TOTALS).keyed_state()
///     }
///
///     async fn run(self, mut ctx: Context) -> Result<()> {
///         let mut input = ctx.inlet(PAYMENTS);
///         let output = ctx.outlet(TOTALS);
///         let mut state = ctx.keyed_state()?;
///         while let Some(next) = state.next(&mut input).await? {
///             match next {
///                 Keyed::Message(message) => {
///                     let payment = message.value();
///                     let now = ctx.clock().now_millis();
///                     let mut entry = state.entry(message.partition(), payment.card.as_bytes());
///                     let sum = entry.value(SUM).update(|sum| sum.unwrap_or(0) + payment.cents)?;
///                     if sum == payment.cents {
///                         // The first payment of the card's minute: report at its end.
///                         entry.set_timer(TimeDomain::ProcessingTime, now + 60_000);
///                     }
///                     message.commit();
///                 }
///                 Keyed::Timer(timer) => {
///                     let mut entry = state.entry(timer.partition, timer.key.clone());
///                     let cents = entry.value(SUM).get()?.unwrap_or(0);
///                     entry.value(SUM).clear();
///                     let card = String::from_utf8_lossy(&timer.key).into_owned();
///                     output.send(&Payment { card, cents }).await?;
///                 }
///             }
///         }
///         Ok(())
///     }
/// }
/// # let _ = MinuteTotals;
/// ```
#[derive(Debug)]
pub struct KeyedState {
    checkpoints: Checkpoints,
    clock: Arc<dyn Clock>,
    stopping: CancellationToken,
    strategy: Watermarks,
    checkpoint_every: Duration,
    partitions: BTreeMap<u32, PartitionState>,
    next_checkpoint: Option<Instant>,
    /// The input ended: the timers due by then fire, then `next` returns `None`.
    ended: bool,
    finished: bool,
    /// The states used so far, which queries show.
    decoders: StateDecoders,
    /// Whether restored stores hold states the decoders have not noted yet.
    stored_unnoted: bool,
    /// Where queries come from and the state size goes.
    queries: StateQueries,
    asked: mpsc::Receiver<Query>,
    /// Whether to keep warm copies of the partitions other members hold.
    standby: bool,
    standbys: Option<Standbys<PartitionStore>>,
    /// Changelog entries the restores of this member replayed.
    restored_entries: u64,
    /// Watermarks set from outside (the test kit's `TestRun::watermark`): event-time timers
    /// follow them instead of the partitions' own.
    scripted: Option<ScriptedWatermarks>,
    /// Where the watermark goes for the status.
    metrics: Arc<InstanceMetrics>,
}

/// The state of one input partition.
#[derive(Debug)]
struct PartitionState {
    store: PartitionStore,
    watermarks: WatermarkHolder,
    /// This member's identity on the partition's changelog.
    writer: u64,
    /// Whether the watermark moved since the last checkpoint.
    moved: bool,
}

/// The checkpoint record's value of a partition: what is not in the changelog.
#[derive(Serialize, Deserialize)]
struct Saved {
    watermarks: WatermarkHolder,
}

impl KeyedState {
    pub(crate) fn new(
        checkpoints: Checkpoints,
        clock: Arc<dyn Clock>,
        stopping: CancellationToken,
        metrics: Arc<InstanceMetrics>,
        scripted: Option<ScriptedWatermarks>,
    ) -> Self {
        let queries = metrics.state_queries().clone();
        let asked = queries.connect();
        KeyedState {
            checkpoints,
            clock,
            stopping,
            strategy: Watermarks::default(),
            checkpoint_every: Duration::from_secs(1),
            partitions: BTreeMap::new(),
            next_checkpoint: None,
            ended: false,
            finished: false,
            decoders: StateDecoders::default(),
            stored_unnoted: false,
            queries,
            asked,
            standby: false,
            standbys: None,
            restored_entries: 0,
            scripted,
            metrics,
        }
    }

    /// Also keeps a warm copy of the state of the input partitions other members hold
    /// (a standby), brought up to their owners' last checkpoints every checkpoint interval
    /// (at least every 100 ms), so that taking one over replays only the changelog records
    /// written since instead of the whole state. It costs the memory of the copies (with
    /// every member keeping them, each holds the whole state) and reading every
    /// partition's checkpoint and changelog.
    pub fn warm_standby(mut self) -> Self {
        self.standby = true;
        self
    }

    /// Checkpoints at most every `interval` after a change (one second by default).
    pub fn checkpoint_every(mut self, interval: Duration) -> Self {
        self.checkpoint_every = interval;
        self
    }

    /// Declares `state`, so queries of a key (over the admin endpoint, `runnel state get`)
    /// show its value from the start. A state the streamlet uses is declared by its first
    /// use; until then, a state found in the restored checkpoints is listed without its value.
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// use runnel_streamlet::state::{KeyedState, MapState, ValueState};
    /// const COUNT: ValueState<u64> = ValueState::new("count");
    /// const TEXTS: MapState<String, u64> = MapState::new("texts");
    /// fn queryable(state: KeyedState) -> KeyedState {
    ///     state.declare(COUNT).declare(TEXTS)
    /// }
    /// ```
    pub fn declare(mut self, state: impl DeclaredState) -> Self {
        self.decoders.declare(state.declaration());
        self
    }

    /// How each partition's watermark follows the event times it sees, for event-time
    /// timers ([`Watermarks::default`] unless set).
    pub fn watermarks(mut self, strategy: Watermarks) -> Self {
        self.strategy = strategy;
        self
    }

    /// The state of `key` on input `partition`: the partition of the message or timer being
    /// handled.
    ///
    /// # Panics
    ///
    /// When this member does not hold `partition`: no message or timer of it came from
    /// [`next`](KeyedState::next).
    pub fn entry(&mut self, partition: u32, key: impl Into<Vec<u8>>) -> KeyedEntry<'_> {
        let now = self.clock.now_millis();
        let Some(state) = self.partitions.get_mut(&partition) else {
            panic!(
                "keyed state of input partition {partition} is not held here: use the partition of a message or timer `next` returned"
            )
        };
        KeyedEntry::new(
            &mut state.store,
            partition,
            key.into(),
            now,
            &mut self.decoders,
        )
    }

    /// Answers a query for `key` from the partitions `input` holds now (its consumer's
    /// assignment), restoring the key's partition first when it was assigned and has not
    /// delivered a message yet.
    async fn answer<T: Data>(
        &mut self,
        key: &[u8],
        input: &mut InletStream<T>,
    ) -> Result<KeyState> {
        let partitions = self.queries.input_partitions();
        if partitions > 0 {
            let partition = runnel_backend::partition_for_key(key, partitions);
            if !self.partitions.contains_key(&partition)
                && input.partitions().contains(&partition)
                && let Some(offset) = self.restore(partition, input.name()).await?
                && let Err(error) = input.rewind(partition, offset).await
            {
                if input.partitions().contains(&partition) {
                    return Err(error);
                }
                // A rebalance took the partition away during the restore.
                self.drop_partition(partition);
            }
        }
        if std::mem::take(&mut self.stored_unnoted) {
            for state in self.partitions.values() {
                self.decoders.note_stored(&state.store);
            }
        }
        let mut assigned = input.partitions();
        assigned.sort_unstable();
        let stores = self
            .partitions
            .iter()
            .filter(|(partition, _)| assigned.contains(partition))
            .map(|(partition, state)| (*partition, &state.store));
        Ok(query::answer(
            stores,
            &assigned,
            &self.decoders,
            key,
            partitions,
            self.clock.now_millis(),
        ))
    }

    fn stores(&self) -> impl Iterator<Item = (u32, &PartitionStore)> {
        self.partitions
            .iter()
            .map(|(partition, state)| (*partition, &state.store))
    }

    /// Tells the status how large the state is.
    fn publish_size(&self) {
        let mut size = query::size(self.stores());
        if let Some(standbys) = &self.standbys {
            (size.standby_partitions, size.standby_entries) = standbys.size();
        }
        size.restored_entries = self.restored_entries;
        self.queries.publish_size(size);
    }

    /// The event-time watermark of input `partition` (`i64::MIN` before there is one): the
    /// one its event-time timers fire at.
    pub fn watermark(&self, partition: u32) -> i64 {
        self.partitions.get(&partition).map_or(i64::MIN, |state| {
            Self::timer_watermark(self.scripted.as_ref(), self.ended, state)
        })
    }

    /// The watermark `state`'s event-time timers fire at: the partition's own, or the
    /// scripted one while the input has not ended.
    fn timer_watermark(
        scripted: Option<&ScriptedWatermarks>,
        ended: bool,
        state: &PartitionState,
    ) -> i64 {
        match scripted {
            Some(_) if ended => i64::MAX,
            Some(scripted) => scripted.latest(),
            None => state.watermarks.current(),
        }
    }

    /// Tells the status the instance's watermark: the least of the held partitions'.
    fn report_watermark(&self) {
        let least = self
            .partitions
            .values()
            .map(|state| Self::timer_watermark(self.scripted.as_ref(), self.ended, state))
            .min();
        if let Some(watermark) = least {
            self.metrics.set_watermark(watermark);
        }
    }

    /// The partitions held, with the entries each holds (values, list and map entries and
    /// timers).
    pub fn sizes(&self) -> Vec<(u32, usize)> {
        self.partitions
            .iter()
            .map(|(partition, state)| (*partition, state.store.len()))
            .collect()
    }

    /// The next message of `input`, or the next timer due; `None` at the end of the input
    /// (after the event-time timers due by the end of a bounded input fired), or when the
    /// streamlet is asked to stop. Event time is the record's timestamp.
    ///
    /// # Errors
    ///
    /// When the inlet fails, or a partition's state cannot be restored.
    pub async fn next<T: Data>(&mut self, input: &mut InletStream<T>) -> Result<Option<Keyed<T>>> {
        self.next_timed(input, Message::timestamp).await
    }

    /// As [`next`](KeyedState::next), with the event time of each message from
    /// `event_time` (for example a field of its value).
    ///
    /// # Errors
    ///
    /// When the inlet fails, or a partition's state cannot be restored.
    pub async fn next_timed<T: Data>(
        &mut self,
        input: &mut InletStream<T>,
        event_time: impl Fn(&Message<T>) -> i64,
    ) -> Result<Option<Keyed<T>>> {
        if self.standby && self.standbys.is_none() && self.queries.input_partitions() > 0 {
            self.standbys = Some(Standbys::start(
                self.checkpoints.source().clone(),
                self.queries.input_partitions(),
                self.checkpoint_every.max(MIN_STANDBY_INTERVAL),
                self.queries.clone(),
                Box::new(PartitionStore::default),
            ));
        }
        loop {
            if self.finished {
                return Ok(None);
            }
            let now = self.clock.now_millis();
            if let Some(timer) = self.take_due_timer(now) {
                self.schedule_checkpoint();
                return Ok(Some(Keyed::Timer(timer)));
            }
            if self.ended {
                self.save(&[], true)?;
                self.finished = true;
                return Ok(None);
            }
            if self.next_checkpoint.is_some_and(|at| at <= Instant::now()) {
                self.save(&input.partitions(), false)?;
            }
            if let Ok(asked) = self.asked.try_recv() {
                let answer = self.answer(&asked.key, input).await?;
                // The asker may have given up waiting; nothing to tell then.
                let _ = asked.reply.send(answer);
                continue;
            }
            // A message the inlet holds already is taken without setting up the wait below
            // (timers and due checkpoints were looked at above); the inlet's `next` is
            // cancel safe.
            let partitions = &self.partitions;
            let restored = |partition| partitions.contains_key(&partition);
            let next = match input.next_restored(restored).now_or_never() {
                Some(next) => next,
                None => {
                    let processing_deadline = self
                        .partitions
                        .values()
                        .filter_map(|state| {
                            timers::next_time(&state.store, TimeDomain::ProcessingTime)
                        })
                        .min();
                    let wake = match processing_deadline {
                        Some(deadline) => self.clock.sleep_until(deadline),
                        None => std::future::pending().boxed(),
                    };
                    let next_checkpoint = self.next_checkpoint;
                    let checkpoint_due = async move {
                        match next_checkpoint {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    };
                    let asked = &mut self.asked;
                    let scripted = &mut self.scripted;
                    let scripted_moved = async move {
                        match scripted {
                            Some(scripted) => scripted.changed().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        biased;
                        () = checkpoint_due => {
                            self.save(&input.partitions(), false)?;
                            continue;
                        }
                        Some(asked) = asked.recv() => {
                            let answer = self.answer(&asked.key, input).await?;
                            let _ = asked.reply.send(answer);
                            continue;
                        }
                        () = wake => continue,
                        // A scripted watermark moved: its event-time timers may be due.
                        _ = scripted_moved => {
                            self.report_watermark();
                            continue;
                        }
                        next = input.next_restored(restored) => next,
                    }
                }
            };
            let Some(next) = next? else {
                if !self.stopping.is_cancelled() {
                    // A bounded input ended: every event-time timer is due.
                    for state in self.partitions.values_mut() {
                        state.watermarks.finish();
                    }
                }
                self.ended = true;
                continue;
            };
            let message = match next {
                Next::Message(message) => message,
                Next::Revoked => {
                    // Partitions were taken away, perhaps only for a moment: one given back
                    // starts again at the committed offset, behind this state. Every
                    // partition gets a last checkpoint and is dropped, and is restored (and
                    // read from its checkpoint's offset) when its records come again.
                    self.save(&[], false)?;
                    continue;
                }
                Next::Unrestored(partition) => {
                    // Read the partition from where its state stands (the records before
                    // that are never decoded again), once its state is restored.
                    if let Some(offset) = self.restore(partition, input.name()).await?
                        && let Err(error) = input.rewind(partition, offset).await
                    {
                        if input.partitions().contains(&partition) {
                            return Err(error);
                        }
                        // A rebalance took the partition away during the restore: its
                        // new owner restores it; nothing changed here.
                        self.drop_partition(partition);
                    }
                    continue;
                }
            };
            let partition = message.partition();
            let time = event_time(&message);
            let state = self.partitions.get_mut(&partition).expect("restored above");
            if state.watermarks.observe(partition, time, now).is_some() {
                state.moved = true;
                self.report_watermark();
            }
            self.schedule_checkpoint();
            return Ok(Some(Keyed::Message(message)));
        }
    }

    /// Forgets a partition this member no longer holds (a warm copy is kept of it again).
    fn drop_partition(&mut self, partition: u32) {
        if let Some(state) = self.partitions.remove(&partition) {
            let entries = state.store.len();
            freeing::free(state, entries);
        }
        if let Some(standbys) = &self.standbys {
            standbys.release(partition);
        }
    }

    fn schedule_checkpoint(&mut self) {
        let every = self.checkpoint_every;
        self.next_checkpoint
            .get_or_insert_with(|| Instant::now() + every);
    }

    /// Takes the first timer due: event-time timers at their partition's watermark,
    /// processing-time timers at `now`.
    fn take_due_timer(&mut self, now: i64) -> Option<Timer> {
        let (scripted, ended) = (self.scripted.as_ref(), self.ended);
        self.partitions.iter_mut().find_map(|(partition, state)| {
            let watermark = Self::timer_watermark(scripted, ended, state);
            timers::take_due(
                &mut state.store,
                *partition,
                TimeDomain::EventTime,
                watermark,
            )
            .or_else(|| {
                timers::take_due(
                    &mut state.store,
                    *partition,
                    TimeDomain::ProcessingTime,
                    now,
                )
            })
        })
    }

    /// Restores `partition` from its last checkpoint and its changelog; returns the offset
    /// `inlet` resumes the partition at, if it was checkpointed.
    async fn restore(&mut self, partition: u32, inlet: &str) -> Result<Option<u64>> {
        let copy = self
            .standbys
            .as_ref()
            .and_then(|standbys| standbys.take(partition));
        let restored = self.checkpoints.restore_partition(partition).await?;
        let ranges = restored.changelog();
        // A warm copy of the same generation of ranges has read the records before its
        // position already.
        let (mut store, reading) = match copy {
            Some(copy) if copy.follows(ranges) => (
                copy.store,
                Reading {
                    from: Some(copy.position),
                    to: None,
                },
            ),
            stale => {
                // A copy of another generation (a snapshot came since): of no use, and
                // maybe large.
                if let Some(stale) = stale {
                    let entries = stale.store.len();
                    freeing::free(stale, entries);
                }
                (PartitionStore::default(), Reading::default())
            }
        };
        let warm = reading.from.is_some();
        let replayed = changelog::replay(
            self.checkpoints.source(),
            partition,
            ranges,
            &mut store,
            reading,
        )
        .await?;
        self.restored_entries += replayed.applied + replayed.skipped;
        let mut watermarks = match restored.state() {
            Some(saved) => {
                let saved: Saved = serde_json::from_slice(saved).map_err(|error| {
                    Error::msg(format!(
                        "the last checkpoint of input partition {partition} is not a keyed-state checkpoint: {error}"
                    ))
                })?;
                saved.watermarks.with_strategy(self.strategy)
            }
            None => WatermarkHolder::new(self.strategy),
        };
        watermarks.add_partition(partition, self.clock.now_millis());
        // Which states the restored entries belong to is looked up when a query needs it:
        // a scan of every key would cost a takeover from a warm copy most of its time.
        self.stored_unnoted = true;
        if ranges.is_empty() || ranges.len() >= MAX_RANGES {
            // Start the changelog afresh: the first checkpoint holds the whole state.
            store.snapshot_next();
        }
        tracing::info!(
            partition,
            entries = store.len(),
            bytes = store.live_bytes(),
            applied = replayed.applied,
            skipped = replayed.skipped,
            warm,
            "restored the keyed state of an input partition"
        );
        self.partitions.insert(
            partition,
            PartitionState {
                store,
                watermarks,
                writer: unique_id(),
                moved: false,
            },
        );
        self.publish_size();
        Ok(restored.next_offset(inlet))
    }

    /// Checkpoints the partitions that changed (all with `everything`), and drops those not
    /// in `assigned` (taken away by a rebalance) after their last checkpoint.
    ///
    /// # Errors
    ///
    /// Exactly once, when partitions were taken away (see
    /// [`Checkpoints::check_revoked`]).
    fn save(&mut self, assigned: &[u32], everything: bool) -> Result<()> {
        let assigned: BTreeSet<u32> = assigned.iter().copied().collect();
        if !everything {
            let revoked: Vec<u32> = self
                .partitions
                .keys()
                .filter(|partition| !assigned.contains(partition))
                .copied()
                .collect();
            self.checkpoints.check_revoked(&revoked)?;
        }
        let now = self.clock.now_millis();
        let mut saves = Vec::new();
        let mut revoked = Vec::new();
        for (partition, state) in &mut self.partitions {
            let taken_away = !everything && !assigned.contains(partition);
            state.store.expire(now);
            if everything || taken_away || state.moved || state.store.has_changes() {
                let (entries, snapshot) = state.store.take_changes();
                let saved = serde_json::to_vec(&Saved {
                    watermarks: state.watermarks.clone(),
                })
                .expect("watermarks serialize");
                saves.push(PartitionSave {
                    partition: *partition,
                    state: saved.into(),
                    changes: Some(ChangelogBatch {
                        entries,
                        snapshot,
                        writer: state.writer,
                    }),
                });
                state.moved = false;
            }
            if taken_away {
                revoked.push(*partition);
            }
        }
        self.checkpoints.save_changes(saves);
        for partition in revoked {
            self.drop_partition(partition);
        }
        self.next_checkpoint = None;
        self.publish_size();
        Ok(())
    }
}

impl Drop for KeyedState {
    /// The partitions' state is freed on a thread of its own when it is large, so a
    /// stopping streamlet does not wait seconds for millions of entries to be freed.
    fn drop(&mut self) {
        let partitions = std::mem::take(&mut self.partitions);
        let entries = partitions.values().map(|state| state.store.len()).sum();
        freeing::free(partitions, entries);
    }
}
