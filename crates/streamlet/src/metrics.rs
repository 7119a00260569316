//! Counters a running streamlet instance keeps, read by the runner's live view and status.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use runnel_backend::Consumer;

use crate::state::StateQueries;
use crate::{Histogram, ModelMetrics, Shape, StatusDetails};

/// Records and bytes through one port; for an inlet, also the lag its consumer's client
/// reports.
#[derive(Debug, Default)]
pub struct PortMetrics {
    records: AtomicU64,
    bytes: AtomicU64,
    /// The inlet's current consumer (held weakly: the metrics outlive it).
    consumer: Mutex<Option<Weak<dyn Consumer>>>,
}

impl PortMetrics {
    /// Remembers the consumer now reading this inlet, for [`client_lag`](Self::client_lag).
    pub(crate) fn read_by(&self, consumer: &Arc<dyn Consumer>) {
        *self.consumer.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Arc::downgrade(consumer));
    }

    /// The lag per partition as the inlet's consumer client reports it
    /// ([`Consumer::client_lag`]): empty on backplanes that do not, and while no consumer
    /// reads the inlet.
    pub fn client_lag(&self) -> Vec<(u32, u64)> {
        let consumer = self
            .consumer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(Weak::upgrade);
        consumer.map_or_else(Vec::new, |consumer| {
            consumer
                .client_lag()
                .into_iter()
                .map(|(partition, lag)| (partition.partition, lag))
                .collect()
        })
    }

    /// The partitions the inlet's consumer holds now, or `None` while no consumer reads the
    /// inlet (before it connects, between restarts).
    pub fn assigned_partitions(&self) -> Option<Vec<u32>> {
        let consumer = self
            .consumer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(Weak::upgrade)?;
        Some(
            consumer
                .positions()
                .into_iter()
                .map(|(partition, _)| partition.partition)
                .collect(),
        )
    }

    pub(crate) fn record(&self, bytes: usize) {
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Records so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Value bytes so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Everything one streamlet instance counts, across restarts.
///
/// ```
/// use runnel_streamlet::{InstanceMetrics, Shape};
/// let metrics = InstanceMetrics::for_shape(&Shape::new());
/// assert_eq!(metrics.records_in(), 0);
/// ```
#[derive(Debug)]
pub struct InstanceMetrics {
    inlets: BTreeMap<String, Arc<PortMetrics>>,
    outlets: BTreeMap<String, Arc<PortMetrics>>,
    dead_lettered: AtomicU64,
    skipped: AtomicU64,
    given_up: AtomicU64,
    committed: AtomicU64,
    processing: Histogram,
    commit_latency: Histogram,
    late: AtomicU64,
    /// The event-time watermark in milliseconds; `i64::MIN` until there is one.
    watermark: AtomicI64,
    details: StatusDetails,
    state_queries: StateQueries,
    models: ModelMetrics,
}

impl Default for InstanceMetrics {
    fn default() -> Self {
        InstanceMetrics {
            inlets: BTreeMap::new(),
            outlets: BTreeMap::new(),
            dead_lettered: AtomicU64::default(),
            skipped: AtomicU64::default(),
            given_up: AtomicU64::default(),
            committed: AtomicU64::default(),
            processing: Histogram::default(),
            commit_latency: Histogram::default(),
            late: AtomicU64::default(),
            watermark: AtomicI64::new(i64::MIN),
            details: StatusDetails::default(),
            state_queries: StateQueries::default(),
            models: ModelMetrics::default(),
        }
    }
}

impl InstanceMetrics {
    /// Counters for every port of `shape`.
    pub fn for_shape(shape: &Shape) -> Self {
        InstanceMetrics {
            inlets: shape
                .inlet_names()
                .map(|name| (name.to_owned(), Arc::default()))
                .collect(),
            outlets: shape
                .outlet_names()
                .map(|name| (name.to_owned(), Arc::default()))
                .collect(),
            state_queries: StateQueries::new(
                shape.has_keyed_state(),
                shape.is_checkpointed() && !shape.is_checkpointed_by_partition(),
            ),
            ..InstanceMetrics::default()
        }
    }

    /// The counters of each inlet, by name.
    pub fn inlets(&self) -> &BTreeMap<String, Arc<PortMetrics>> {
        &self.inlets
    }

    /// The counters of each outlet, by name.
    pub fn outlets(&self) -> &BTreeMap<String, Arc<PortMetrics>> {
        &self.outlets
    }

    /// Records read on all inlets (delivered to the streamlet, bad ones included).
    pub fn records_in(&self) -> u64 {
        self.inlets.values().map(|port| port.records()).sum()
    }

    /// Records sent on all outlets.
    pub fn records_out(&self) -> u64 {
        self.outlets.values().map(|port| port.records()).sum()
    }

    /// Records rejected (undecodable, refused by the streamlet, given up on) and sent to the
    /// dead-letter topic.
    pub fn dead_lettered(&self) -> u64 {
        self.dead_lettered.load(Ordering::Relaxed)
    }

    /// Records rejected (undecodable, or refused by the streamlet) and skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Records that arrived after their windows' allowed lateness and went to the late
    /// output (or, without one, were logged and dropped).
    pub fn late(&self) -> u64 {
        self.late.load(Ordering::Relaxed)
    }

    /// Input records whose offsets were committed.
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// How long messages took from being handed to the streamlet to being committed,
    /// measured on one message in 16 per inlet.
    pub fn processing_latency(&self) -> &Histogram {
        &self.processing
    }

    /// How long writing committed offsets to the consumer groups took.
    pub fn commit_latency(&self) -> &Histogram {
        &self.commit_latency
    }

    pub(crate) fn inlet(&self, name: &str) -> Arc<PortMetrics> {
        self.inlets.get(name).cloned().unwrap_or_default()
    }

    pub(crate) fn outlet(&self, name: &str) -> Arc<PortMetrics> {
        self.outlets.get(name).cloned().unwrap_or_default()
    }

    pub(crate) fn count_dead_lettered(&self) {
        self.dead_lettered.fetch_add(1, Ordering::Relaxed);
    }

    /// Records given up on after they failed the streamlet several times in a row, and
    /// handed to the inlet's bad-data policy (see
    /// [`FailedAttempts`](crate::FailedAttempts)).
    pub fn given_up(&self) -> u64 {
        self.given_up.load(Ordering::Relaxed)
    }

    pub(crate) fn count_given_up(&self) {
        self.given_up.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }

    /// The instance's current event-time watermark (milliseconds since the Unix epoch), for
    /// streamlets that track event time; `None` before the first one and after the end of
    /// a bounded input.
    pub fn watermark(&self) -> Option<i64> {
        let watermark = self.watermark.load(Ordering::Relaxed);
        (watermark != i64::MIN && watermark != i64::MAX).then_some(watermark)
    }

    /// The facts the streamlet shows in the status (see [`StatusDetails`]).
    pub fn details(&self) -> &StatusDetails {
        &self.details
    }

    /// The model metrics, for a streamlet that serves models (see [`ModelMetrics`]).
    pub fn models(&self) -> &ModelMetrics {
        &self.models
    }

    /// The keyed state's queries and size, for a streamlet with
    /// [keyed state](crate::Shape::keyed_state) (see [`StateQueries`]).
    pub fn state_queries(&self) -> &StateQueries {
        &self.state_queries
    }

    pub(crate) fn set_watermark(&self, watermark: i64) {
        self.watermark.store(watermark, Ordering::Relaxed);
    }

    pub(crate) fn count_late(&self, records: u64) {
        self.late.fetch_add(records, Ordering::Relaxed);
    }

    pub(crate) fn count_committed(&self, records: u64) {
        self.committed.fetch_add(records, Ordering::Relaxed);
    }
}
