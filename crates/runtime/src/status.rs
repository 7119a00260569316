//! What a run looks like right now: per-instance state, counters, rates and consumer lag,
//! and the topics with their offsets, sampled periodically into a [`Snapshot`]. The live
//! view, the admin API (`/api/status`, `/metrics`) and `runnel status` all read it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_backend::{Backend, PartitionOffsets};
use runnel_streamlet::InstanceMetrics;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The life-cycle state of a streamlet instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Every state, in life-cycle order.
    pub const ALL: [InstanceState; 5] = [
        InstanceState::Starting,
        InstanceState::Running,
        InstanceState::Restarting,
        InstanceState::Finished,
        InstanceState::Stopped,
    ];

    /// The name shown in views and metric labels.
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
}

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
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The state of a run at one moment: what `/api/status` returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The app name.
    pub app: String,
    /// Whether every streamlet of this process has connected its ports.
    pub ready: bool,
    /// Every instance of this process, in blueprint order.
    pub streamlets: Vec<InstanceSnapshot>,
    /// Every topic of the blueprint.
    pub topics: Vec<TopicSnapshot>,
}

/// One instance at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceSnapshot {
    /// The instance name.
    pub name: String,
    /// The streamlet type.
    #[serde(rename = "type")]
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
    /// The event-time watermark (milliseconds since the Unix epoch), for streamlets that
    /// track event time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// Each inlet: its topic, records read and lag per partition.
    pub inlets: Vec<InletSnapshot>,
    /// Each outlet: its topic and records sent.
    pub outlets: Vec<OutletSnapshot>,
}

/// One inlet at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InletSnapshot {
    /// The inlet name.
    pub port: String,
    /// Its topic.
    pub topic: String,
    /// Its consumer group.
    pub group: String,
    /// Records read so far.
    pub records: u64,
    /// Per partition: log end offset minus committed offset.
    pub partition_lag: Vec<u64>,
}

/// One outlet at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutletSnapshot {
    /// The outlet name.
    pub port: String,
    /// Its topic.
    pub topic: String,
    /// Records sent so far.
    pub records: u64,
}

/// One topic at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopicSnapshot {
    /// The topic name.
    pub name: String,
    /// The outlets writing it, as `instance.port`.
    pub producers: Vec<String>,
    /// The inlets reading it, as `instance.port`.
    pub consumers: Vec<String>,
    /// Start and end offsets per partition.
    pub partitions: Vec<PartitionSnapshot>,
    /// The largest lag of its readers in this process.
    pub lag: u64,
}

/// The offsets of one partition at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSnapshot {
    /// The partition number.
    pub partition: u32,
    /// The oldest offset still kept.
    pub start: u64,
    /// The offset the next record will get.
    pub end: u64,
}

/// A topic the board reports on: its name and who writes and reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicBinding {
    /// The topic name.
    pub name: String,
    /// The outlets writing it, as `instance.port`.
    pub producers: Vec<String>,
    /// The inlets reading it, as `instance.port`.
    pub consumers: Vec<String>,
}

/// Samples every instance and topic of a run into [`Snapshot`]s.
#[derive(Debug)]
pub struct StatusBoard {
    app: String,
    instances: Vec<Arc<InstanceStatus>>,
    topics: Vec<TopicBinding>,
    backend: Arc<dyn Backend>,
    ready: AtomicBool,
    latest: watch::Sender<Snapshot>,
}

impl StatusBoard {
    /// A board over these instances and topics.
    pub fn new(
        app: &str,
        instances: Vec<Arc<InstanceStatus>>,
        topics: Vec<TopicBinding>,
        backend: Arc<dyn Backend>,
    ) -> Self {
        let latest = watch::Sender::new(Snapshot {
            app: app.to_owned(),
            ..Snapshot::default()
        });
        StatusBoard {
            app: app.to_owned(),
            instances,
            topics,
            backend,
            ready: AtomicBool::new(false),
            latest,
        }
    }

    /// The app name.
    pub fn app(&self) -> &str {
        &self.app
    }

    /// The instances on the board.
    pub fn instances(&self) -> &[Arc<InstanceStatus>] {
        &self.instances
    }

    /// Whether every instance has connected its ports (and so its topics exist).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub(crate) fn mark_ready(&self) {
        self.ready.store(true, Ordering::Release);
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
        let mut previous: Option<(Instant, Snapshot)> = None;
        loop {
            let snapshot = self.sample(previous.as_ref()).await;
            previous = Some((Instant::now(), snapshot.clone()));
            self.latest.send_replace(snapshot);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
        }
    }

    /// Takes one snapshot; rates are relative to `previous` (when it was taken, and what).
    pub async fn sample(&self, previous: Option<&(Instant, Snapshot)>) -> Snapshot {
        let mut offsets: BTreeMap<String, Vec<PartitionOffsets>> = BTreeMap::new();
        for topic in &self.topics {
            if let Ok(found) = self.backend.offsets(&topic.name).await {
                offsets.insert(topic.name.clone(), found);
            }
        }
        let mut streamlets = Vec::with_capacity(self.instances.len());
        for status in &self.instances {
            streamlets.push(self.instance(status, &offsets, previous).await);
        }
        let topics = self
            .topics
            .iter()
            .map(|topic| TopicSnapshot {
                name: topic.name.clone(),
                producers: topic.producers.clone(),
                consumers: topic.consumers.clone(),
                partitions: offsets
                    .get(&topic.name)
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(partition, range)| PartitionSnapshot {
                        partition: partition as u32,
                        start: range.start,
                        end: range.end,
                    })
                    .collect(),
                lag: streamlets
                    .iter()
                    .flat_map(|s| &s.inlets)
                    .filter(|inlet| inlet.topic == topic.name)
                    .map(|inlet| inlet.partition_lag.iter().sum::<u64>())
                    .max()
                    .unwrap_or(0),
            })
            .collect();
        Snapshot {
            app: self.app.clone(),
            ready: self.is_ready(),
            streamlets,
            topics,
        }
    }

    async fn instance(
        &self,
        status: &InstanceStatus,
        offsets: &BTreeMap<String, Vec<PartitionOffsets>>,
        previous: Option<&(Instant, Snapshot)>,
    ) -> InstanceSnapshot {
        let metrics = &status.metrics;
        let (records_in, records_out) = (metrics.records_in(), metrics.records_out());
        let before = previous.and_then(|(at, snapshot)| {
            let earlier = snapshot.streamlets.iter().find(|s| s.name == status.name)?;
            Some((at.elapsed().as_secs_f64().max(0.001), earlier))
        });
        let rate = |now: u64, was: u64, seconds: f64| now.saturating_sub(was) as f64 / seconds;
        let (rate_in, rate_out) = before.map_or((0.0, 0.0), |(seconds, earlier)| {
            (
                rate(records_in, earlier.records_in, seconds),
                rate(records_out, earlier.records_out, seconds),
            )
        });
        let mut inlets = Vec::with_capacity(status.inlets.len());
        for inlet in &status.inlets {
            let group = inlet.group.clone().unwrap_or_default();
            let ends = offsets.get(&inlet.topic).cloned().unwrap_or_default();
            let committed = self
                .backend
                .committed(&group, &inlet.topic)
                .await
                .unwrap_or_default();
            let partition_lag = ends
                .iter()
                .enumerate()
                .map(|(partition, range)| {
                    let done = committed
                        .get(partition)
                        .copied()
                        .flatten()
                        .unwrap_or(range.start);
                    range.end.saturating_sub(done.max(range.start))
                })
                .collect();
            inlets.push(InletSnapshot {
                port: inlet.port.clone(),
                topic: inlet.topic.clone(),
                group,
                records: metrics
                    .inlets()
                    .get(&inlet.port)
                    .map_or(0, |port| port.records()),
                partition_lag,
            });
        }
        let outlets = status
            .outlets
            .iter()
            .map(|outlet| OutletSnapshot {
                port: outlet.port.clone(),
                topic: outlet.topic.clone(),
                records: metrics
                    .outlets()
                    .get(&outlet.port)
                    .map_or(0, |port| port.records()),
            })
            .collect();
        InstanceSnapshot {
            name: status.name.clone(),
            type_name: status.type_name.clone(),
            state: status.state(),
            restarts: status.restarts(),
            records_in,
            records_out,
            rate_in,
            rate_out,
            lag: inlets
                .iter()
                .flat_map(|i: &InletSnapshot| &i.partition_lag)
                .sum(),
            dead_lettered: metrics.dead_lettered(),
            watermark: metrics.watermark(),
            last_error: status.last_error(),
            inlets,
            outlets,
        }
    }
}
