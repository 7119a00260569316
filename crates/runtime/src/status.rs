//! What a run looks like right now: per-instance state, counters, rates, consumer lag and
//! problems, and the topics with their offsets, sampled every second into a [`Snapshot`]
//! (and the last minutes of them into a [`History`]). The live view, the admin API
//! (`/api/status`, `/api/history`, `/metrics`, `/health/ready`) and `runnel status` all
//! read it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_backend::{Backend, PartitionOffsets};
use runnel_status::{
    History, HistoryPoint, InletSnapshot, InstanceSnapshot, InstanceState, KeyedStateSnapshot,
    OutletSnapshot, PartitionSnapshot, Problem, Snapshot, StreamletPoint, TopicSnapshot,
};
use runnel_streamlet::state::StateQueries;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::health::{self, HealthWatch, REQUEST_TIMEOUT};
use crate::instance_status::InstanceStatus;

/// How long an inlet may hold no partition, while partitions of its topic wait unread,
/// before [`StatusBoard::liveness`] fails and the orchestrator restarts the process.
pub const STUCK_WITHOUT_PARTITIONS: Duration = Duration::from_secs(180);

/// `Ok` without reasons, else the reasons.
fn verdict(reasons: Vec<String>) -> Result<(), Vec<String>> {
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// How many samples the history keeps: five minutes at one a second.
const HISTORY_POINTS: usize = 300;

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
    health: Mutex<HealthWatch>,
    history: Mutex<VecDeque<HistoryPoint>>,
    interval: Mutex<Duration>,
}

/// What one sample read from the backplane.
#[derive(Debug, Default)]
struct Observed {
    offsets: BTreeMap<String, Vec<PartitionOffsets>>,
    missing: BTreeSet<String>,
    /// Why the backplane did not answer, if it did not.
    unreachable: Option<String>,
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
            health: Mutex::default(),
            history: Mutex::default(),
            interval: Mutex::new(Duration::from_secs(1)),
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

    /// Whether every instance has connected its ports (and so its topics existed).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub(crate) fn mark_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Whether the process is ready: every instance connected its ports, and none had a
    /// problem at the last sample. `Err` lists why not, a line per reason.
    ///
    /// # Errors
    ///
    /// The reasons the process is not ready.
    pub fn readiness(&self) -> Result<(), Vec<String>> {
        if !self.is_ready() {
            return Err(vec!["streamlets are still starting".to_owned()]);
        }
        let latest = self.latest.borrow();
        let reasons: Vec<String> = latest
            .streamlets
            .iter()
            .flat_map(|instance| {
                instance
                    .problems
                    .iter()
                    .map(|problem| format!("{}: {problem}", instance.name))
            })
            .collect();
        verdict(reasons)
    }

    /// Whether the process should go on as it is: `Err` (a line per reason) when an inlet
    /// has held no partition, while partitions of its topic wait unread, for
    /// [`STUCK_WITHOUT_PARTITIONS`] or longer. Its consumer is stuck in its group (a
    /// coordinator that never assigned it), and a restart joins the group afresh; a broker
    /// outage, which a restart does not fix, never fails it.
    ///
    /// # Errors
    ///
    /// The reasons the process should be restarted.
    pub fn liveness(&self) -> Result<(), Vec<String>> {
        let latest = self.latest.borrow();
        let reasons: Vec<String> = latest
            .streamlets
            .iter()
            .flat_map(|instance| {
                instance
                    .problems
                    .iter()
                    .filter_map(|problem| match problem {
                        Problem::NoPartitionsAssigned { for_seconds, .. }
                            if *for_seconds >= STUCK_WITHOUT_PARTITIONS.as_secs() =>
                        {
                            Some(format!("{}: {problem}", instance.name))
                        }
                        _ => None,
                    })
            })
            .collect();
        verdict(reasons)
    }

    /// The latest snapshot, updated by [`StatusBoard::sample_every`].
    pub fn latest(&self) -> watch::Receiver<Snapshot> {
        self.latest.subscribe()
    }

    /// Replaces the latest snapshot (the final one of a run, for example).
    pub fn publish(&self, snapshot: Snapshot) {
        self.latest.send_replace(snapshot);
    }

    /// The samples of the last minutes, oldest first.
    pub fn history(&self) -> History {
        History {
            interval_ms: self
                .interval
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_millis() as u64,
            points: self
                .history
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned()
                .collect(),
        }
    }

    /// Samples every `interval` until `stop` fires.
    pub async fn sample_every(&self, interval: Duration, stop: CancellationToken) {
        *self.interval.lock().unwrap_or_else(PoisonError::into_inner) = interval;
        let mut previous: Option<(Instant, Snapshot)> = None;
        loop {
            let snapshot = self.sample(previous.as_ref()).await;
            self.remember(&snapshot);
            previous = Some((Instant::now(), snapshot.clone()));
            self.latest.send_replace(snapshot);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
            }
        }
    }

    fn remember(&self, snapshot: &Snapshot) {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as i64);
        let point = HistoryPoint {
            at,
            streamlets: snapshot
                .streamlets
                .iter()
                .map(|instance| StreamletPoint {
                    name: instance.name.clone(),
                    rate_in: instance.rate_in,
                    rate_out: instance.rate_out,
                    lag: instance.lag,
                    restarts: instance.restarts,
                    stalled: !instance.problems.is_empty(),
                })
                .collect(),
        };
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        if history.len() == HISTORY_POINTS {
            history.pop_front();
        }
        history.push_back(point);
    }

    /// Takes one snapshot; rates are relative to `previous` (when it was taken, and what).
    /// A backplane that does not answer within a couple of seconds is reported as a problem
    /// of every instance, and the lag and offsets it did not report are those of `previous`.
    pub async fn sample(&self, previous: Option<&(Instant, Snapshot)>) -> Snapshot {
        let observed = self.observe().await;
        let now = Instant::now();
        let outage = self
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .backplane(observed.unreachable.clone(), now);
        let earlier = previous.map(|(_, snapshot)| snapshot);
        let mut streamlets = Vec::with_capacity(self.instances.len());
        for status in &self.instances {
            let mut snapshot = self.instance(status, &observed, previous).await;
            if observed.unreachable.is_some()
                && let Some(before) =
                    earlier.and_then(|s| s.streamlets.iter().find(|b| b.name == status.name))
            {
                // Offsets could not be read: keep what was known.
                snapshot.lag = before.lag;
                for (inlet, known) in snapshot.inlets.iter_mut().zip(&before.inlets) {
                    inlet.partition_lag.clone_from(&known.partition_lag);
                }
            }
            if !matches!(
                snapshot.state,
                InstanceState::Finished | InstanceState::Stopped
            ) {
                snapshot.problems.splice(0..0, outage.clone());
            }
            if status.state() == InstanceState::Running && !snapshot.problems.is_empty() {
                snapshot.state = InstanceState::Stalled;
            }
            if let Some(problem) = snapshot.problems.first() {
                snapshot.last_error = Some(problem.to_string());
            }
            streamlets.push(snapshot);
        }
        let topics = self
            .topics
            .iter()
            .map(|topic| TopicSnapshot {
                name: topic.name.clone(),
                producers: topic.producers.clone(),
                consumers: topic.consumers.clone(),
                partitions: match observed.offsets.get(&topic.name) {
                    Some(offsets) => offsets
                        .iter()
                        .enumerate()
                        .map(|(partition, range)| PartitionSnapshot {
                            partition: partition as u32,
                            start: range.start,
                            end: range.end,
                        })
                        .collect(),
                    None => earlier
                        .and_then(|s| s.topics.iter().find(|t| t.name == topic.name))
                        .map(|t| t.partitions.clone())
                        .unwrap_or_default(),
                },
                lag: streamlets
                    .iter()
                    .flat_map(|s| &s.inlets)
                    .filter(|inlet| inlet.topic == topic.name)
                    .map(|inlet| inlet.partition_lag.iter().sum::<u64>())
                    .max()
                    .unwrap_or(0),
                missing: observed.missing.contains(&topic.name),
            })
            .collect();
        let ready = self.is_ready() && streamlets.iter().all(|s| s.problems.is_empty());
        Snapshot {
            app: self.app.clone(),
            ready,
            streamlets,
            topics,
        }
    }

    /// Reads every topic's offsets, each request bounded by [`REQUEST_TIMEOUT`]; the first
    /// that fails (other than for a missing topic) or times out marks the backplane
    /// unreachable and ends the round.
    async fn observe(&self) -> Observed {
        let mut observed = Observed::default();
        for topic in &self.topics {
            let asked = tokio::time::timeout(REQUEST_TIMEOUT, self.backend.offsets(&topic.name));
            match asked.await {
                Ok(Ok(offsets)) if !offsets.is_empty() => {
                    observed.offsets.insert(topic.name.clone(), offsets);
                }
                Ok(Ok(_) | Err(runnel_backend::Error::TopicNotFound { .. })) => {
                    observed.missing.insert(topic.name.clone());
                }
                Ok(Err(error)) => {
                    observed.unreachable = Some(error_chain(&error));
                    break;
                }
                Err(_) => {
                    observed.unreachable = Some(format!(
                        "no answer within {} s to reading the offsets of topic '{}'",
                        REQUEST_TIMEOUT.as_secs(),
                        topic.name
                    ));
                    break;
                }
            }
        }
        observed
    }

    async fn instance(
        &self,
        status: &InstanceStatus,
        observed: &Observed,
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
        let mut problems = Vec::new();
        let missing = status
            .inlets
            .iter()
            .chain(&status.outlets)
            .map(|binding| &binding.topic)
            .filter(|topic| observed.missing.contains(*topic));
        for topic in missing.collect::<BTreeSet<_>>() {
            problems.push(Problem::TopicMissing {
                topic: topic.clone(),
            });
        }
        let running = status.state() == InstanceState::Running;
        let mut inlets = Vec::with_capacity(status.inlets.len());
        for inlet in &status.inlets {
            let group = inlet.group.clone().unwrap_or_default();
            let ranges = observed
                .offsets
                .get(&inlet.topic)
                .cloned()
                .unwrap_or_default();
            let committed = if observed.unreachable.is_some() || ranges.is_empty() {
                Vec::new()
            } else {
                tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    self.backend.committed(&group, &inlet.topic),
                )
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default()
            };
            let partition_lag: Vec<u64> = ranges
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
            let port = metrics.inlets().get(&inlet.port);
            let assigned = port.and_then(|port| port.assigned_partitions());
            if running && committed.len() == ranges.len() && !ranges.is_empty() {
                let ends: Vec<u64> = ranges.iter().map(|range| range.end).collect();
                let now = Instant::now();
                let mut watch = self.health.lock().unwrap_or_else(PoisonError::into_inner);
                let waiting = watch.waiting(&group, &inlet.topic, &committed, &ends, now);
                let problem = watch.assignment(
                    &status.name,
                    &inlet.port,
                    &inlet.topic,
                    assigned.as_ref().map(Vec::len),
                    ranges.len() as u32,
                    &waiting,
                    now,
                );
                problems.extend(problem);
            }
            inlets.push(InletSnapshot {
                port: inlet.port.clone(),
                topic: inlet.topic.clone(),
                group,
                records: port.map_or(0, |port| port.records()),
                partition_lag,
                assigned: assigned.unwrap_or_default(),
            });
        }
        problems.extend(health::restart_loop(
            status.failures_within(health::LOOP_WINDOW),
        ));
        // An instance that finished or stopped has nothing left to make progress on.
        if matches!(
            status.state(),
            InstanceState::Finished | InstanceState::Stopped
        ) {
            problems.clear();
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
            skipped: metrics.skipped(),
            given_up: metrics.given_up(),
            watermark: metrics.watermark(),
            problems,
            last_error: status.last_error(),
            details: metrics.details().snapshot(),
            keyed_state: keyed_state(metrics.state_queries()),
            inlets,
            outlets,
        }
    }
}

/// The size of an instance's keyed state, if it keeps any (empty until it first ran).
fn keyed_state(queries: &StateQueries) -> Option<KeyedStateSnapshot> {
    if !queries.is_keyed() {
        return None;
    }
    let size = queries.size().unwrap_or_default();
    Some(KeyedStateSnapshot {
        partitions: size.partitions,
        entries: size.entries,
        bytes: size.bytes,
        standby_partitions: size.standby_partitions,
        standby_entries: size.standby_entries,
        restored_entries: size.restored_entries,
    })
}

/// `error: cause: cause`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
