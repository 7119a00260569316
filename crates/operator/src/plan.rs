//! [`Plan`]: what [`reconcile`](crate::reconcile) decides; the controller carries it out.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use runnel_application::{ApplicationStatus, TopicSpec};

/// What the cluster should hold for one Application, and what to tell about it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Topics that must exist (created when missing, never deleted).
    pub topics: Vec<TopicSpec>,
    /// Objects to server-side apply, in this order (configuration before the Deployments
    /// that mount it).
    pub apply: Vec<Desired>,
    /// Objects the operator created that are no longer wanted.
    pub delete: Vec<Stale>,
    /// The status to write.
    pub status: ApplicationStatus,
    /// Events to publish about the Application.
    pub events: Vec<Event>,
    /// How the reconcile ended.
    pub outcome: Outcome,
}

/// How a reconcile ended, for the controller's requeue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The cluster is being brought to the spec; look again after this long.
    Converging(Duration),
    /// The spec cannot be carried out (it is kept in the status and an Event); retry with
    /// backoff.
    Failed(String),
    /// The Application is being deleted; nothing to apply.
    Undeploying,
}

/// An object to apply.
#[derive(Clone, Debug, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a plan holds a handful of these once per reconcile; boxing buys nothing"
)]
pub enum Desired {
    /// A streamlet's configuration.
    ConfigMap(ConfigMap),
    /// A streamlet's secret configuration.
    Secret(Secret),
    /// A streamlet's pods.
    Deployment(Deployment),
    /// A streamlet's HTTP endpoint.
    Service(Service),
    /// How many of a streamlet's pods evictions may take at once.
    PodDisruptionBudget(PodDisruptionBudget),
}

impl Desired {
    /// The kind and name, for messages.
    pub fn describe(&self) -> String {
        let (kind, name) = match self {
            Desired::ConfigMap(object) => ("ConfigMap", object.metadata.name.as_deref()),
            Desired::Secret(object) => ("Secret", object.metadata.name.as_deref()),
            Desired::Deployment(object) => ("Deployment", object.metadata.name.as_deref()),
            Desired::Service(object) => ("Service", object.metadata.name.as_deref()),
            Desired::PodDisruptionBudget(object) => {
                ("PodDisruptionBudget", object.metadata.name.as_deref())
            }
        };
        format!("{kind} {}", name.unwrap_or_default())
    }
}

/// An object to delete.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stale {
    /// `ConfigMap`, `Secret`, `Deployment`, `Service` or `PodDisruptionBudget`.
    pub kind: &'static str,
    /// The name.
    pub name: String,
}

/// An Event about the Application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Whether something went wrong.
    pub warning: bool,
    /// CamelCase, such as `RolledOut` or `InvalidBlueprint`.
    pub reason: String,
    /// For humans.
    pub note: String,
    /// What the operator did: `Reconcile`, `Apply`, `Delete`, `Scale`, `CreateTopics`.
    pub action: String,
}

impl Event {
    /// A normal event.
    pub fn normal(reason: &str, action: &str, note: String) -> Event {
        Event {
            warning: false,
            reason: reason.to_owned(),
            note,
            action: action.to_owned(),
        }
    }

    /// A warning.
    pub fn warning(reason: &str, action: &str, note: String) -> Event {
        Event {
            warning: true,
            reason: reason.to_owned(),
            note,
            action: action.to_owned(),
        }
    }
}
