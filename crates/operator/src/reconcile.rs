//! [`reconcile`]: from an Application and what the cluster holds to the objects it should
//! hold, the status and the Events. Pure: no I/O, the clock comes in the context.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt as _;
use runnel_application::{
    Phase, ResolvedStreamlet, Rollout, RunningSpec, StreamletStatus, TopicSpec,
};
use runnel_blueprint::descriptor::StateScope;

use crate::Application;
use crate::autoscale;
use crate::desired::{self, Streamlet, config_hash};
use crate::names::{CONFIG_HASH_ANNOTATION, STREAMLET_LABEL};
use crate::observed::{Observed, ReconcileContext};
use crate::plan::{Desired, Event, Outcome, Plan, Stale};
use crate::status::{Failure, application_status, is_ready, streamlet_status};
use crate::verify::{Secrets, Verified, verify};

/// The waiting reasons of a container whose image the kubelet cannot pull.
const IMAGE_PULL_FAILURES: [&str; 3] = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"];

/// How soon to look again while pods are starting or an autoscaler watches the lag.
const SOON: Duration = Duration::from_secs(10);
/// How soon to look again when everything runs (watch events come earlier).
const LATER: Duration = Duration::from_secs(300);

/// Decides what the cluster should hold for `app`, given what it holds (`observed`).
///
/// - A deleted Application (deletion timestamp set) gets phase `Undeploying` and nothing
///   else: Kubernetes' garbage collector removes what the operator created, through the
///   owner references, and nothing more.
/// - A spec that cannot be carried out (a blueprint that does not verify, a configuration
///   value the descriptor refuses, another protocol version, no Kafka cluster) changes
///   nothing in the cluster: phase `Failed`, the reason in the status and a Warning Event,
///   and [`Outcome::Failed`] for the controller's backoff.
/// - With `observed.topics` still `None`, the plan only lists the topics to make sure of.
/// - Schemas that do not fit those the backplane keeps for the topics (`observed.kept_schemas`,
///   from a schema registry) fail the same way, reason `IncompatibleSchemaChange`, with the
///   messages `verify --against` gives.
/// - Otherwise: a ConfigMap, a Secret, a Deployment and a PodDisruptionBudget per
///   streamlet (and a Service for those with an HTTP port), the objects of streamlets that
///   left the blueprint deleted,
///   replicas from the spec or the autoscaler, and Events for what changes.
/// - A suspended spec (`spec.suspended`) keeps every object but applies every Deployment
///   with 0 replicas, also those whose replicas an autoscaler owns (the operator takes
///   `spec.replicas` back; an HPA stops at a target with 0 replicas); phase `Suspended`.
///   Resumed, the streamlets get the spec's replicas again: an autoscaled one starts from
///   them, and an externally scaled one is left to its HPA (the API server resets the
///   replicas it no longer gets to its default, 1).
/// - Once every streamlet is ready (phase `Running`), the spec is kept in
///   `status.lastRunningSpec`. With `spec.rollback` set, a later generation whose
///   streamlets are not all ready `readinessTimeoutSeconds` after its objects were first
///   applied (`status.rollout.startTime`) is rolled back: the objects of the last running
///   spec are applied again, phase `RolledBack`, condition `RolledBack` true saying which
///   streamlets were not ready and their last error, and a Warning Event. That generation
///   is not tried again; the next one is. A first deploy, a suspended spec and a deleted
///   Application are never rolled back.
pub fn reconcile(app: &Application, observed: &Observed, context: &ReconcileContext) -> Plan {
    let planned: Vec<(String, i32)> = app
        .spec
        .streamlets
        .iter()
        .map(|s| (s.name.clone(), s.replicas))
        .collect();
    if app.metadata.deletion_timestamp.is_some() {
        let streamlets = planned
            .iter()
            .map(|(name, replicas)| streamlet_status(observed, name, None, *replicas))
            .collect();
        return Plan {
            topics: Vec::new(),
            apply: Vec::new(),
            delete: Vec::new(),
            status: application_status(app, streamlets, None, None, context),
            events: Vec::new(),
            outcome: Outcome::Undeploying,
        };
    }
    let accepted = match accept(app, observed, context) {
        Ok(accepted) => accepted,
        Err((reason, message)) => {
            return failed(app, observed, &planned, reason, message, false, context);
        }
    };
    let topics = topics_of(app);
    let existing = match &observed.topics {
        None => {
            return Plan {
                topics,
                apply: Vec::new(),
                delete: Vec::new(),
                status: app.status.clone().unwrap_or_default(),
                events: Vec::new(),
                outcome: Outcome::Converging(Duration::ZERO),
            };
        }
        Some(Err(failure)) => {
            let message = match &failure.topic {
                Some(topic) => format!("creating topic '{topic}' failed: {}", failure.message),
                None => format!("creating the topics failed: {}", failure.message),
            };
            return failed(
                app,
                observed,
                &planned,
                "TopicCreationFailed",
                message,
                true,
                context,
            );
        }
        Some(Ok(existing)) => existing,
    };
    let mismatched: Vec<String> = topics
        .iter()
        .filter_map(|topic| {
            let found = existing.iter().find(|t| t.name == topic.name)?;
            (found.partitions != topic.partitions).then(|| {
                format!(
                    "topic '{}' has {} partitions, the blueprint says {} (runnel never changes an existing topic)",
                    topic.name, found.partitions, topic.partitions
                )
            })
        })
        .collect();
    if !mismatched.is_empty() {
        return failed(
            app,
            observed,
            &planned,
            "PartitionMismatch",
            mismatched.join("; "),
            true,
            context,
        );
    }
    if let Err((reason, message)) = check_kept_schemas(app, observed) {
        return failed(app, observed, &planned, reason, message, false, context);
    }
    roll_out(app, observed, &accepted, topics, context)
}

/// Converges on the spec, or on the last spec that ran (`status.lastRunningSpec`) when
/// `spec.rollback` is set and the spec's generation was not ready within its timeout, or
/// was rolled back before. A rolled-back generation is not tried again; a new one is.
/// Records the rollout's start and, once the phase is `Running`, the spec that ran.
fn roll_out(
    app: &Application,
    observed: &Observed,
    accepted: &Verified,
    topics: Vec<TopicSpec>,
    context: &ReconcileContext,
) -> Plan {
    let generation = app.metadata.generation.unwrap_or_default();
    let previous = app.status.as_ref();
    let mut rollout = previous
        .and_then(|status| status.rollout.clone())
        .filter(|rollout| {
            rollout.generation == generation && rollout.start_time.parse::<Timestamp>().is_ok()
        })
        .unwrap_or_else(|| Rollout {
            generation,
            start_time: context.now.to_string(),
            rolled_back: false,
        });
    // Suspended is what the user asked for, not a failure to become ready.
    let settings = app.spec.rollback.as_ref().filter(|_| !app.spec.suspended);
    let last = previous
        .and_then(|status| status.last_running_spec.as_ref())
        .filter(|last| last.generation < generation);
    let mut plan = match (settings, last) {
        (Some(_), Some(last)) if rollout.rolled_back => {
            let why = previous
                .and_then(|status| status.condition("RolledBack"))
                .filter(|condition| condition.is_true())
                .map_or_else(
                    || {
                        format!(
                            "generation {generation} was rolled back to generation {}",
                            last.generation
                        )
                    },
                    |condition| condition.message.clone(),
                );
            match run_last(app, last, observed, context, &why) {
                Ok(plan) => plan,
                Err(problem) => {
                    rollout.rolled_back = false;
                    with_failed_rollback(
                        converge(app, observed, accepted, topics, context, None),
                        last,
                        problem,
                    )
                }
            }
        }
        (Some(settings), Some(last)) => {
            let plan = converge(app, observed, accepted, topics, context, None);
            let started: Timestamp = rollout.start_time.parse().expect("checked above");
            let waited = context.now.as_second() - started.as_second();
            let timeout = settings.readiness_timeout_seconds;
            let not_ready = not_ready_on_template(&plan, observed);
            if not_ready.is_empty() {
                plan
            } else if waited < i64::from(timeout) {
                // Old pods may make the phase Running meanwhile: look again soon anyway, so
                // the deadline is not missed by up to `LATER`.
                let mut plan = plan;
                plan.outcome = Outcome::Converging(SOON);
                plan
            } else {
                let why = format!(
                    "generation {generation} was not ready {timeout}s after it was applied ({}): rolled back to generation {}",
                    not_ready.join("; "),
                    last.generation
                );
                match run_last(app, last, observed, context, &why) {
                    Ok(mut rolled_back) => {
                        rollout.rolled_back = true;
                        rolled_back.events.insert(
                            0,
                            Event::warning(
                                "RolledBack",
                                "Rollback",
                                format!("{why}; it is not tried again, a new spec change is"),
                            ),
                        );
                        rolled_back
                    }
                    Err(problem) => with_failed_rollback(plan, last, problem),
                }
            }
        }
        _ => converge(app, observed, accepted, topics, context, None),
    };
    plan.status.rollout = Some(rollout);
    if plan.status.phase == Phase::Running && not_ready_on_template(&plan, observed).is_empty() {
        plan.status.last_running_spec = Some(RunningSpec {
            generation,
            spec: app.spec.clone(),
        });
    }
    plan
}

/// The streamlets of `plan` with fewer ready pods of the template it applies (the image
/// and the configuration hash of its Deployment) than replicas, each with its last error.
/// A rolling update keeps a streamlet's old pods until new ones are ready (`maxUnavailable`
/// 0): they count in the status's ready replicas, but they do not run this spec.
fn not_ready_on_template(plan: &Plan, observed: &Observed) -> Vec<String> {
    let image_of = |spec: Option<&PodSpec>| {
        spec.and_then(|spec| spec.containers.first())
            .and_then(|container| container.image.clone())
    };
    let hash_of = |meta: Option<&ObjectMeta>| {
        meta.and_then(|meta| meta.annotations.as_ref())
            .and_then(|annotations| annotations.get(CONFIG_HASH_ANNOTATION).cloned())
    };
    plan.status
        .streamlets
        .iter()
        .filter_map(|status| {
            let template = plan.apply.iter().find_map(|desired| match desired {
                Desired::Deployment(deployment)
                    if deployment.labels().get(STREAMLET_LABEL) == Some(&status.name) =>
                {
                    deployment.spec.as_ref().map(|spec| &spec.template)
                }
                _ => None,
            })?;
            let (image, hash) = (
                image_of(template.spec.as_ref()),
                hash_of(template.metadata.as_ref()),
            );
            let ready = observed
                .pods_of(&status.name)
                .filter(|pod| {
                    is_ready(pod)
                        && image_of(pod.spec.as_ref()) == image
                        && hash_of(Some(&pod.metadata)) == hash
                })
                .count() as i32;
            (ready < status.desired_replicas).then(|| {
                let mut text = format!(
                    "streamlet {} {ready}/{} ready",
                    status.name, status.desired_replicas
                );
                if let Some(error) = &status.last_error {
                    text.push_str(&format!(", last error: {error}"));
                }
                text
            })
        })
        .collect()
}

/// The plan for the last spec that ran, in place of `app`'s, or why that spec cannot be
/// carried out any more (its protocol, its configuration against the secret values now).
fn run_last(
    app: &Application,
    last: &RunningSpec,
    observed: &Observed,
    context: &ReconcileContext,
    why: &str,
) -> Result<Plan, String> {
    let mut earlier = app.clone();
    earlier.spec = last.spec.clone();
    let accepted = accept(&earlier, observed, context).map_err(|(_, message)| message)?;
    let topics = topics_of(&earlier);
    Ok(converge(
        &earlier,
        observed,
        &accepted,
        topics,
        context,
        Some(why),
    ))
}

/// `plan` (the spec's own) with a Warning Event saying why the last spec that ran could
/// not be applied again.
fn with_failed_rollback(mut plan: Plan, last: &RunningSpec, problem: String) -> Plan {
    plan.events.push(Event::warning(
        "RollbackFailed",
        "Rollback",
        format!(
            "cannot roll back to generation {}: {problem}; the spec's generation stays applied",
            last.generation
        ),
    ));
    plan
}

/// Checks everything that can make the spec impossible ([`verify`]), with the secret
/// configuration's values.
fn accept(
    app: &Application,
    observed: &Observed,
    context: &ReconcileContext,
) -> Result<Verified, (&'static str, String)> {
    let secret = observed
        .secret_configuration
        .clone()
        .map_err(|message| ("SecretConfiguration", message))?;
    verify(
        app,
        Secrets::Known(&secret),
        &context.operator_version,
        context.default_bootstrap_servers.as_deref(),
    )
    .map_err(|refusal| (refusal.reason, refusal.message))
}

/// Refuses a spec whose schemas do not fit those the backplane keeps for its topics, as
/// `verify --against` and `run` would: a consumer that cannot read a schema records of its
/// topic were written with, or a producer whose schema breaks its topic's compatibility
/// rule, naming the version, the rule and the field.
fn check_kept_schemas(
    app: &Application,
    observed: &Observed,
) -> Result<(), (&'static str, String)> {
    let kept = match &observed.kept_schemas {
        None => return Ok(()),
        Some(Err(message)) => return Err(("SchemasUnavailable", message.clone())),
        Some(Ok(kept)) => kept,
    };
    let verification = runnel_blueprint::verify_against(
        std::path::Path::new("blueprint.toml"),
        &app.spec.blueprint,
        &app.spec.descriptor,
        kept,
    );
    let broken: Vec<String> = verification
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.code == runnel_blueprint::Code::IncompatibleSchemaChange)
        .map(|diagnostic| diagnostic.message.clone())
        .collect();
    if broken.is_empty() {
        Ok(())
    } else {
        Err(("IncompatibleSchemaChange", broken.join("; ")))
    }
}

/// The managed topics of the blueprint and the app's dead-letter topic, as `app run`
/// provisions them.
fn topics_of(app: &Application) -> Vec<TopicSpec> {
    let mut topics: Vec<TopicSpec> = app
        .spec
        .topics
        .iter()
        .filter(|topic| topic.managed)
        .cloned()
        .collect();
    topics.push(TopicSpec {
        name: format!("{}.dead-letter", app.name()),
        partitions: 1,
        managed: true,
        ..TopicSpec::default()
    });
    topics
}

fn failed(
    app: &Application,
    observed: &Observed,
    planned: &[(String, i32)],
    reason: &'static str,
    message: String,
    topics: bool,
    context: &ReconcileContext,
) -> Plan {
    let streamlets = planned
        .iter()
        .map(|(name, replicas)| streamlet_status(observed, name, None, *replicas))
        .collect();
    let failure = Failure {
        reason,
        message: message.clone(),
        topics,
    };
    Plan {
        topics: Vec::new(),
        apply: Vec::new(),
        delete: Vec::new(),
        status: application_status(app, streamlets, Some(failure), None, context),
        events: vec![Event::warning(reason, "Reconcile", message.clone())],
        outcome: Outcome::Failed(message),
    }
}

fn converge(
    app: &Application,
    observed: &Observed,
    accepted: &Verified,
    topics: Vec<TopicSpec>,
    context: &ReconcileContext,
    rolled_back: Option<&str>,
) -> Plan {
    let mut apply = Vec::new();
    let mut events = Vec::new();
    let mut statuses: Vec<StreamletStatus> = Vec::new();
    let mut autoscaled = false;
    let suspended = app.spec.suspended;
    let mut running: Vec<String> = Vec::new();
    for instance in &accepted.blueprint.streamlets {
        let name = instance.name.as_str();
        let declared = app
            .spec
            .descriptor
            .streamlet(&instance.type_name)
            .expect("a verified blueprint's types are in the descriptor");
        let resolved: ResolvedStreamlet = accepted.configuration.resolve(name);
        let spec_replicas = app.spec.streamlet(name).map_or(1, |s| s.replicas);
        let observed_deployment = observed.deployment(name);
        let current = observed_deployment
            .and_then(|d| d.spec.as_ref())
            .and_then(|spec| spec.replicas)
            .unwrap_or(spec_replicas);
        let previous_autoscaling = app
            .status
            .as_ref()
            .and_then(|status| status.streamlets.iter().find(|s| s.name == name))
            .and_then(|s| s.autoscaling.as_ref());
        let mut autoscaling_status = None;
        let replicas = if suspended {
            // The autoscaler rests: its last decision stays in the status.
            autoscaling_status = previous_autoscaling.cloned();
            Some(0)
        } else if resolved.external_scaling {
            None
        } else if let Some(settings) = &resolved.autoscaling {
            autoscaled = true;
            // The autoscaler never chooses 0 (min-replicas is at least 1): a Deployment at
            // 0 was suspended (or scaled by hand), and starts again from the spec's replicas.
            let from = if current > 0 { current } else { spec_replicas };
            let decision = autoscale::decide(
                name,
                settings,
                from,
                observed.lag.get(name),
                previous_autoscaling,
                context.now,
            );
            if let Some(note) = decision.change {
                events.push(Event::normal("Autoscaled", "Scale", note));
            }
            autoscaling_status = Some(decision.status);
            Some(decision.replicas)
        } else {
            Some(spec_replicas)
        };
        // One state for the whole instance: a second member would take part of the input
        // without the state (`runnel scale` refuses it; an Application edited by hand gets
        // one replica and a warning).
        let replicas = match replicas {
            Some(replicas) if replicas > 1 && declared.state == StateScope::Instance => {
                events.push(Event::warning(
                    "SingleInstanceState",
                    "Scale",
                    format!(
                        "streamlet {name} keeps one state for the whole instance, so it runs with 1 replica, not {replicas}; keep its state by input partition to scale it out"
                    ),
                ));
                Some(1)
            }
            other => other,
        };
        running.push(match replicas {
            Some(replicas) => format!("{name} {replicas}"),
            None => format!("{name} as its autoscaler says"),
        });
        let streamlet = Streamlet {
            app,
            instance: name,
            resolved: &resolved,
            declared,
            replicas,
            bootstrap_servers: &accepted.bootstrap_servers,
        };
        let deployment = desired::deployment(&streamlet);
        events.extend(describe_change(
            name,
            observed_deployment,
            &deployment,
            &config_hash(&streamlet),
            resolved.autoscaling.is_some(),
        ));
        apply.push(Desired::ConfigMap(desired::config_map(&streamlet)));
        apply.push(Desired::Secret(desired::secret(&streamlet)));
        if let Some(service) = desired::service(&streamlet) {
            apply.push(Desired::Service(service));
        }
        apply.push(Desired::Deployment(deployment));
        apply.push(Desired::PodDisruptionBudget(
            desired::pod_disruption_budget(&streamlet),
        ));
        let mut status = streamlet_status(observed, name, replicas, current);
        status.autoscaling = autoscaling_status;
        if let Some(error) = status.last_error.as_deref().filter(|error| {
            IMAGE_PULL_FAILURES
                .iter()
                .any(|reason| error.starts_with(reason))
        }) {
            events.push(Event::warning(
                "ImagePullFailed",
                "Apply",
                format!(
                    "streamlet {name} cannot start: image {} cannot be pulled ({error}); check the image reference, that it was pushed, and imagePullSecrets",
                    app.spec.image
                ),
            ));
        }
        if let Some(partitions) = app.spec.inlet_partitions(name) {
            status.idle_replicas = (status.desired_replicas - partitions).max(0);
            if status.idle_replicas > 0 {
                events.push(Event::warning(
                    "IdleReplicas",
                    "Scale",
                    format!(
                        "streamlet {name} runs {} replicas, but its inlets' topics have at most {partitions} partitions: {} replicas hold none and stay idle",
                        status.desired_replicas, status.idle_replicas
                    ),
                ));
            }
        }
        statuses.push(status);
    }
    let delete = stale(observed, &apply);
    for gone in delete.iter().filter(|s| s.kind == "Deployment") {
        events.push(Event::normal(
            "Removed",
            "Delete",
            format!(
                "{} is no longer in the blueprint: deleting its Deployment",
                gone.name
            ),
        ));
    }
    let previous_phase = app.status.as_ref().map(|status| status.phase);
    if suspended && previous_phase != Some(Phase::Suspended) {
        events.push(Event::normal(
            "Suspended",
            "Scale",
            "suspended: every streamlet's Deployment scaled to 0 replicas; the objects, topics and consumer offsets stay".to_owned(),
        ));
    } else if !suspended && previous_phase == Some(Phase::Suspended) {
        events.push(Event::normal(
            "Resumed",
            "Scale",
            format!("resumed with replicas {}", running.join(", ")),
        ));
    }
    let status = application_status(app, statuses, None, rolled_back, context);
    let settled = match status.phase {
        Phase::Running => true,
        Phase::RolledBack => status
            .streamlets
            .iter()
            .all(|s| s.ready_replicas >= s.desired_replicas),
        // Suspended and settled once no pod is left.
        Phase::Suspended => status.streamlets.iter().all(|s| s.ready_replicas == 0),
        _ => false,
    };
    Plan {
        topics,
        apply,
        delete,
        status,
        events,
        outcome: Outcome::Converging(if autoscaled || !settled { SOON } else { LATER }),
    }
}

/// An Event for what applying `desired` changes in `observed`: a new streamlet, new
/// replicas, a new image, a new configuration, or fields someone else changed back.
fn describe_change(
    name: &str,
    observed: Option<&Deployment>,
    desired: &Deployment,
    hash: &str,
    autoscaled: bool,
) -> Option<Event> {
    let replicas_of = |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas);
    let Some(observed) = observed else {
        let replicas = replicas_of(desired).map_or_else(|| "default".to_owned(), |r| r.to_string());
        return Some(Event::normal(
            "Created",
            "Apply",
            format!("created streamlet {name} with {replicas} replicas"),
        ));
    };
    let container = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|s| s.containers.first())
            .cloned()
            .unwrap_or_default()
    };
    let annotation = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(CONFIG_HASH_ANNOTATION).cloned())
    };
    let (before, after) = (container(observed), container(desired));
    let mut changes = Vec::new();
    let (from, to) = (replicas_of(observed), replicas_of(desired));
    if to.is_some() && from != to && !autoscaled {
        changes.push(format!(
            "replicas {} -> {}",
            from.map_or_else(|| "unset".to_owned(), |r| r.to_string()),
            to.unwrap_or_default()
        ));
    }
    if before.image != after.image {
        changes.push(format!(
            "image {} -> {}",
            before.image.unwrap_or_default(),
            after.image.unwrap_or_default()
        ));
    }
    if annotation(observed).as_deref() != Some(hash) {
        changes.push("configuration changed, rolling its pods".to_owned());
    }
    let (before_args, after_args) = (before.args, after.args);
    if before_args != after_args && changes.is_empty() {
        changes.push("container arguments restored".to_owned());
    }
    if before.env != after.env && changes.is_empty() {
        changes.push("container environment restored".to_owned());
    }
    (!changes.is_empty()).then(|| {
        Event::normal(
            "Updated",
            "Apply",
            format!("streamlet {name}: {}", changes.join("; ")),
        )
    })
}

/// The objects the operator created earlier that the plan no longer has.
fn stale(observed: &Observed, apply: &[Desired]) -> Vec<Stale> {
    let wanted: BTreeSet<(&str, String)> = apply
        .iter()
        .map(|desired| match desired {
            Desired::ConfigMap(o) => ("ConfigMap", o.name_any()),
            Desired::Secret(o) => ("Secret", o.name_any()),
            Desired::Deployment(o) => ("Deployment", o.name_any()),
            Desired::Service(o) => ("Service", o.name_any()),
            Desired::PodDisruptionBudget(o) => ("PodDisruptionBudget", o.name_any()),
        })
        .collect();
    let mut stale = Vec::new();
    let mut check = |kind: &'static str, name: String| {
        if !wanted.contains(&(kind, name.clone())) {
            stale.push(Stale { kind, name });
        }
    };
    for object in &observed.config_maps {
        check("ConfigMap", object.name_any());
    }
    for object in &observed.secrets {
        check("Secret", object.name_any());
    }
    for object in &observed.services {
        check("Service", object.name_any());
    }
    for object in &observed.deployments {
        check("Deployment", object.name_any());
    }
    for object in &observed.pod_disruption_budgets {
        check("PodDisruptionBudget", object.name_any());
    }
    stale.sort();
    stale
}

#[cfg(test)]
pub(crate) mod tests;
