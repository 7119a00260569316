//! [`InstanceStatus`]: the live state of one streamlet instance, kept by its supervisor.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_status::InstanceState;
use runnel_streamlet::InstanceMetrics;

/// A port of an instance and the topic it is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortBinding {
    /// The port name.
    pub port: String,
    /// The topic name.
    pub topic: String,
    /// The consumer group, for inlets.
    pub group: Option<String>,
}

/// The live status of one streamlet instance, shared by its supervisor and the views.
#[derive(Debug)]
pub struct InstanceStatus {
    /// The instance name.
    pub name: String,
    /// The streamlet type.
    pub type_name: String,
    /// The counters of the instance (they survive restarts).
    pub metrics: Arc<InstanceMetrics>,
    /// The inlets with their topics and consumer groups.
    pub inlets: Vec<PortBinding>,
    /// The outlets with their topics.
    pub outlets: Vec<PortBinding>,
    state: Mutex<InstanceState>,
    failures: Mutex<Failures>,
}

#[derive(Debug, Default)]
struct Failures {
    by_kind: BTreeMap<&'static str, u32>,
    last: Option<String>,
    /// When the recent failures happened, oldest first, for restart-loop detection.
    recent: VecDeque<Instant>,
}

/// How long failures count as recent.
const RECENT: Duration = Duration::from_secs(60);

impl InstanceStatus {
    /// A starting instance.
    pub fn new(
        name: &str,
        type_name: &str,
        metrics: Arc<InstanceMetrics>,
        inlets: Vec<PortBinding>,
        outlets: Vec<PortBinding>,
    ) -> Self {
        InstanceStatus {
            name: name.to_owned(),
            type_name: type_name.to_owned(),
            metrics,
            inlets,
            outlets,
            state: Mutex::new(InstanceState::Starting),
            failures: Mutex::default(),
        }
    }

    /// The current state.
    pub fn state(&self) -> InstanceState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_state(&self, state: InstanceState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    /// How often the instance was restarted after a failure.
    pub fn restarts(&self) -> u32 {
        self.failures().by_kind.values().sum()
    }

    /// Restarts by the kind of failure: `internal`, `external`, `bad_data`, `panic`.
    pub fn restarts_by_kind(&self) -> BTreeMap<&'static str, u32> {
        self.failures().by_kind.clone()
    }

    /// The last failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.failures().last.clone()
    }

    pub(crate) fn record_failure(&self, kind: &'static str, message: String) {
        let mut failures = self.failures();
        *failures.by_kind.entry(kind).or_default() += 1;
        failures.last = Some(message);
        let now = Instant::now();
        failures.recent.push_back(now);
        while failures
            .recent
            .front()
            .is_some_and(|at| now.duration_since(*at) > RECENT)
        {
            failures.recent.pop_front();
        }
    }

    /// Failures within the last `window` (at most a minute back).
    pub fn failures_within(&self, window: Duration) -> u32 {
        let now = Instant::now();
        self.failures()
            .recent
            .iter()
            .filter(|at| now.duration_since(**at) <= window)
            .count() as u32
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
