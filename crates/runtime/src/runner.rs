//! [`run`]: start every streamlet instance of a [`Plan`] (or one of them) on a backplane and
//! keep them running until they finish or a shutdown drains them.

use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, TopicSpec};
use runnel_blueprint::descriptor::Delivery;
use runnel_host::{HostSettings, TopicPort};
use runnel_streamlet::InstanceMetrics;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::console::Console;
use crate::end_of_input::EndOfInput;
use crate::instance_status::{InstanceStatus, PortBinding};
use crate::plan::InstancePlan;
use crate::plan::Plan;
use crate::status::{StatusBoard, TopicBinding};
use crate::supervisor::{Outcome, RestartPolicy, Supervision, supervise};
use crate::topic_keeper::keep_topics;
use crate::view::{ViewMode, show};
use runnel_status::{InstanceState, Snapshot};

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
    /// This process's name among the processes running the same instances, for the
    /// transactional ids of exactly-once instances: `<app>.<instance>.<replica>`. Keep it
    /// stable across restarts of a replica (a pod ordinal), so a restart fences the previous
    /// attempt and aborts its open transaction at once.
    pub replica: String,
    /// Whether the process's consumers join their groups as static members named
    /// `<app>.<instance>.<replica>`, so that the process killed and started again reads its
    /// partitions at once instead of after the session timeout. Only for a replica that
    /// comes back under its name (`run`, which runs the whole app in one process): a static
    /// member does not leave its groups when it stops.
    pub static_members: bool,
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
            replica: "0".to_owned(),
            static_members: false,
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

/// Runs the plan until every instance finished, or `shutdown` fires and they drained:
/// [`start`] and then [`Running::wait`].
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
    start(plan, backend, options, console, shutdown)
        .await?
        .wait()
        .await
}

/// Provisions the plan's topics and starts every instance (or the one named in
/// `options.only`) under a supervisor, with the status sampler and the view.
///
/// An instance that fails is restarted with backoff. When every producer of a topic has
/// finished, its readers end after reading everything, so a bounded input (a source that
/// stops) drains the whole graph and [`Running::wait`] returns.
///
/// # Errors
///
/// When topics cannot be provisioned or `options.only` names no instance.
pub async fn start(
    plan: Plan,
    backend: Arc<dyn Backend>,
    options: RunOptions,
    console: Console,
    shutdown: CancellationToken,
) -> Result<Running, RunError> {
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
    if !backend.supports_transactions()
        && let Some(instance) = instances
            .iter()
            .find(|i| i.delivery == Delivery::ExactlyOnce)
    {
        return Err(RunError::TransactionsUnsupported {
            instance: instance.name.clone(),
        });
    }
    check_schemas(&instances, &*backend).await?;
    let end_of_input = Arc::new(EndOfInput::new(&plan, options.only.is_none()));
    let statuses: Vec<Arc<InstanceStatus>> = instances.iter().map(status_of).collect();
    let topics = plan
        .topics
        .iter()
        .map(|topic| TopicBinding {
            name: topic.spec.name.clone(),
            producers: topic.producers.clone(),
            consumers: topic.consumers.clone(),
        })
        .collect();
    let board = Arc::new(StatusBoard::new(
        &plan.app,
        statuses.clone(),
        topics,
        backend.clone(),
    ));
    let (stop_sampler, stop_view) = (CancellationToken::new(), CancellationToken::new());
    let sampler = tokio::spawn({
        let (board, stop) = (board.clone(), stop_sampler.clone());
        async move { board.sample_every(Duration::from_secs(1), stop).await }
    });
    let managed = plan
        .topics
        .iter()
        .filter(|topic| topic.managed)
        .map(|topic| topic.spec.clone())
        .collect();
    let topic_keeper = tokio::spawn(keep_topics(
        board.clone(),
        backend.clone(),
        managed,
        stop_sampler.clone(),
    ));
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
        replica: options.replica.clone(),
        static_members: options.static_members,
    };
    let announce_ready = tokio::spawn({
        let (board, notify) = (board.clone(), supervision.started.clone());
        async move {
            loop {
                notify.notified().await;
                let instances = board.instances();
                if instances
                    .iter()
                    .all(|status| status.state() != InstanceState::Starting)
                {
                    board.mark_ready();
                    tracing::info!(
                        "ready: {} streamlets running, {} ms after start",
                        instances.len(),
                        started.elapsed().as_millis()
                    );
                    return;
                }
            }
        }
    });
    let mut supervisors = JoinSet::new();
    for (index, (instance, status)) in instances.iter().zip(&statuses).enumerate() {
        let task = supervise(
            instance.clone(),
            supervision.clone(),
            status.clone(),
            shutdown.clone(),
        );
        supervisors.spawn(async move { (index, task.await) });
    }
    Ok(Running {
        instances,
        board,
        supervisors,
        end_of_input,
        shutdown,
        drain_timeout: options.drain_timeout,
        background: Background {
            announce_ready,
            sampler,
            topic_keeper,
            stop_sampler,
            view,
            stop_view,
        },
    })
}

/// Refuses to start when an inlet cannot read every schema kept with its topic (a type
/// changed in a way that cannot read what is there already), or an outlet's schema breaks
/// its topic's compatibility rule, naming each one, the version and the field.
async fn check_schemas(instances: &[InstancePlan], backend: &dyn Backend) -> Result<(), RunError> {
    let mut unreadable = Vec::new();
    let mut incompatible = Vec::new();
    for instance in instances {
        let shape = (instance.factory)().shape();
        let inlets: Vec<TopicPort<'_>> = instance
            .inlets
            .iter()
            .map(|inlet| TopicPort {
                port: &inlet.port,
                topic: &inlet.topic,
                compatibility: inlet.compatibility,
            })
            .collect();
        let outlets: Vec<TopicPort<'_>> = instance
            .outlets
            .iter()
            .map(|outlet| TopicPort {
                port: &outlet.port,
                topic: &outlet.topic,
                compatibility: outlet.compatibility,
            })
            .collect();
        let found = runnel_host::check_readable(&instance.name, &shape, &inlets, backend)
            .await
            .map_err(RunError::TopicSchemas)?;
        unreadable.extend(found);
        let found = runnel_host::check_writable(&instance.name, &shape, &outlets, backend)
            .await
            .map_err(RunError::TopicSchemas)?;
        incompatible.extend(found);
    }
    if unreadable.is_empty() && incompatible.is_empty() {
        Ok(())
    } else {
        Err(RunError::UnreadableSchemas {
            unreadable,
            incompatible,
        })
    }
}

/// The status of one planned instance, before it starts.
fn status_of(instance: &InstancePlan) -> Arc<InstanceStatus> {
    let metrics = Arc::new(InstanceMetrics::for_shape(&(instance.factory)().shape()));
    let inlets = instance
        .inlets
        .iter()
        .map(|inlet| PortBinding {
            port: inlet.port.clone(),
            topic: inlet.topic.clone(),
            group: Some(inlet.group.clone()),
        })
        .collect();
    let outlets = instance
        .outlets
        .iter()
        .map(|outlet| PortBinding {
            port: outlet.port.clone(),
            topic: outlet.topic.clone(),
            group: None,
        })
        .collect();
    Arc::new(InstanceStatus::new(
        &instance.name,
        &instance.type_name,
        metrics,
        inlets,
        outlets,
    ))
}

/// A started run: its status board, and the supervisors to wait for.
#[derive(Debug)]
pub struct Running {
    instances: Vec<InstancePlan>,
    board: Arc<StatusBoard>,
    supervisors: JoinSet<(usize, Outcome)>,
    end_of_input: Arc<EndOfInput>,
    shutdown: CancellationToken,
    drain_timeout: Duration,
    background: Background,
}

/// The tasks around the supervisors.
#[derive(Debug)]
struct Background {
    announce_ready: tokio::task::JoinHandle<()>,
    sampler: tokio::task::JoinHandle<()>,
    topic_keeper: tokio::task::JoinHandle<()>,
    stop_sampler: CancellationToken,
    view: tokio::task::JoinHandle<()>,
    stop_view: CancellationToken,
}

impl Running {
    /// The board the live view, the admin API and the metrics read.
    pub fn board(&self) -> &Arc<StatusBoard> {
        &self.board
    }

    /// Waits until every instance finished, or the shutdown fired and they drained.
    ///
    /// # Errors
    ///
    /// [`RunError::DrainTimeout`] when instances keep running longer than the drain timeout
    /// after the shutdown.
    pub async fn wait(mut self) -> Result<RunReport, RunError> {
        let mut outcomes = Vec::new();
        let (instances, end_of_input) = (&self.instances, &self.end_of_input);
        let supervisors = &mut self.supervisors;
        let mut drained = Box::pin(async {
            while let Some(joined) = supervisors.join_next().await {
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
            () = self.shutdown.cancelled() => {
                if tokio::time::timeout(self.drain_timeout, &mut drained).await.is_err() {
                    let pending = self
                        .board
                        .instances()
                        .iter()
                        .filter(|status| {
                            !matches!(status.state(), InstanceState::Stopped | InstanceState::Finished)
                        })
                        .map(|status| status.name.clone())
                        .collect();
                    result = Err(RunError::DrainTimeout { timeout: self.drain_timeout, pending });
                }
            }
        }
        drop(drained);
        let background = self.background;
        background.announce_ready.abort();
        background.stop_sampler.cancel();
        let _ = background.sampler.await;
        let _ = background.topic_keeper.await;
        let status = self.board.sample(None).await;
        self.board.publish(status.clone());
        background.stop_view.cancel();
        let _ = background.view.await;
        result.map(|()| RunReport { outcomes, status })
    }
}
