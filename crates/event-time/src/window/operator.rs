//! [`WindowOperator`]: the per-key window state machine, driven by elements, watermarks and
//! processing time.

use std::fmt;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use super::changes::ChangedKeys;
use super::cx::Cx;
use super::geometry::Geometry;
use super::global::Global;
use super::pane_state::Fired;
use super::sessions::Sessions;
use super::sliced::Sliced;
use super::timers::Timers;
use super::trigger::Node;
use super::windows::gcd;
use super::{Aggregate, Pane, SpecError, WindowSpec, Windows};

/// What a key must be: cloneable, comparable and hashable. To checkpoint the operator,
/// keys are also serde types.
pub trait Key: Clone + Eq + Hash + Send + 'static {}

impl<T> Key for T where T: Clone + Eq + Hash + Send + 'static {}

/// What became of an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// It is in the state of its windows (or, for a sliding assignment with gaps, in none).
    Accepted,
    /// It is too late for every window it belongs to: their state is gone (their end plus
    /// the allowed lateness is behind the watermark). Send it to the late output.
    Late,
}

/// Windowed aggregation per key, in the Dataflow model: elements go into windows by event
/// time, panes fire by watermark (on time), by processing time or count (early, late), and
/// accumulate as the [`WindowSpec`] says.
///
/// The operator is pure: the caller passes each element with its key and event timestamp,
/// every new watermark, and the processing time, and collects the panes that fire. Panes
/// of one call come out in event-time order of their firing, keys in the order they
/// appeared, so the same calls always give the same panes.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{Count, Timing, Trigger, WindowOperator, WindowSpec};
///
/// const SPEC: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60))
///     .trigger(Trigger::on_time().early(Trigger::element_count(2)));
/// let mut counts = WindowOperator::new(SPEC, Count::<()>::new());
/// let mut panes = Vec::new();
/// counts.add("a", 1_000, &(), 0, &mut panes);
/// counts.add("a", 2_000, &(), 0, &mut panes); // the second element fires an early pane
/// counts.add("a", 3_000, &(), 0, &mut panes);
/// counts.advance_watermark(60_000, 0, &mut panes);
/// let fired: Vec<_> = panes.iter().map(|p| (p.timing, p.index, p.value)).collect();
/// assert_eq!(fired, [(Timing::Early, 0, 2), (Timing::OnTime, 1, 3)]);
/// ```
pub struct WindowOperator<K, A: Aggregate> {
    pub(crate) spec: WindowSpec,
    geometry: Geometry,
    /// Whether the trigger needs no state per window before the window's end.
    lazy: bool,
    aggregate: A,
    /// Whether the aggregate subtracts ([`Aggregate::subtract`]).
    subtracts: bool,
    pub(crate) state: State<K, A::Accumulator, A::Output>,
    fired: Vec<Fired<A::Output>>,
    /// The keys whose windows changed since the last checkpoint, when the state is kept in
    /// a changelog ([`track_changes`](Self::track_changes)).
    pub(crate) changes: Option<ChangedKeys<K>>,
}

/// Everything a checkpoint of the operator holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound(
    serialize = "K: Serialize, Acc: Serialize, Out: Serialize",
    deserialize = "K: Deserialize<'de> + Eq + Hash, Acc: Deserialize<'de>, Out: Deserialize<'de>"
))]
#[doc(hidden)] // what the streamlet helper checkpoints; opaque outside the engine
pub struct State<K, Acc, Out> {
    pub(crate) watermark: i64,
    #[serde(with = "pairs")]
    pub(crate) keys: KeyMap<K, KeyState<Acc, Out>>,
    pub(crate) event_timers: Timers<K>,
    pub(crate) processing_timers: Timers<K>,
}

/// The windows of one key and its live timer entries.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[doc(hidden)] // what the streamlet helper's state queries show
pub struct KeyState<Acc, Out> {
    store: Store<Acc, Out>,
    pub event_timer: Option<i64>,
    pub processing_timer: Option<i64>,
    /// Whether the key is in [`ChangedKeys`] (changes are tracked and it changed since the
    /// last checkpoint).
    #[serde(skip)]
    pub(crate) changed: bool,
    /// The bytes of the key's last changelog entry (when changes are tracked).
    #[serde(skip)]
    pub(crate) entry_bytes: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Store<Acc, Out> {
    Sliced(Sliced<Acc, Out>),
    Sessions(Sessions<Acc, Out>),
    Global(Global<Acc, Out>),
}

/// Calls the same method on whichever store it is.
macro_rules! on_store {
    ($store:expr, $store_var:ident => $call:expr) => {
        match $store {
            Store::Sliced($store_var) => $call,
            Store::Sessions($store_var) => $call,
            Store::Global($store_var) => $call,
        }
    };
}

impl<K: Key, A: Aggregate> WindowOperator<K, A> {
    /// An operator with no state and no watermark yet.
    ///
    /// # Panics
    ///
    /// If `spec` does not pass [`WindowSpec::check`], with its message: specs are
    /// constants, so this is a bug the first test run shows. [`try_new`](Self::try_new)
    /// returns the error instead.
    #[track_caller]
    pub fn new(spec: WindowSpec, aggregate: A) -> Self {
        match Self::try_new(spec, aggregate) {
            Ok(operator) => operator,
            Err(error) => panic!("invalid window spec: {error}"),
        }
    }

    /// An operator with no state and no watermark yet, if `spec` passes
    /// [`WindowSpec::check`].
    ///
    /// # Errors
    ///
    /// The [`SpecError`] `check` finds.
    #[allow(clippy::result_large_err)] // see SpecError
    pub fn try_new(spec: WindowSpec, aggregate: A) -> Result<Self, SpecError> {
        spec.check()?;
        let (size, slide) = spec.windows.size_and_slide();
        // The answer does not depend on the accumulators: ask once, with empty ones.
        let subtracts = aggregate.subtract(&mut aggregate.create(), &aggregate.create());
        let lazy = matches!(
            spec.trigger.node(0),
            Node::Watermark { early: false, .. } | Node::Never
        );
        Ok(WindowOperator {
            spec,
            geometry: Geometry {
                size,
                slide,
                step: gcd(size, slide),
            },
            lazy,
            aggregate,
            subtracts,
            state: State {
                watermark: i64::MIN,
                keys: KeyMap::default(),
                event_timers: Timers::default(),
                processing_timers: Timers::default(),
            },
            fired: Vec::new(),
            changes: None,
        })
    }

    /// The spec.
    pub fn spec(&self) -> &WindowSpec {
        &self.spec
    }

    /// The watermark the operator has seen (`i64::MIN` before the first).
    pub fn watermark(&self) -> i64 {
        self.state.watermark
    }

    /// How many keys hold window state.
    pub fn key_count(&self) -> usize {
        self.state.keys.len()
    }

    /// When processing-time triggers next need
    /// [`advance_processing_time`](Self::advance_processing_time).
    pub fn next_processing_deadline(&self) -> Option<i64> {
        self.state.processing_timers.first()
    }

    /// Adds an element of `key` with event time `timestamp`, arriving at processing time
    /// `now`; panes it fires (early, or late with the late trigger) go to `out`.
    pub fn add(
        &mut self,
        key: K,
        timestamp: i64,
        input: &A::Input,
        now: i64,
        out: &mut Vec<Pane<K, A::Output>>,
    ) -> Added {
        let watermark = self.state.watermark;
        let lateness = self.spec.allowed_lateness;
        let late = match self.spec.windows {
            Windows::Session { gap } => {
                timestamp.saturating_add(gap).saturating_add(lateness) <= watermark
            }
            Windows::Global => false,
            _ => self.geometry.is_late(timestamp, lateness, watermark),
        };
        if late {
            return Added::Late;
        }
        let state = match self.state.keys.get_mut(&key) {
            Some(state) => state,
            None => self
                .state
                .keys
                .entry(key.clone())
                .or_insert_with(|| KeyState {
                    store: match self.spec.windows {
                        Windows::Session { .. } => Store::Sessions(Sessions::new()),
                        Windows::Global => Store::Global(Global::new(self.aggregate.create())),
                        _ => Store::Sliced(Sliced::new()),
                    },
                    event_timer: None,
                    processing_timer: None,
                    changed: false,
                    entry_bytes: 0,
                }),
        };
        if let Some(changes) = &mut self.changes {
            changes.note(&key, &mut state.changed);
        }
        let mut cx = Cx {
            aggregate: &self.aggregate,
            spec: &self.spec,
            geometry: self.geometry,
            subtracts: self.subtracts,
            lazy: self.lazy,
            watermark,
            target_watermark: watermark,
            now,
            fired: &mut self.fired,
            event_hint: None,
            processing_hint: None,
        };
        on_store!(&mut state.store, store => store.add(&mut cx, timestamp, input));
        let (event, processing) = (cx.event_hint, cx.processing_hint);
        register(
            &mut self.state.event_timers,
            &mut state.event_timer,
            event,
            &key,
        );
        register(
            &mut self.state.processing_timers,
            &mut state.processing_timer,
            processing,
            &key,
        );
        emit(&mut self.fired, &key, out);
        Added::Accepted
    }

    /// Moves the watermark to `watermark` (if it is ahead), firing on-time panes of the
    /// windows it completes and dropping the state of windows past their allowed lateness.
    /// `i64::MAX` completes every window: the end of a bounded input.
    pub fn advance_watermark(
        &mut self,
        watermark: i64,
        now: i64,
        out: &mut Vec<Pane<K, A::Output>>,
    ) {
        if watermark <= self.state.watermark {
            return;
        }
        self.state.watermark = watermark;
        while let Some((time, keys)) = self.state.event_timers.pop_due(watermark) {
            for key in keys {
                let Some(state) = self.state.keys.get_mut(&key) else {
                    continue;
                };
                if state.event_timer != Some(time) {
                    continue; // superseded by an earlier registration
                }
                state.event_timer = None;
                if let Some(changes) = &mut self.changes {
                    changes.note(&key, &mut state.changed);
                }
                // Run the key at the timer's time, so panes come out in event-time order.
                let mut cx = Cx {
                    aggregate: &self.aggregate,
                    spec: &self.spec,
                    geometry: self.geometry,
                    subtracts: self.subtracts,
                    lazy: self.lazy,
                    watermark: time,
                    target_watermark: watermark,
                    now,
                    fired: &mut self.fired,
                    event_hint: None,
                    processing_hint: None,
                };
                let next = on_store!(&mut state.store, store => store.on_watermark(&mut cx));
                let processing = cx.processing_hint;
                emit(&mut self.fired, &key, out);
                let empty = on_store!(&state.store, store => store.is_empty());
                if empty {
                    let entry_bytes = state.entry_bytes;
                    self.state.keys.remove(&key);
                    if let Some(changes) = &mut self.changes {
                        changes.forget(entry_bytes);
                    }
                    continue;
                }
                register(
                    &mut self.state.processing_timers,
                    &mut state.processing_timer,
                    processing,
                    &key,
                );
                if let Some(next) = next {
                    state.event_timer = Some(next);
                    self.state.event_timers.push(next, key);
                }
            }
        }
    }

    /// Tells the operator the processing time, firing early and late panes whose delay
    /// has passed.
    pub fn advance_processing_time(&mut self, now: i64, out: &mut Vec<Pane<K, A::Output>>) {
        while let Some((time, keys)) = self.state.processing_timers.pop_due(now) {
            for key in keys {
                let Some(state) = self.state.keys.get_mut(&key) else {
                    continue;
                };
                if state.processing_timer != Some(time) {
                    continue;
                }
                state.processing_timer = None;
                if let Some(changes) = &mut self.changes {
                    changes.note(&key, &mut state.changed);
                }
                let mut cx = Cx {
                    aggregate: &self.aggregate,
                    spec: &self.spec,
                    geometry: self.geometry,
                    subtracts: self.subtracts,
                    lazy: self.lazy,
                    watermark: self.state.watermark,
                    target_watermark: self.state.watermark,
                    now,
                    fired: &mut self.fired,
                    event_hint: None,
                    processing_hint: None,
                };
                on_store!(&mut state.store, store => store.on_processing_time(&mut cx));
                let processing = cx.processing_hint;
                register(
                    &mut self.state.processing_timers,
                    &mut state.processing_timer,
                    processing,
                    &key,
                );
                emit(&mut self.fired, &key, out);
            }
        }
    }
}

/// Registers `key` at `hint` unless it already has an entry at or before it.
fn register<K: Clone>(timers: &mut Timers<K>, live: &mut Option<i64>, hint: Option<i64>, key: &K) {
    if let Some(hint) = hint
        && live.is_none_or(|at| hint < at)
    {
        *live = Some(hint);
        timers.push(hint, key.clone());
    }
}

fn emit<K: Clone, V>(fired: &mut Vec<Fired<V>>, key: &K, out: &mut Vec<Pane<K, V>>) {
    out.extend(fired.drain(..).map(|fired| Pane {
        key: key.clone(),
        window_start: fired.window.start,
        window_end: fired.window.end,
        timing: fired.info.timing,
        index: fired.info.index,
        on_time_index: fired.info.on_time_index,
        is_first: fired.info.is_first,
        is_last: fired.info.is_last,
        retraction: fired.info.retraction,
        timestamp: fired.timestamp,
        value: fired.value,
    }));
}

impl<K: Key, Acc: Clone, Out: Clone> State<K, Acc, Out> {
    /// Fills in what a checkpoint from before panes had metadata lacks (see
    /// [`PaneState::upgrade`](super::pane_state::PaneState::upgrade)).
    pub(crate) fn upgrade(&mut self, spec: &WindowSpec) {
        let (size, _) = spec.windows.size_and_slide();
        for state in self.keys.values_mut() {
            match &mut state.store {
                Store::Sliced(store) => store.upgrade(&spec.trigger, size),
                Store::Sessions(store) => store.upgrade(&spec.trigger),
                Store::Global(store) => store.upgrade(&spec.trigger),
            }
        }
    }
}

impl<K, A: Aggregate> fmt::Debug for WindowOperator<K, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowOperator")
            .field("spec", &self.spec)
            .field("watermark", &self.state.watermark)
            .field("keys", &self.state.keys.len())
            .finish_non_exhaustive()
    }
}

/// The windows of every key. Keys are hashed with foldhash, seeded per map: SipHash, the
/// standard library's, took 7% of a SQL q5's own instructions hashing its group keys (each a
/// list of values) for every row.
pub(crate) type KeyMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

/// A map as a list of pairs, so keys need not be strings in JSON.
mod pairs {
    use std::hash::Hash;

    use super::KeyMap as HashMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &HashMap<K, V>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter())
    }

    pub(super) fn deserialize<'de, K, V, D>(deserializer: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}
