//! The controller: watches Applications and what they own, observes, calls
//! [`reconcile`](crate::reconcile), carries the plan out; retries with a per-Application
//! backoff, so that one bad Application never holds up the others.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt as _};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::backplane::{Backplanes, chain, ensure_topics, group_lag, kept_schemas};
use crate::events::Events;
use crate::leader::{self, LeaderConfig};
use crate::names::{APP_LABEL, MANAGED_BY};
use crate::observe::observe;
use crate::observed::{LagSample, ReconcileContext, TopicFailure};
use crate::plan::Outcome;
use crate::{Application, Error, execute, reconcile};

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// The namespace to manage, or every namespace when `None`.
    pub namespace: Option<String>,
    /// The Kafka cluster of Applications that name none.
    pub default_bootstrap_servers: Option<String>,
    /// Kafka client settings for the operator's own clients (security, timeouts).
    pub kafka_settings: BTreeMap<String, String>,
    /// Leader election; `None` runs without (one replica only).
    pub leader: Option<LeaderConfig>,
    /// This replica's name in Events.
    pub identity: String,
    /// The operator's version, in statuses and on the lease.
    pub version: String,
}

struct Context {
    client: Client,
    config: OperatorConfig,
    backplanes: Arc<dyn Backplanes>,
    events: Events,
    /// Cancelled once this replica stops leading: nothing is written from then on.
    deposed: CancellationToken,
    failures: Mutex<HashMap<String, u32>>,
    /// The last end-offset sum per (app, streamlet), for input rates.
    ends: Mutex<HashMap<(String, String), (Instant, i64)>>,
}

/// How long [`run`] waits, when it returns, for the lease to be released.
const RELEASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the operator until `shutdown` is cancelled (or, with leader election, until it
/// loses the lease, which is an error: the process should exit and start over).
///
/// # Errors
///
/// When the lease cannot be used, or is lost.
pub async fn run(
    client: Client,
    config: OperatorConfig,
    backplanes: Arc<dyn Backplanes>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let stop = shutdown.child_token();
    // The lease is renewed by a task of its own, which must not outlive this function:
    // returning, or being dropped by whoever runs it, releases the lease, so that no replica
    // holds it without reconciling.
    let leading = shutdown.child_token();
    let _release_when_done = leading.clone().drop_guard();
    let (lost, renewing) = match &config.leader {
        Some(leader) => {
            let leadership = leader::lead(&client, leader, leading.clone()).await?;
            (Some(leadership.lost), Some(leadership.renewing))
        }
        None => (None, None),
    };
    // Releases the lease and waits until it is released (briefly: the next replica may
    // take it anyway once it expires), so the process exits with the lease free.
    let release = || async {
        leading.cancel();
        if let Some(renewing) = renewing {
            let _ = tokio::time::timeout(RELEASE_TIMEOUT, renewing).await;
        }
    };
    if shutdown.is_cancelled() {
        release().await;
        return Ok(());
    }
    // Without election nobody else writes: a token that is never cancelled.
    let deposed = lost.clone().unwrap_or_default();
    let context = Arc::new(Context {
        client: client.clone(),
        config: config.clone(),
        backplanes,
        events: Events::new(client.clone(), &config.identity, deposed.clone()),
        deposed,
        failures: Mutex::new(HashMap::new()),
        ends: Mutex::new(HashMap::new()),
    });
    let ours =
        watcher::Config::default().labels(&format!("app.kubernetes.io/managed-by={MANAGED_BY}"));
    let labelled = watcher::Config::default().labels(APP_LABEL);
    let ended = stop.clone();
    let stopping = {
        let stop = stop.clone();
        let lost = lost.clone();
        async move {
            match lost {
                Some(lost) => tokio::select! {
                    () = stop.cancelled() => {}
                    () = lost.cancelled() => {}
                },
                None => stop.cancelled().await,
            }
        }
    };
    Controller::new(
        scoped::<Application>(&client, &config),
        watcher::Config::default(),
    )
    .owns(scoped::<Deployment>(&client, &config), ours.clone())
    .owns(scoped::<ConfigMap>(&client, &config), ours.clone())
    .owns(scoped::<Service>(&client, &config), ours.clone())
    .owns(scoped::<PodDisruptionBudget>(&client, &config), ours)
    .watches(
        scoped::<Secret>(&client, &config),
        labelled.clone(),
        |secret| by_label(&secret),
    )
    .watches(scoped::<Pod>(&client, &config), labelled, |pod| {
        by_label(&pod)
    })
    .trigger_backoff(WatchBackoff::default())
    .graceful_shutdown_on(stopping)
    .run(reconcile_application, error_policy, context)
    .for_each(|result| async move {
        match result {
            Ok((object, _)) => tracing::debug!("reconciled {object}"),
            Err(error) => tracing::debug!("{}", chain(&error)),
        }
    })
    .await;
    ended.cancel();
    release().await;
    match lost {
        Some(lost) if lost.is_cancelled() && !shutdown.is_cancelled() => {
            let leader = config.leader.expect("a lease when lost is set");
            Err(Error::LostLease {
                namespace: leader.namespace,
                name: leader.name,
                holder: "another replica".to_owned(),
            })
        }
        _ => Ok(()),
    }
}

fn scoped<K>(client: &Client, config: &OperatorConfig) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    match &config.namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

fn by_label<K: kube::Resource>(object: &K) -> Option<ObjectRef<Application>> {
    let app = object.labels().get(APP_LABEL)?;
    Some(ObjectRef::new(app).within(object.namespace().as_deref().unwrap_or_default()))
}

fn key(app: &Application) -> String {
    format!("{}/{}", app.namespace().unwrap_or_default(), app.name())
}

async fn reconcile_application(
    app: Arc<Application>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let client = &context.client;
    if context.deposed.is_cancelled() {
        return Err(Error::Deposed { app: key(&app) });
    }
    let mut observed = observe(client, &app).await?;
    let now = ReconcileContext {
        now: Timestamp::now(),
        operator_version: context.config.version.clone(),
        default_bootstrap_servers: context.config.default_bootstrap_servers.clone(),
    };
    let first = reconcile(&app, &observed, &now);
    match &first.outcome {
        Outcome::Undeploying => {
            execute::write_status(client, &app, &first.status, &context.deposed).await?;
            return Ok(Action::await_change());
        }
        Outcome::Failed(message) => {
            return fail(&context, &app, &first, message).await;
        }
        Outcome::Converging(_) => {}
    }
    let configuration = {
        let mut configuration = app.spec.effective_configuration();
        if let Ok(secret) = &observed.secret_configuration {
            configuration.overlay(secret);
        }
        configuration
    };
    let mut settings = context.config.kafka_settings.clone();
    settings.extend(configuration.kafka.clone());
    let bootstrap = app
        .spec
        .kafka
        .bootstrap_servers
        .clone()
        .or_else(|| context.config.default_bootstrap_servers.clone())
        .unwrap_or_default();
    match context.backplanes.connect(&bootstrap, &settings).await {
        Err(message) => {
            observed.topics = Some(Err(TopicFailure {
                topic: None,
                message: format!(
                    "connecting to the Kafka cluster at {bootstrap} failed: {message}"
                ),
            }));
        }
        Ok(_) if context.deposed.is_cancelled() => {
            return Err(Error::Deposed { app: key(&app) });
        }
        Ok(backend) => {
            observed.topics = Some(ensure_topics(&*backend, &first.topics).await);
            observed.kept_schemas = kept_schemas(&*backend, &app.spec.topics).await;
            // A suspended app's autoscalers rest: nothing to sample.
            if !app.spec.suspended {
                observed.lag = sample_lag(&context, &app, &configuration, &*backend).await;
            }
        }
    }
    let plan = reconcile(&app, &observed, &now);
    match &plan.outcome {
        Outcome::Failed(message) => fail(&context, &app, &plan, message).await,
        Outcome::Undeploying => Ok(Action::await_change()),
        Outcome::Converging(after) => {
            execute::execute(client, &context.events, &app, &plan, &context.deposed).await?;
            context
                .failures
                .lock()
                .expect("not poisoned")
                .remove(&key(&app));
            Ok(Action::requeue(*after))
        }
    }
}

/// Writes the failed plan's status and Events and hands the failure to the backoff.
async fn fail(
    context: &Context,
    app: &Application,
    plan: &crate::Plan,
    message: &str,
) -> Result<Action, Error> {
    execute::write_status(&context.client, app, &plan.status, &context.deposed).await?;
    for event in &plan.events {
        context.events.publish(app, event).await;
    }
    Err(Error::Rejected {
        app: key(app),
        message: message.to_owned(),
    })
}

/// Consumer lag of every autoscaled streamlet, with input rates from the previous sample.
async fn sample_lag(
    context: &Context,
    app: &Application,
    configuration: &runnel_application::Configuration,
    backend: &dyn runnel_backend::Backend,
) -> BTreeMap<String, LagSample> {
    let mut samples = BTreeMap::new();
    let Ok(blueprint) = app.spec.verify(app.name()) else {
        return samples;
    };
    for instance in &blueprint.streamlets {
        if configuration.resolve(&instance.name).autoscaling.is_none() {
            continue;
        }
        let Some(declared) = app.spec.descriptor.streamlet(&instance.type_name) else {
            continue;
        };
        let (mut lag, mut end, mut partitions) = (0i64, 0i64, 0i32);
        let mut complete = true;
        for inlet in &declared.inlets {
            let Some(topic) = blueprint.topic_of(&instance.name, &inlet.name) else {
                continue;
            };
            let group = format!("{}.{}.{}", blueprint.name, instance.name, inlet.name);
            match group_lag(backend, &group, &topic.name).await {
                Ok((l, e, p)) => {
                    lag += l;
                    end += e;
                    partitions = partitions.max(p);
                }
                Err(message) => {
                    tracing::warn!("sampling the lag of {} failed: {message}", instance.name);
                    complete = false;
                }
            }
        }
        if !complete {
            continue;
        }
        let now = Instant::now();
        let previous = context
            .ends
            .lock()
            .expect("not poisoned")
            .insert((key(app), instance.name.clone()), (now, end));
        let rate = previous.and_then(|(then, before)| {
            let seconds = now.duration_since(then).as_secs_f64();
            (seconds >= 1.0).then(|| (end - before).max(0) as f64 / seconds)
        });
        samples.insert(
            instance.name.clone(),
            LagSample {
                lag,
                rate,
                partitions,
            },
        );
    }
    samples
}

/// Requeues with a backoff that doubles per consecutive failure of the same Application
/// (5 s to 5 min); other Applications are not affected.
fn error_policy(app: Arc<Application>, error: &Error, context: Arc<Context>) -> Action {
    let mut failures = context.failures.lock().expect("not poisoned");
    let count = failures.entry(key(&app)).or_insert(0);
    *count += 1;
    let delay = backoff(*count);
    tracing::warn!(
        "reconciling {} failed ({}), retrying in {delay:?}: {}",
        key(&app),
        error.metric_label(),
        chain(error)
    );
    Action::requeue(delay)
}

/// The pause of every watch after a watch error: 250 ms doubling to 1 s.
///
/// kube-runtime applies this one backoff to the merged stream of all seven watches (the
/// Applications and each kind the operator owns or watches), so an error of any watch
/// pauses all of them, and it is reset only when some watch yields an event. After an API
/// server restart every watch gets 410 Gone in turn, each needing only to list again: with
/// kube's default (up to 30 s), or even a 5 s cap, the pauses add up to more than half a
/// minute before the last watch lists again (seen in a test: a scale made right after the
/// restart was carried out 35 s later). Capped at 1 s, they add up to a few seconds; while
/// the server is down, the watches try again every second.
#[derive(Clone, Debug)]
struct WatchBackoff {
    next: Duration,
}

/// The longest pause of the watches after an error (see [`WatchBackoff`]).
const WATCH_BACKOFF_CAP: Duration = Duration::from_secs(1);

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff {
            next: Duration::from_millis(250),
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(WATCH_BACKOFF_CAP);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        *self = WatchBackoff::default();
    }
}

/// 5 s, 10 s, 20 s ... up to 5 minutes.
pub(crate) fn backoff(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1 << failures.saturating_sub(1).min(16));
    Duration::from_secs(seconds.min(300))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_pause_at_most_a_second_after_errors() {
        let pauses: Vec<u128> = WatchBackoff::default()
            .take(5)
            .map(|pause| pause.as_millis())
            .collect();
        assert_eq!(pauses, [250, 500, 1000, 1000, 1000]);
    }

    #[test]
    fn the_backoff_doubles_up_to_five_minutes() {
        let delays: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
    }
}
