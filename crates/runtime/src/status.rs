//! What a run looks like right now: per-instance state, counters, rates and consumer lag,
//! sampled periodically into a [`Snapshot`] that the live view (and later the admin API) reads.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_backend::Backend;
use runnel_streamlet::InstanceMetrics;
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The life-cycle state of a streamlet instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceState {
    /// Connecting its ports.
    Starting,
    /// Processing.
    Running,
    /// Failed; waiting out the backoff before the next start.
    Restarting,
    /// Returned on its own: its inputs ended (or, for a source, it produced everything).
    Finished,
    /// Stopped by a shutdown request.
    Stopped,
}

impl InstanceState {
    /// The name shown in the live view.
    pub fn label(self) -> &'static str {
        match self {
            InstanceState::Starting => "starting",
            InstanceState::Running => "running",
            InstanceState::Restarting => "restarting",
            InstanceState::Finished => "finished",
            InstanceState::Stopped => "stopped",
        }
    }
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
    /// Each inlet's topic and consumer group, to compute lag.
    pub inlets: Vec<(String, String)>,
    state: Mutex<InstanceState>,
    restarts: AtomicU32,
    last_error: Mutex<Option<String>>,
}

impl InstanceStatus {
    /// A starting instance.
    pub fn new(
        name: &str,
        type_name: &str,
        metrics: Arc<InstanceMetrics>,
        inlets: Vec<(String, String)>,
    ) -> Self {
        InstanceStatus {
            name: name.to_owned(),
            type_name: type_name.to_owned(),
            metrics,
            inlets,
            state: Mutex::new(InstanceState::Starting),
            restarts: AtomicU32::new(0),
            last_error: Mutex::new(None),
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
        self.restarts.load(Ordering::Relaxed)
    }

    /// The last failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn record_failure(&self, message: String) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(message);
    }
}

/// The state of a run at one moment.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Snapshot {
    /// The app name.
    pub app: String,
    /// Every instance, in blueprint order.
    pub instances: Vec<InstanceSnapshot>,
}

/// One instance at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceSnapshot {
    /// The instance name.
    pub name: String,
    /// The streamlet type.
    pub type_name: String,
    /// Its state.
    pub state: InstanceState,
    /// Restarts after failures.
    pub restarts: u32,
    /// Records read so far.
    pub records_in: u64,
    /// Records sent so far.
    pub records_out: u64,
    /// Records read per second since the previous sample.
    pub rate_in: f64,
    /// Records sent per second since the previous sample.
    pub rate_out: f64,
    /// Records on its input topics not yet committed by its consumer groups.
    pub lag: u64,
    /// Records sent to the dead-letter topic.
    pub dead_lettered: u64,
    /// The last failure, if any.
    pub last_error: Option<String>,
}

/// Samples every instance of a run into [`Snapshot`]s.
#[derive(Debug)]
pub struct StatusBoard {
    app: String,
    instances: Vec<Arc<InstanceStatus>>,
    backend: Arc<dyn Backend>,
    latest: watch::Sender<Snapshot>,
}

impl StatusBoard {
    /// A board over these instances.
    pub fn new(app: &str, instances: Vec<Arc<InstanceStatus>>, backend: Arc<dyn Backend>) -> Self {
        let latest = watch::Sender::new(Snapshot {
            app: app.to_owned(),
            instances: Vec::new(),
        });
        StatusBoard {
            app: app.to_owned(),
            instances,
            backend,
            latest,
        }
    }

    /// The instances on the board.
    pub fn instances(&self) -> &[Arc<InstanceStatus>] {
        &self.instances
    }

    /// The latest snapshot, updated by [`StatusBoard::sample_every`].
    pub fn latest(&self) -> watch::Receiver<Snapshot> {
        self.latest.subscribe()
    }

    /// Replaces the latest snapshot (the final one of a run, for example).
    pub fn publish(&self, snapshot: Snapshot) {
        self.latest.send_replace(snapshot);
    }

    /// Samples every `interval` until `stop` fires.
    pub async fn sample_every(&self, interval: Duration, stop: CancellationToken) {
        let mut previous: Option<(Instant, Vec<(u64, u64)>)> = None;
        loop {
            let snapshot = self.sample(previous.as_ref()).await;
            previous = Some((
                Instant::now(),
                snapshot
                    .instances
                    .iter()
                    .map(|i| (i.records_in, i.records_out))
                    .collect(),
            ));
            self.latest.send_replace(snapshot);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
        }
    }

    /// Takes one snapshot; rates are relative to `previous` (when and what was counted).
    pub async fn sample(&self, previous: Option<&(Instant, Vec<(u64, u64)>)>) -> Snapshot {
        let mut instances = Vec::with_capacity(self.instances.len());
        for (index, status) in self.instances.iter().enumerate() {
            let (records_in, records_out) =
                (status.metrics.records_in(), status.metrics.records_out());
            let (rate_in, rate_out) = match previous {
                Some((at, counts)) if index < counts.len() => {
                    let seconds = at.elapsed().as_secs_f64().max(0.001);
                    let (was_in, was_out) = counts[index];
                    (
                        records_in.saturating_sub(was_in) as f64 / seconds,
                        records_out.saturating_sub(was_out) as f64 / seconds,
                    )
                }
                _ => (0.0, 0.0),
            };
            instances.push(InstanceSnapshot {
                name: status.name.clone(),
                type_name: status.type_name.clone(),
                state: status.state(),
                restarts: status.restarts(),
                records_in,
                records_out,
                rate_in,
                rate_out,
                lag: self.lag(status).await,
                dead_lettered: status.metrics.dead_lettered(),
                last_error: status.last_error(),
            });
        }
        Snapshot {
            app: self.app.clone(),
            instances,
        }
    }

    /// Uncommitted records on the instance's input topics; unknown parts count as zero.
    async fn lag(&self, status: &InstanceStatus) -> u64 {
        let mut lag = 0;
        for (topic, group) in &status.inlets {
            let (Ok(offsets), Ok(committed)) = (
                self.backend.offsets(topic).await,
                self.backend.committed(group, topic).await,
            ) else {
                continue;
            };
            for (partition, offsets) in offsets.iter().enumerate() {
                let done = committed
                    .get(partition)
                    .copied()
                    .flatten()
                    .unwrap_or(offsets.start);
                lag += offsets.end.saturating_sub(done.max(offsets.start));
            }
        }
        lag
    }
}
