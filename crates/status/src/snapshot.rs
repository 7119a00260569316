//! [`Snapshot`]: the state of a run at one moment, as `/api/status` returns it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Problem;

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
    /// Running, but unable to make progress: see its [`Problem`](crate::Problem)s. Never a
    /// state the instance is put in; the status shows it in place of `running` while a
    /// problem lasts.
    Stalled,
}

impl InstanceState {
    /// Every state, in life-cycle order.
    pub const ALL: [InstanceState; 6] = [
        InstanceState::Starting,
        InstanceState::Running,
        InstanceState::Stalled,
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
            InstanceState::Stalled => "stalled",
        }
    }
}

/// The state of a run at one moment: what `/api/status` returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The app name.
    pub app: String,
    /// Whether every streamlet of this process has connected its ports and none has a
    /// [`Problem`]: what `/health/ready` answers.
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
    /// Records rejected and skipped.
    #[serde(default)]
    pub skipped: u64,
    /// Records given up on after they failed the streamlet several times in a row.
    #[serde(default)]
    pub given_up: u64,
    /// The event-time watermark (milliseconds since the Unix epoch), for streamlets that
    /// track event time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// What keeps the instance from making progress right now, if anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// The current problem, else the last failure, if any.
    pub last_error: Option<String>,
    /// Short facts the streamlet shows about itself, by name: for example the model a
    /// scorer serves now.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
    /// How large the keyed state this process holds is, for a streamlet with keyed state
    /// (as of its last checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyed_state: Option<KeyedStateSnapshot>,
    /// Each inlet: its topic, records read and lag per partition.
    pub inlets: Vec<InletSnapshot>,
    /// Each outlet: its topic and records sent.
    pub outlets: Vec<OutletSnapshot>,
}

/// The size of an instance's keyed state in this process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedStateSnapshot {
    /// The input partitions whose state this process holds.
    pub partitions: Vec<u32>,
    /// Entries across them: values, lists, map entries and timers.
    pub entries: u64,
    /// Bytes of keys and values across them.
    pub bytes: u64,
    /// The input partitions other processes hold of which this one keeps a warm standby
    /// copy.
    #[serde(default)]
    pub standby_partitions: Vec<u32>,
    /// Entries across the standby copies.
    #[serde(default)]
    pub standby_entries: u64,
    /// Changelog entries the restores of partitions replayed since the instance started.
    #[serde(default)]
    pub restored_entries: u64,
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
    /// The partitions this process's member of the consumer group holds.
    #[serde(default)]
    pub assigned: Vec<u32>,
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
    /// Whether the topic was found missing at the last sample.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
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
