//! [`Problem`]: what keeps a streamlet instance from making progress.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Something that keeps a running streamlet instance from making progress, observed by its
/// process. While an instance has one, its state shows as
/// [`stalled`](crate::InstanceState::Stalled), its `last_error` says what is wrong, and the
/// process is not ready (`/health/ready` answers 503); liveness is unaffected, so an
/// orchestrator does not restart a process for a broker outage.
///
/// ```
/// use runnel_status::Problem;
/// let problem = Problem::TopicMissing { topic: "readings".into() };
/// assert_eq!(problem.to_string(), "topic 'readings' does not exist");
/// assert_eq!(problem.label(), "topic-missing");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Problem {
    /// The backplane (the Kafka cluster) did not answer the process's last request.
    BackplaneUnreachable {
        /// What the request failed with.
        error: String,
        /// How long the backplane has not answered, in whole seconds.
        for_seconds: u64,
    },
    /// A topic the instance reads or writes does not exist.
    TopicMissing {
        /// The topic.
        topic: String,
    },
    /// An inlet's consumer holds none of its topic's partitions, while records on some of
    /// them wait with no commit from its consumer group: nobody reads them (a coordinator
    /// that never assigned this member, or a member that holds them and does not read).
    NoPartitionsAssigned {
        /// The inlet.
        inlet: String,
        /// Its topic.
        topic: String,
        /// How many partitions the topic has.
        partitions: u32,
        /// How long the consumer has held none, in whole seconds.
        for_seconds: u64,
    },
    /// The instance failed again and again.
    RestartLoop {
        /// Failures within the window.
        restarts: u32,
        /// The window, in seconds.
        window_seconds: u64,
    },
}

impl Problem {
    /// Every label, in the order the metrics list them.
    pub const LABELS: [&'static str; 4] = [
        "backplane-unreachable",
        "topic-missing",
        "no-partitions-assigned",
        "restart-loop",
    ];

    /// A short kebab-case name, as in the JSON `kind` and metric labels.
    pub fn label(&self) -> &'static str {
        match self {
            Problem::BackplaneUnreachable { .. } => Self::LABELS[0],
            Problem::TopicMissing { .. } => Self::LABELS[1],
            Problem::NoPartitionsAssigned { .. } => Self::LABELS[2],
            Problem::RestartLoop { .. } => Self::LABELS[3],
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::BackplaneUnreachable { error, for_seconds } => {
                write!(f, "backplane unreachable for {for_seconds} s: {error}")
            }
            Problem::TopicMissing { topic } => write!(f, "topic '{topic}' does not exist"),
            Problem::NoPartitionsAssigned {
                inlet,
                topic,
                partitions,
                for_seconds,
            } => write!(
                f,
                "inlet '{inlet}' has held none of the {partitions} partitions of topic '{topic}' for {for_seconds} s while records on some wait uncommitted"
            ),
            Problem::RestartLoop {
                restarts,
                window_seconds,
            } => write!(
                f,
                "restarting in a loop: {restarts} failures in the last {window_seconds} s"
            ),
        }
    }
}
