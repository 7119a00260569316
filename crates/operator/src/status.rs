//! The Application's status, computed from the observed Deployments and Pods: a streamlet
//! is ready when its pods pass their readiness probes, never because the operator applied
//! something.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use runnel_application::{ApplicationStatus, Condition, Phase, StreamletStatus};

use crate::Application;
use crate::observed::{Observed, ReconcileContext};

/// One streamlet's replicas: `desired` is what the operator is applying (`None` when
/// another autoscaler owns the replicas, or nothing is applied: then the Deployment's, as
/// observed, else `fallback`), the rest is observed.
pub(crate) fn streamlet_status(
    observed: &Observed,
    instance: &str,
    desired: Option<i32>,
    fallback: i32,
) -> StreamletStatus {
    let desired = desired
        .or_else(|| {
            observed
                .deployment(instance)
                .and_then(|d| d.spec.as_ref())
                .and_then(|spec| spec.replicas)
        })
        .unwrap_or(fallback);
    let pods: Vec<&Pod> = observed.pods_of(instance).collect();
    let ready = pods.iter().filter(|pod| is_ready(pod)).count() as i32;
    let containers: Vec<&ContainerStatus> = pods
        .iter()
        .filter_map(|pod| pod.status.as_ref())
        .filter_map(|status| status.container_statuses.as_ref())
        .flatten()
        .collect();
    let restarts = containers.iter().map(|c| c.restart_count).sum();
    StreamletStatus {
        name: instance.to_owned(),
        desired_replicas: desired,
        ready_replicas: ready,
        restarts,
        last_error: last_error(&containers),
        idle_replicas: 0,
        autoscaling: None,
    }
}

/// Whether the pod's `Ready` condition is true: it passes its readiness probe.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// assert!(!runnel_operator::is_ready(&Pod::default()));
/// ```
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// The most telling error of the containers: one waiting in an error state now, else the
/// latest that ended badly.
fn last_error(containers: &[&ContainerStatus]) -> Option<String> {
    let waiting = containers.iter().find_map(|container| {
        let waiting = container.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        (reason != "ContainerCreating" && reason != "PodInitializing").then(|| {
            match waiting.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => format!("{reason}: {message}"),
                None => reason.to_owned(),
            }
        })
    });
    if waiting.is_some() {
        return waiting;
    }
    containers
        .iter()
        .filter_map(|container| {
            let terminated = container.last_state.as_ref()?.terminated.as_ref()?;
            (terminated.exit_code != 0 || terminated.reason.as_deref() == Some("OOMKilled"))
                .then_some(terminated)
        })
        .max_by_key(|terminated| terminated.finished_at.as_ref().map(|time| time.0))
        .map(|terminated| {
            let reason = terminated.reason.as_deref().unwrap_or("Error");
            let mut text = format!("exited with code {} ({reason})", terminated.exit_code);
            if let Some(message) = terminated.message.as_deref().filter(|m| !m.is_empty()) {
                text.push_str(": ");
                text.push_str(message.trim());
            }
            text
        })
}

/// What went wrong, when the spec could not be carried out.
pub(crate) struct Failure<'a> {
    pub(crate) reason: &'a str,
    pub(crate) message: String,
    /// Whether the failure is about topics (`TopicsReady` false) rather than the spec.
    pub(crate) topics: bool,
}

/// The whole status: phase, message and conditions from the streamlets and any failure.
/// A suspended spec (`spec.suspended`) that was carried out is phase `Suspended` with the
/// condition `Suspended` true; a failure, which applies nothing, keeps the previous
/// `Suspended` and `RolledBack` conditions, since that is still what the cluster holds.
/// `rolled_back` says why the streamlets run the last spec that ran instead of `app`'s
/// (phase `RolledBack`, condition `RolledBack` true). `lastRunningSpec` and `rollout` are
/// the previous status's: [`reconcile`](crate::reconcile) sets them.
pub(crate) fn application_status(
    app: &Application,
    streamlets: Vec<StreamletStatus>,
    failure: Option<Failure<'_>>,
    rolled_back: Option<&str>,
    context: &ReconcileContext,
) -> ApplicationStatus {
    let generation = app.metadata.generation;
    let previous = app.status.as_ref();
    let condition = |kind: &str, ok: bool, reason: &str, message: String| {
        let status = if ok { "True" } else { "False" };
        let since = previous
            .and_then(|p| p.condition(kind))
            .filter(|c| c.status == status)
            .map_or_else(
                || context.now.to_string(),
                |c| c.last_transition_time.clone(),
            );
        Condition {
            type_: kind.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time: since,
            observed_generation: generation,
        }
    };
    let not_ready: Vec<&StreamletStatus> = streamlets
        .iter()
        .filter(|s| s.ready_replicas < s.desired_replicas)
        .collect();
    let erring: Vec<&StreamletStatus> = not_ready
        .iter()
        .copied()
        .filter(|s| s.last_error.is_some())
        .collect();
    let replicas = |s: &StreamletStatus| {
        format!(
            "{} ({}/{} ready)",
            s.name, s.ready_replicas, s.desired_replicas
        )
    };
    let ready_total: i32 = streamlets.iter().map(|s| s.ready_replicas).sum();
    let desired_total: i32 = streamlets.iter().map(|s| s.desired_replicas).sum();
    let (phase, message) = if app.metadata.deletion_timestamp.is_some() {
        (
            Phase::Undeploying,
            format!("deleting; {ready_total} pods still ready"),
        )
    } else if let Some(failure) = &failure {
        (Phase::Failed, failure.message.clone())
    } else if app.spec.suspended {
        let mut message = format!(
            "suspended: {} streamlets scaled to 0 replicas",
            streamlets.len()
        );
        if ready_total > 0 {
            message.push_str(&format!(", {ready_total} pods still ready"));
        }
        (Phase::Suspended, message)
    } else if not_ready.is_empty() {
        (
            Phase::Running,
            format!(
                "{} streamlets running, {ready_total}/{desired_total} replicas ready",
                streamlets.len()
            ),
        )
    } else if !erring.is_empty() {
        let details: Vec<String> = erring
            .iter()
            .map(|s| {
                format!(
                    "{}: {}",
                    replicas(s),
                    s.last_error.as_deref().unwrap_or_default()
                )
            })
            .collect();
        (Phase::Degraded, details.join("; "))
    } else {
        let waiting: Vec<String> = not_ready.iter().map(|s| replicas(s)).collect();
        (
            Phase::Pending,
            format!("waiting for {}", waiting.join(", ")),
        )
    };
    let (phase, message) = match rolled_back {
        Some(why) if matches!(phase, Phase::Running | Phase::Pending | Phase::Degraded) => {
            (Phase::RolledBack, format!("{why}; {message}"))
        }
        _ => (phase, message),
    };
    let (reconciled, topics_ready) = match &failure {
        Some(failure) if failure.topics => (
            condition("Reconciled", false, failure.reason, failure.message.clone()),
            condition(
                "TopicsReady",
                false,
                failure.reason,
                failure.message.clone(),
            ),
        ),
        Some(failure) => (
            condition("Reconciled", false, failure.reason, failure.message.clone()),
            previous
                .and_then(|p| p.condition("TopicsReady"))
                .cloned()
                .unwrap_or_else(|| {
                    condition(
                        "TopicsReady",
                        false,
                        "NotChecked",
                        "the spec was rejected before the topics were checked".to_owned(),
                    )
                }),
        ),
        None => (
            condition(
                "Reconciled",
                true,
                "Applied",
                "every object is applied".to_owned(),
            ),
            condition(
                "TopicsReady",
                true,
                "Created",
                "every managed topic exists".to_owned(),
            ),
        ),
    };
    let ready = condition(
        "Ready",
        phase == Phase::Running,
        phase.as_str(),
        message.clone(),
    );
    let idle: Vec<String> = streamlets
        .iter()
        .filter(|s| s.idle_replicas > 0)
        .map(|s| {
            format!(
                "{} has {} of {} replicas without a partition",
                s.name, s.idle_replicas, s.desired_replicas
            )
        })
        .collect();
    let idle_replicas = if idle.is_empty() {
        condition(
            "IdleReplicas",
            false,
            "EveryReplicaReads",
            "no streamlet has more replicas than the partitions of its inlets".to_owned(),
        )
    } else {
        condition(
            "IdleReplicas",
            true,
            "MoreReplicasThanPartitions",
            format!(
                "{}: a topic's partition is read by one member of a group; add partitions to the topic or scale down",
                idle.join("; ")
            ),
        )
    };
    let suspended = match (&failure, previous.and_then(|p| p.condition("Suspended"))) {
        (Some(_), Some(kept)) => kept.clone(),
        _ if app.spec.suspended && failure.is_none() => condition(
            "Suspended",
            true,
            "Suspended",
            "spec.suspended is true: every streamlet's Deployment is kept with 0 replicas; `runnel resume` runs them again".to_owned(),
        ),
        _ => condition(
            "Suspended",
            false,
            "NotSuspended",
            "the streamlets run the replicas of the spec (or of their autoscaler)".to_owned(),
        ),
    };
    let kept = previous.and_then(|p| p.condition("RolledBack"));
    let rolled_back = match (rolled_back, &failure, kept) {
        (Some(why), _, _) => condition("RolledBack", true, "ReadinessTimeout", why.to_owned()),
        (None, Some(_), Some(kept)) => kept.clone(),
        _ => condition(
            "RolledBack",
            false,
            "NotRolledBack",
            "the streamlets run the objects of the spec's generation".to_owned(),
        ),
    };
    ApplicationStatus {
        phase,
        message,
        observed_generation: generation,
        conditions: vec![
            ready,
            reconciled,
            topics_ready,
            idle_replicas,
            suspended,
            rolled_back,
        ],
        streamlets,
        operator_version: context.operator_version.clone(),
        last_running_spec: previous.and_then(|p| p.last_running_spec.clone()),
        rollout: previous.and_then(|p| p.rollout.clone()),
    }
}
