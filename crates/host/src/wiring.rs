//! [`Wiring`]: where the host connects one instance's ports, with its parameters and the
//! [`HostSettings`] (buffer sizes and intervals) it runs with.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::ProducerConfig;
use runnel_blueprint::parameter::ParameterValue;
use runnel_streamlet::FailedAttempts;
use runnel_streamlet::watermark::ScriptedWatermarks;
use tokio::sync::watch;

/// Where one instance's ports are connected, and its checked parameter values.
#[derive(Debug)]
pub struct Wiring {
    /// The app name.
    pub app: String,
    /// The instance name.
    pub instance: String,
    /// One entry per inlet of the shape.
    pub inlets: Vec<InletWiring>,
    /// One entry per outlet of the shape.
    pub outlets: Vec<OutletWiring>,
    /// Where records that fail to decode go (it must exist).
    pub dead_letter_topic: String,
    /// Parameter values, checked with
    /// [`resolve_parameters`](runnel_streamlet::resolve_parameters).
    pub parameters: HashMap<String, ParameterValue>,
    /// Buffer sizes and intervals.
    pub settings: HostSettings,
    /// Told once every port is connected, just before the streamlet starts running; or,
    /// for a streamlet that [reports readiness](runnel_streamlet::Shape::reports_readiness),
    /// when it calls [`Context::report_ready`](runnel_streamlet::Context::report_ready).
    pub ready: Option<tokio::sync::oneshot::Sender<()>>,
    /// Watermarks set from outside, which event-time streamlets follow instead of
    /// generating their own: the test kit's time control. `None` in production.
    pub watermarks: Option<ScriptedWatermarks>,
    /// The transactional id of an exactly-once instance (Kafka's `transactional.id`):
    /// stable across restarts of the same process or replica, so a restart fences the
    /// previous attempt. `None` means `<app>.<instance>`.
    pub transactional_id: Option<String>,
    /// The name the instance's consumers keep in their groups across restarts, where the
    /// backplane has static membership (see
    /// [`ConsumerConfig::static_member`](runnel_backend::ConsumerConfig#structfield.static_member)):
    /// a process that comes back under it reads its partitions again at once. Give it only
    /// to a process that does come back under the same name; `None` means dynamic members,
    /// which leave their groups when they stop.
    pub static_member: Option<String>,
    /// The record the instance was handling when it last failed, kept across restarts by
    /// the supervisor, so a record that fails it again and again is given up on.
    pub attempts: Arc<FailedAttempts>,
}

/// The topic and consumer group of one inlet.
#[derive(Debug)]
pub struct InletWiring {
    /// The inlet name.
    pub port: String,
    /// The topic it reads.
    pub topic: String,
    /// Its consumer group.
    pub group: String,
    /// The Avro schemas the topic's producers write with, so evolved readers resolve them.
    pub writer_schemas: Vec<serde_json::Value>,
    /// Becomes `true` once nothing more will be appended to the topic (every producer
    /// finished); the inlet then ends after reading everything. Keep the sender alive while
    /// the input is unbounded.
    pub end_of_input: watch::Receiver<bool>,
    /// Consumer settings passed to the backplane.
    pub consumer_settings: BTreeMap<String, String>,
}

/// The topic of one outlet.
#[derive(Clone, Debug)]
pub struct OutletWiring {
    /// The outlet name.
    pub port: String,
    /// The topic it appends to.
    pub topic: String,
    /// Whether every record names its writer schema in the
    /// [`SCHEMA_HEADER`](runnel_streamlet::SCHEMA_HEADER): needed when producers of the topic write
    /// with different schemas, so readers can tell which one wrote each record.
    pub tag_schema: bool,
}

/// Buffer sizes and intervals of a streamlet host.
#[derive(Clone, Debug)]
pub struct HostSettings {
    /// How often committed offsets are written to the consumer groups.
    pub commit_interval: Duration,
    /// Sends that may be waiting for acknowledgement before `send` waits.
    pub max_unacknowledged_sends: usize,
    /// Messages handed to the streamlet and not committed before `next` waits.
    pub max_uncommitted_messages: usize,
    /// Records asked for per poll.
    pub poll_batch: usize,
    /// Producer settings passed to the backplane.
    pub producer: ProducerConfig,
}

impl Default for HostSettings {
    fn default() -> Self {
        HostSettings {
            commit_interval: Duration::from_millis(200),
            max_unacknowledged_sends: 16_384,
            max_uncommitted_messages: 16_384,
            poll_batch: 1024,
            producer: ProducerConfig::default(),
        }
    }
}
