//! [`History`]: the last minutes of a run, sample by sample, for charts.

use serde::{Deserialize, Serialize};

/// The recent past of a run, one point per status sample, oldest first: what the web view
/// draws its throughput and lag charts from (`/api/history`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Milliseconds between samples.
    pub interval_ms: u64,
    /// The samples, oldest first.
    pub points: Vec<HistoryPoint>,
}

/// Every instance at one sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// When, in milliseconds since the Unix epoch.
    pub at: i64,
    /// Each instance, in blueprint order.
    pub streamlets: Vec<StreamletPoint>,
}

/// One instance at one sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamletPoint {
    /// The instance name.
    pub name: String,
    /// Records read per second.
    pub rate_in: f64,
    /// Records sent per second.
    pub rate_out: f64,
    /// Records on its input topics not yet committed.
    pub lag: u64,
    /// Restarts so far; a step up marks a restart.
    pub restarts: u32,
    /// Whether it had a problem (an outage, a missing topic, a restart loop) at the time.
    pub stalled: bool,
}
