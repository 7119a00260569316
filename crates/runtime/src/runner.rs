//! [`run`]: start every streamlet instance of a [`Plan`] (or one of them) on a backplane and
//! keep them running until they finish or a shutdown drains them.

use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, TopicSpec};
use runnel_streamlet::{HostSettings, InstanceMetrics};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::console::Console;
use crate::end_of_input::EndOfInput;
use crate::plan::Plan;
use crate::status::{InstanceStatus, Snapshot, StatusBoard};
use crate::supervisor::{Outcome, RestartPolicy, Supervision, supervise};
use crate::view::{ViewMode, show};

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Run only this instance (pod mode, `run-streamlet`); inputs then never end.
    pub only: Option<String>,
    /// Buffer sizes and commit interval of every instance.
    pub host: HostSettings,
    /// When to restart failed instances.
    pub restart: RestartPolicy,
    /// How progress is shown.
    pub view: ViewMode,
    /// How often plain status lines are logged.
    pub plain_every: Duration,
    /// How long a shutdown may take before the run gives up on the remaining instances.
    pub drain_timeout: Duration,
    /// The last line of the live table (what is running where, how to stop).
    pub footer: String,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            only: None,
            host: HostSettings::default(),
            restart: RestartPolicy::default(),
            view: ViewMode::Auto,
            plain_every: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(30),
            footer: "press Ctrl-C to stop".to_owned(),
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Every instance that ran, with how it ended.
    pub outcomes: Vec<(String, Outcome)>,
    /// The final status.
    pub status: Snapshot,
}

/// Creates the plan's managed topics and the dead-letter topic, and checks that unmanaged
/// topics exist.
///
/// # Errors
///
/// When a topic cannot be created (a partition count mismatch included) or an unmanaged
/// topic is missing.
pub async fn provision(plan: &Plan, backend: &dyn Backend) -> Result<(), RunError> {
    let dead_letter = TopicSpec::new(&plan.dead_letter_topic, 1);
    for (spec, managed) in plan
        .topics
        .iter()
        .map(|t| (&t.spec, t.managed))
        .chain([(&dead_letter, true)])
    {
        if managed {
            backend
                .create_topic(spec)
                .await
                .map_err(|source| RunError::CreateTopic {
                    topic: spec.name.clone(),
                    source,
                })?;
        } else {
            let found =
                backend
                    .topic(&spec.name)
                    .await
                    .map_err(|source| RunError::DescribeTopic {
                        topic: spec.name.clone(),
                        source,
                    })?;
            if found.is_none() {
                return Err(RunError::MissingTopic {
                    topic: spec.name.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Runs the plan until every instance finished, or `shutdown` fires and they drained.
///
/// Topics are provisioned first. An instance that fails is restarted with backoff. When
/// every producer of a topic has finished, its readers end after reading everything, so a
/// bounded input (a source that stops) drains the whole graph and the run returns.
///
/// # Errors
///
/// See [`RunError`].
pub async fn run(
    plan: Plan,
    backend: Arc<dyn Backend>,
    options: RunOptions,
    console: Console,
    shutdown: CancellationToken,
) -> Result<RunReport, RunError> {
    let started = std::time::Instant::now();
    provision(&plan, &*backend).await?;
    let instances: Vec<_> = match &options.only {
        None => plan.instances.clone(),
        Some(name) => {
            let chosen: Vec<_> = plan
                .instances
                .iter()
                .filter(|i| &i.name == name)
                .cloned()
                .collect();
            if chosen.is_empty() {
                let known = plan.instances.iter().map(|i| i.name.clone()).collect();
                return Err(RunError::UnknownInstance {
                    name: name.clone(),
                    known,
                });
            }
            chosen
        }
    };
    let end_of_input = Arc::new(EndOfInput::new(&plan, options.only.is_none()));
    let statuses: Vec<Arc<InstanceStatus>> = instances
        .iter()
        .map(|instance| {
            let metrics = Arc::new(InstanceMetrics::for_shape(&(instance.factory)().shape()));
            let inlets = instance
                .inlets
                .iter()
                .map(|i| (i.topic.clone(), i.group.clone()))
                .collect();
            Arc::new(InstanceStatus::new(
                &instance.name,
                &instance.type_name,
                metrics,
                inlets,
            ))
        })
        .collect();
    let board = Arc::new(StatusBoard::new(
        &plan.app,
        statuses.clone(),
        backend.clone(),
    ));
    let (stop_sampler, stop_view) = (CancellationToken::new(), CancellationToken::new());
    let sampler = tokio::spawn({
        let (board, stop) = (board.clone(), stop_sampler.clone());
        async move { board.sample_every(Duration::from_secs(1), stop).await }
    });
    let view = tokio::spawn(show(
        board.clone(),
        console,
        options.view,
        options.plain_every,
        options.footer.clone(),
        stop_view.clone(),
    ));

    let supervision = Supervision {
        app: plan.app.clone(),
        backend: backend.clone(),
        dead_letter_topic: plan.dead_letter_topic.clone(),
        settings: options.host.clone(),
        restart: options.restart,
        end_of_input: end_of_input.clone(),
        started: Arc::new(tokio::sync::Notify::new()),
    };
    let announce_ready = tokio::spawn({
        let (statuses, notify) = (statuses.clone(), supervision.started.clone());
        async move {
            loop {
                notify.notified().await;
                if statuses
                    .iter()
                    .all(|status| status.state() != crate::InstanceState::Starting)
                {
                    tracing::info!(
                        "ready: {} streamlets running, {} ms after start",
                        statuses.len(),
                        started.elapsed().as_millis()
                    );
                    return;
                }
            }
        }
    });
    let mut running = JoinSet::new();
    for (index, (instance, status)) in instances.iter().zip(&statuses).enumerate() {
        let task = supervise(
            instance.clone(),
            supervision.clone(),
            status.clone(),
            shutdown.clone(),
        );
        running.spawn(async move { (index, task.await) });
    }

    let mut outcomes = Vec::new();
    let mut drained = Box::pin(async {
        while let Some(joined) = running.join_next().await {
            let Ok((index, outcome)) = joined else {
                continue;
            };
            if outcome == Outcome::Finished {
                end_of_input.finished(&instances[index].outlets);
            }
            outcomes.push((instances[index].name.clone(), outcome));
        }
    });
    let mut result = Ok(());
    tokio::select! {
        () = &mut drained => {}
        () = shutdown.cancelled() => {
            if tokio::time::timeout(options.drain_timeout, &mut drained).await.is_err() {
                let pending = statuses
                    .iter()
                    .filter(|status| !matches!(status.state(), crate::InstanceState::Stopped | crate::InstanceState::Finished))
                    .map(|status| status.name.clone())
                    .collect();
                result = Err(RunError::DrainTimeout { timeout: options.drain_timeout, pending });
            }
        }
    }
    drop(drained);
    announce_ready.abort();
    stop_sampler.cancel();
    let _ = sampler.await;
    let status = board.sample(None).await;
    board.publish(status.clone());
    stop_view.cancel();
    let _ = view.await;
    result.map(|()| RunReport { outcomes, status })
}
