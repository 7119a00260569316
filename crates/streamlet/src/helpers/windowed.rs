//! [`WindowedAggregate`]: aggregate one inlet per key in event-time windows, emitting
//! [`Pane`]s to an outlet.

use std::time::Duration;

use futures::FutureExt;
use runnel_blueprint::descriptor::Delivery;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::throttled_warning::{ThrottledWarning, WARNING_INTERVAL_MILLIS};
use crate::watermark::{WatermarkHolder, Watermarks};
use crate::window::{Added, Aggregate, Key, Pane, State, WindowOperator, WindowSpec};
use crate::{
    Checkpoints, Context, Data, Error, Inlet, Outgoing, Outlet, OutletSender, Result, Shape,
    Streamlet,
};

/// A streamlet that aggregates the values of one inlet per key in event-time windows and
/// sends each pane that fires to an outlet, as a [`Pane`] record with its window and what
/// it is among the window's panes (timing, index, first, last), which its headers repeat
/// for consumers that do not decode values (`docs/wire-format.md`).
///
/// The event time of a value is its record's timestamp, or a field
/// ([`event_time`](Self::event_time)). Watermarks are generated per input partition
/// ([`watermarks`](Self::watermarks), bounded out-of-orderness by default) and combined
/// as the minimum over the partitions that are not idle. Values too late for every window
/// they belong to go to the late output ([`late_output`](Self::late_output)) and are
/// counted; without one they are counted and logged. At the end of a bounded input every
/// window fires.
///
/// The window state and the watermarks are checkpointed with the input offsets they
/// reflect ([`checkpoint_every`](Self::checkpoint_every), every second by default, and when
/// the streamlet stops), so a restart, even after `kill -9`, resumes without losing or
/// double-counting input. A checkpoint writes only the keys whose windows changed since the
/// last, one changelog entry per key, so no record holds the whole state and its cost
/// follows the keys that changed. Panes sent after the last checkpoint are sent again after a
/// crash, identical: same key, window, index and value when the input is replayed in the
/// same order (see `docs/event-time.md` for what is exactly-once and what at-least-once).
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::prelude::*;
/// use runnel_streamlet::window::{Pane, Sum, WindowSpec};
/// use runnel_streamlet::watermark::Watermarks;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Score { pub team: String, pub points: i64, pub time: i64 }
///
/// pub const SCORES: Inlet<Score> = Inlet::new("in");
/// pub const TOTALS: Outlet<Pane<String, i64>> = Outlet::new("out").keyed_by(|p| p.key.clone());
/// pub const LATE: Outlet<Score> = Outlet::new("late");
/// /// Team totals per two minutes of event time.
/// pub const WINDOWS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120));
///
/// pub fn team_totals() -> impl Streamlet {
///     WindowedAggregate::new(SCORES, TOTALS, WINDOWS, Sum::of(|s: &Score| s.points))
///         .key_by(|s| s.team.clone())
///         .event_time(|s| s.time)
///         .watermarks(Watermarks::bounded(Duration::from_secs(30)))
///         .late_output(LATE)
/// }
/// # let _ = team_totals();
/// ```
pub struct WindowedAggregate<In, K, A: Aggregate> {
    inlet: Inlet<In>,
    outlet: Outlet<Pane<K, A::Output>>,
    late: Option<Outlet<In>>,
    spec: WindowSpec,
    aggregate: A,
    key: Option<fn(&In) -> K>,
    timestamp: Option<fn(&In) -> i64>,
    watermarks: Watermarks,
    checkpoint_every: Duration,
    delivery: Delivery,
    /// Makes each input partition's aggregate, when state is kept by partition.
    by_partition: Option<Box<dyn Template<A>>>,
    /// Whether to keep warm copies of the partitions other members hold.
    standby: bool,
    description: &'static str,
}

impl<In, K, A> WindowedAggregate<In, K, A>
where
    In: Data,
    K: Key + Default + Serialize + DeserializeOwned,
    A: Aggregate<Input = In>,
    Pane<K, A::Output>: Data,
{
    /// Aggregates `inlet` with `aggregate` in the windows of `spec`, sending panes to
    /// `outlet`. Without [`key_by`](Self::key_by) every value has the key
    /// `K::default()`.
    ///
    /// # Panics
    ///
    /// If `spec` does not pass [`WindowSpec::check`], with the check's message and the
    /// caller's file and line: the streamlet cannot run, and `describe`, `verify` and `run`
    /// all stop there. Declare specs with [`WindowSpec::checked`] to catch it at compile
    /// time.
    ///
    /// ```should_panic
    /// use std::time::Duration;
    /// use runnel_streamlet::prelude::*;
    /// use runnel_streamlet::window::{Count, Pane, Trigger, WindowSpec};
    ///
    /// const IN: Inlet<i64> = Inlet::new("in");
    /// const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
    /// // A trigger that finishes after 100 elements would drop the rest of each window.
    /// const ONCE: WindowSpec =
    ///     WindowSpec::tumbling(Duration::from_secs(60)).trigger(Trigger::element_count(100));
    /// let _ = WindowedAggregate::new(IN, OUT, ONCE, Count::new());
    /// ```
    #[track_caller]
    pub fn new(
        inlet: Inlet<In>,
        outlet: Outlet<Pane<K, A::Output>>,
        spec: WindowSpec,
        aggregate: A,
    ) -> Self {
        if let Err(error) = spec.check() {
            panic!(
                "invalid window spec for the windowed aggregate of inlet '{}': {error}",
                inlet.name()
            );
        }
        WindowedAggregate {
            inlet,
            outlet,
            late: None,
            spec,
            aggregate,
            key: None,
            timestamp: None,
            watermarks: Watermarks::default(),
            checkpoint_every: Duration::from_secs(1),
            delivery: Delivery::AtLeastOnce,
            by_partition: None,
            standby: false,
            description: "",
        }
    }

    /// Checkpoints the state at most this often while records arrive (default 1 s). A
    /// shorter interval means less to replay after a crash and more checkpoint writes.
    pub fn checkpoint_every(mut self, interval: Duration) -> Self {
        self.checkpoint_every = interval;
        self
    }

    /// Makes the streamlet exactly-once: every pane (and late value) it sends between two
    /// checkpoints is committed in one transaction with the checkpoint and the input
    /// offsets it reflects, so readers that read committed see each pane once, even after
    /// crashes. Panes become visible at checkpoints ([`checkpoint_every`](Self::checkpoint_every)),
    /// not as they fire. Needs a backplane with transactions (the embedded log, Kafka).
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_streamlet::prelude::*;
    /// use runnel_streamlet::window::{Count, Pane, WindowSpec};
    /// use runnel_blueprint::descriptor::Delivery;
    ///
    /// const IN: Inlet<String> = Inlet::new("in");
    /// const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
    /// const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
    ///
    /// let counts = WindowedAggregate::new(IN, OUT, MINUTE, Count::new())
    ///     .key_by(|word: &String| word.clone())
    ///     .exactly_once();
    /// assert_eq!(counts.shape().delivery(), Delivery::ExactlyOnce);
    /// ```
    pub fn exactly_once(mut self) -> Self {
        self.delivery = Delivery::ExactlyOnce;
        self
    }

    /// Keeps the window state by input partition, so the streamlet scales out: each member
    /// of its consumer group holds, checkpoints and restores only the windows of the keys
    /// arriving on its partitions. Each partition has its own watermark, so a window fires
    /// when the event time of its partition passes it, however the partitions are spread
    /// over processes.
    ///
    /// The windows are then keyed state (`Shape::keyed_state`): each checkpoint writes only
    /// the keys whose windows changed since the last to the changelog topic
    /// `<app>.<instance>.changelog` (one entry per key: its windows, accumulators and
    /// timers), so its cost follows the keys that changed, not the state's size, and no
    /// record holds more than one key's windows (`docs/state.md`). Checkpoints written
    /// before, holding a partition's whole state, restore too.
    ///
    /// The input must be partitioned by
    /// the key ([`key_by`](Self::key_by)): the producing outlet keyed by the same key, so
    /// every value of a key arrives on one partition; a key spread over partitions would be
    /// aggregated once per partition.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_streamlet::prelude::*;
    /// use runnel_streamlet::window::{Count, Pane, WindowSpec};
    ///
    /// const IN: Inlet<String> = Inlet::new("in");
    /// const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
    /// const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
    ///
    /// let counts = WindowedAggregate::new(IN, OUT, MINUTE, Count::new())
    ///     .key_by(|word: &String| word.clone())
    ///     .state_by_partition();
    /// assert!(counts.shape().is_checkpointed_by_partition() && counts.shape().has_keyed_state());
    /// ```
    pub fn state_by_partition(mut self) -> Self
    where
        A: Clone,
    {
        self.by_partition = Some(Box::new(self.aggregate.clone()));
        self
    }

    /// Keeps the window state by input partition ([`state_by_partition`](Self::state_by_partition))
    /// and a warm copy of the windows of the partitions other members hold (a standby),
    /// brought up to their owners' last checkpoints every checkpoint interval (at least
    /// every 100 ms), so that taking one over replays only the changelog records written
    /// since instead of every key's windows. It costs the memory of the copies (with every
    /// member keeping them, each holds every partition's windows) and reading every
    /// partition's checkpoint and changelog.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_streamlet::prelude::*;
    /// use runnel_streamlet::window::{Count, Pane, WindowSpec};
    ///
    /// const IN: Inlet<String> = Inlet::new("in");
    /// const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
    /// const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
    ///
    /// let counts = WindowedAggregate::new(IN, OUT, MINUTE, Count::new())
    ///     .key_by(|word: &String| word.clone())
    ///     .warm_standby();
    /// assert!(counts.shape().has_keyed_state());
    /// ```
    pub fn warm_standby(mut self) -> Self
    where
        A: Clone,
    {
        self.standby = true;
        self.state_by_partition()
    }

    /// Keys values with `key`: each key has its own windows.
    pub fn key_by(mut self, key: fn(&In) -> K) -> Self {
        self.key = Some(key);
        self
    }

    /// Takes event time from the value (milliseconds since the Unix epoch) instead of the
    /// record's timestamp.
    pub fn event_time(mut self, timestamp: fn(&In) -> i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    /// Sets how watermarks are generated (default: 5 s out of order, idle after a minute).
    pub fn watermarks(mut self, watermarks: Watermarks) -> Self {
        self.watermarks = watermarks;
        self
    }

    /// Sends values that are too late for all their windows to `late`.
    pub fn late_output(mut self, late: Outlet<In>) -> Self {
        self.late = Some(late);
        self
    }

    /// Says what the streamlet does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

impl<In, K, A> Streamlet for WindowedAggregate<In, K, A>
where
    In: Data,
    K: Key + Default + Serialize + DeserializeOwned,
    A: Aggregate<Input = In>,
    Pane<K, A::Output>: Data,
{
    fn shape(&self) -> Shape {
        let shape = Shape::new()
            .describe(self.description)
            .inlet(self.inlet)
            .outlet(self.outlet)
            .with_delivery(self.delivery);
        let shape = if self.by_partition.is_some() {
            shape.keyed_state()
        } else {
            shape.checkpointed_with_changelog()
        };
        match self.late {
            Some(late) => shape.outlet(late),
            None => shape,
        }
    }

    async fn run(mut self, mut ctx: Context) -> Result<()> {
        if let Some(make) = self.by_partition.take() {
            return by_partition::run(self, make, ctx).await;
        }
        let mut input = ctx.inlet(self.inlet);
        let output = ctx.outlet(self.outlet);
        let mut late = LateRecords::new(self.late.map(|late| ctx.outlet(late)));
        let clock = ctx.clock().clone();
        let mut scripted = ctx.scripted_watermarks();
        let mut operator = WindowOperator::new(self.spec, self.aggregate);
        let mut watermarks = WatermarkHolder::new(self.watermarks);
        let checkpoints = ctx.checkpoints();
        if let Some(checkpoints) = &checkpoints {
            operator.track_changes();
            checkpoints.replay_changelog(&mut operator).await?;
            watermarks = restore_record(&mut operator, checkpoints.restored(), self.watermarks)
                .map_err(|error| {
                    Error::msg(format!("the last checkpoint does not decode: {error}"))
                })?;
            if checkpoints.snapshot_due() {
                operator.snapshot_next();
            }
        }
        let assigned = input.assigned_partitions().await;
        let start = clock.now_millis();
        for partition in assigned {
            watermarks.add_partition(partition, start);
        }
        let mut next_checkpoint: Option<Instant> = None;
        if let Some(scripted) = &mut scripted {
            operator.advance_watermark(scripted.current(), start, &mut Vec::new());
        }
        let mut panes = Vec::new();
        loop {
            let idle = watermarks
                .next_idle_deadline()
                .filter(|_| scripted.is_none());
            let deadline = operator
                .next_processing_deadline()
                .into_iter()
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
                    save(checkpoints.as_ref(), &mut operator, &watermarks);
                    next_checkpoint = None;
                }
                message = input.next() => {
                    let Some(message) = message? else { break };
                    let windows = Windows {
                        operator: &mut operator,
                        watermarks: &mut watermarks,
                        follows_script: scripted.is_some(),
                        key: self.key,
                        timestamp: self.timestamp,
                    };
                    let now = clock.now_millis();
                    windows.add(&ctx, message, &mut late, &output, now, &mut panes).await?;
                    next_checkpoint.get_or_insert_with(|| Instant::now() + self.checkpoint_every);
                }
                watermark = scripted_change => {
                    operator.advance_watermark(watermark, clock.now_millis(), &mut panes);
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + self.checkpoint_every);
                    }
                }
                () = wake => {
                    let now = clock.now_millis();
                    operator.advance_processing_time(now, &mut panes);
                    if scripted.is_none() && let Some(watermark) = watermarks.check_idle(now) {
                        operator.advance_watermark(watermark, now, &mut panes);
                    }
                    // Panes fired without new input are checkpointed too: an exactly-once
                    // instance's panes become visible only with a checkpoint.
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + self.checkpoint_every);
                    }
                }
            }
            ctx.report_watermark(operator.watermark());
        }
        if !ctx.is_stopping() {
            // A bounded input ended: every window is complete.
            operator.advance_watermark(watermarks.finish(), clock.now_millis(), &mut panes);
            send(&output, &mut panes).await?;
        }
        save(checkpoints.as_ref(), &mut operator, &watermarks);
        Ok(())
    }
}

mod by_partition;
mod held;

/// Makes aggregates like one it holds: each input partition's, and each warm copy's.
trait Template<A>: Send {
    /// A new aggregate.
    fn make(&self) -> A;

    /// Another template making the same aggregates.
    fn boxed(&self) -> Box<dyn Template<A>>;
}

impl<A: Clone + Send + 'static> Template<A> for A {
    fn make(&self) -> A {
        self.clone()
    }

    fn boxed(&self) -> Box<dyn Template<A>> {
        Box::new(self.clone())
    }
}

/// The windows a message goes to (one operator and the watermarks it follows), and how a
/// value's key and event time are found.
struct Windows<'a, In, K, A: Aggregate> {
    operator: &'a mut WindowOperator<K, A>,
    watermarks: &'a mut WatermarkHolder,
    /// Whether watermarks come from the test kit's script rather than from event times.
    follows_script: bool,
    key: Option<fn(&In) -> K>,
    timestamp: Option<fn(&In) -> i64>,
}

impl<In, K, A> Windows<'_, In, K, A>
where
    In: Data,
    K: Key + Default + Serialize + DeserializeOwned,
    A: Aggregate<Input = In>,
    Pane<K, A::Output>: Data,
{
    /// Adds `message` at processing time `now`: a late value to the late output (or the
    /// log), the watermark moved on by its event time, the panes that fire sent; then
    /// commits it.
    async fn add(
        self,
        ctx: &Context,
        message: crate::Message<In>,
        late: &mut LateRecords<In>,
        output: &OutletSender<Pane<K, A::Output>>,
        now: i64,
        panes: &mut Vec<Pane<K, A::Output>>,
    ) -> Result<()> {
        let windows = self;
        let value = message.value();
        let timestamp = windows.timestamp.map_or(message.timestamp(), |f| f(value));
        let key = windows.key.map_or_else(K::default, |f| f(value));
        if windows.operator.add(key, timestamp, value, now, panes) == Added::Late {
            ctx.count_late(1);
            match &late.output {
                Some(output) => {
                    output
                        .send_record(Outgoing::new(value).timestamp(timestamp))
                        .await?;
                }
                None => {
                    if let Some(suppressed) = late.dropped_warning.occurred(now) {
                        tracing::warn!(
                            topic = message.topic(),
                            partition = message.partition(),
                            offset = message.offset(),
                            timestamp,
                            watermark = windows.operator.watermark(),
                            "dropping a record that is too late for its windows (no late output); {suppressed} more dropped since the last such warning, which is logged at most every {} s (the instance's `late` metric counts them all)",
                            WARNING_INTERVAL_MILLIS / 1000
                        );
                    }
                }
            }
        }
        if !windows.follows_script
            && let Some(watermark) = windows
                .watermarks
                .observe(message.partition(), timestamp, now)
        {
            windows.operator.advance_watermark(watermark, now, panes);
        }
        send(output, panes).await?;
        message.commit();
        Ok(())
    }
}

/// Where values too late for all their windows go: the late output, or (without one) a
/// warning, throttled so that a flood of late records logs a line every few seconds.
struct LateRecords<In> {
    output: Option<OutletSender<In>>,
    dropped_warning: ThrottledWarning,
}

impl<In> LateRecords<In> {
    fn new(output: Option<OutletSender<In>>) -> Self {
        LateRecords {
            output,
            dropped_warning: ThrottledWarning::new(WARNING_INTERVAL_MILLIS),
        }
    }
}

/// What a checkpoint record holds beside the changelog (for each partition, when the state
/// is kept by partition).
#[derive(Serialize)]
struct Saved<'a> {
    /// The operator's watermark.
    watermark: i64,
    watermarks: &'a WatermarkHolder,
}

/// A checkpoint record's value as read back: [`Saved`], or the whole state of the windows
/// as checkpoints held it before the windows had a changelog.
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

/// The checkpoint record's value of a windows' state whose changelog entries were just
/// replayed into `operator`.
fn saved_record<K, A>(operator: &WindowOperator<K, A>, watermarks: &WatermarkHolder) -> Vec<u8>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    let saved = Saved {
        watermark: operator.watermark(),
        watermarks,
    };
    serde_json::to_vec(&saved).expect("watermarks serialize")
}

/// Restores what checkpoint record `record` holds beside the changelog into `operator`,
/// whose changelog entries were just replayed, registers its keys' timers again, and returns
/// the watermarks (following `strategy`). A record written before the windows had a
/// changelog holds the whole state: that replaces the operator's, and the next checkpoint is
/// a snapshot.
fn restore_record<K, A>(
    operator: &mut WindowOperator<K, A>,
    record: Option<&[u8]>,
    strategy: Watermarks,
) -> serde_json::Result<WatermarkHolder>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    let mut watermarks = WatermarkHolder::new(strategy);
    if let Some(record) = record {
        let saved: Restoring<K, A::Accumulator, A::Output> = serde_json::from_slice(record)?;
        if let Some(whole) = saved.operator {
            operator.set_state(whole);
            operator.snapshot_next();
        }
        if let Some(watermark) = saved.watermark {
            operator.set_watermark(watermark);
        }
        watermarks = saved.watermarks.with_strategy(strategy);
    }
    operator.rebuild_timers();
    Ok(watermarks)
}

/// Writes the keys whose windows changed since the last checkpoint to the changelog, with
/// the watermarks in the checkpoint record.
fn save<K, A>(
    checkpoints: Option<&Checkpoints>,
    operator: &mut WindowOperator<K, A>,
    watermarks: &WatermarkHolder,
) where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    if let Some(checkpoints) = checkpoints {
        let (entries, snapshot) = operator.take_changes();
        checkpoints.save_with_changes(saved_record(operator, watermarks), entries, snapshot);
    }
}

/// Sends panes, each stamped with its event time (the last millisecond of its window) and
/// with its window and pane metadata in headers (`PaneInfo::HEADERS`). Says whether there
/// were any.
async fn send<K, V>(output: &OutletSender<Pane<K, V>>, panes: &mut Vec<Pane<K, V>>) -> Result<bool>
where
    Pane<K, V>: Data,
{
    let any = !panes.is_empty();
    for pane in panes.drain(..) {
        let mut record = Outgoing::new(&pane).timestamp(pane.timestamp);
        for (header, value) in pane.info().header_values(pane.window()) {
            record = record.header(header, value);
        }
        output.send_record(record).await?;
    }
    Ok(any)
}

impl<In, K, A: Aggregate> std::fmt::Debug for WindowedAggregate<In, K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedAggregate")
            .field("inlet", &self.inlet)
            .field("spec", &self.spec)
            .field("watermarks", &self.watermarks)
            .finish_non_exhaustive()
    }
}
