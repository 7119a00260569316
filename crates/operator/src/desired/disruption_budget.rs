//! The PodDisruptionBudget of a streamlet: voluntary disruptions (a node drain, a cluster
//! upgrade) evict at most one of its pods at a time.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Streamlet;
use crate::names::selector;

/// At most one pod of the streamlet unavailable through evictions: its other replicas keep
/// their partitions while one moves. (`maxUnavailable` rather than `minAvailable`, so that
/// a streamlet with one replica, or none while suspended, never blocks a drain.)
pub(crate) fn pod_disruption_budget(streamlet: &Streamlet<'_>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: streamlet.metadata(),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(selector(streamlet.app.name(), streamlet.instance)),
                match_expressions: None,
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}
