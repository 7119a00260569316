//! [`ApplicationStatus`]: what the operator observed, never what it assumed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ApplicationSpec;

/// The observed state of an Application, written by the operator after every reconcile.
///
/// ```
/// use runnel_application::{ApplicationStatus, Phase};
/// let status = ApplicationStatus { phase: Phase::Running, ..ApplicationStatus::default() };
/// assert_eq!(serde_json::to_value(&status)?["phase"], "Running");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// The phase, derived from the conditions and the streamlets.
    pub phase: Phase,
    /// One line for humans: what is going on, or what went wrong.
    #[serde(default)]
    pub message: String,
    /// The `metadata.generation` of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Reconciled`, `TopicsReady`, `IdleReplicas`, `Suspended` and `RolledBack`,
    /// in Kubernetes' condition format.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// One entry per streamlet instance.
    #[serde(default)]
    pub streamlets: Vec<StreamletStatus>,
    /// The version of the operator that wrote this status.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator_version: String,
    /// The last spec whose streamlets all became ready (phase `Running`), which a rollback
    /// applies again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_running_spec: Option<RunningSpec>,
    /// The rollout of the latest generation the operator applied: since when, and whether
    /// it was rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
}

/// A spec that ran, with its generation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunningSpec {
    /// The `metadata.generation` of the spec.
    pub generation: i64,
    /// The spec as it was when every streamlet was ready.
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub spec: ApplicationSpec,
}

/// The rollout of one generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// The `metadata.generation` being rolled out.
    pub generation: i64,
    /// When the operator first applied its objects, RFC 3339: the readiness timeout counts
    /// from here.
    pub start_time: String,
    /// Whether it was rolled back: the cluster runs `lastRunningSpec`, and this generation
    /// is not tried again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub rolled_back: bool,
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl ApplicationStatus {
    /// The condition of type `kind`.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions
            .iter()
            .find(|condition| condition.type_ == kind)
    }
}

/// The phase of an Application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Not every streamlet has its ready replicas yet, and nothing has failed.
    #[default]
    Pending,
    /// Every streamlet has all its replicas ready.
    Running,
    /// Some streamlet lacks ready replicas and its pods report errors (crashes, restarts,
    /// failing probes).
    Degraded,
    /// The operator cannot make the cluster match the spec (a bad blueprint or
    /// configuration, topics that cannot be created); it retries with backoff.
    Failed,
    /// The Application is being deleted.
    Undeploying,
    /// The spec says suspended: every streamlet's Deployment is kept with 0 replicas.
    Suspended,
    /// The spec's generation did not become ready within `spec.rollback`'s timeout: the
    /// streamlets run the last spec that ran (`status.lastRunningSpec`) again.
    RolledBack,
}

impl Phase {
    /// The name, as in the resource.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Degraded => "Degraded",
            Phase::Failed => "Failed",
            Phase::Undeploying => "Undeploying",
            Phase::Suspended => "Suspended",
            Phase::RolledBack => "RolledBack",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition, as Kubernetes' `metav1.Condition`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Reconciled`, `TopicsReady`, `IdleReplicas`, `Suspended` or `RolledBack`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason.
    pub reason: String,
    /// Details for humans.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed, RFC 3339.
    pub last_transition_time: String,
    /// The generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// What was observed of one streamlet instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamletStatus {
    /// The instance name.
    pub name: String,
    /// The replicas its Deployment asks for.
    pub desired_replicas: i32,
    /// Its pods that pass their readiness probe.
    pub ready_replicas: i32,
    /// Container restarts summed over its pods.
    pub restarts: i32,
    /// The last error its pods reported (a crash's exit code and reason, a waiting reason
    /// such as `CrashLoopBackOff`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Replicas beyond the most partitions of any topic it reads: they hold no partition
    /// and stay idle.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idle_replicas: i32,
    /// Whether an autoscaler manages its replicas, and its last decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingStatus>,
}

/// The autoscaler's view of one streamlet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingStatus {
    /// The consumer lag (records) over the streamlet's inlets at the last sample.
    pub lag: i64,
    /// The replicas the autoscaler last chose.
    pub replicas: i32,
    /// When it last changed the replicas, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<String>,
    /// Why, for humans.
    #[serde(default)]
    pub reason: String,
}

fn is_zero(count: &i32) -> bool {
    *count == 0
}
