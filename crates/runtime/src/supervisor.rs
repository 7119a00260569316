//! Keeping a streamlet instance running: restart with exponential backoff after a failure,
//! report every failure, stop on shutdown.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::Backend;
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};
use runnel_streamlet::{ErrorKind, FailedAttempts, SystemClock};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::end_of_input::EndOfInput;
use crate::instance_status::InstanceStatus;
use crate::plan::InstancePlan;
use runnel_status::InstanceState;

/// When to restart a failed streamlet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The wait before the first restart.
    pub initial_backoff: Duration,
    /// The longest wait; each failure doubles the wait up to this.
    pub max_backoff: Duration,
    /// A run that lasted this long resets the wait to the initial one.
    pub reset_after: Duration,
    /// How many times in a row the instance may fail while handling the same record before
    /// that record is handed to its inlet's bad-data policy (see [`FailedAttempts`]).
    pub max_attempts_per_record: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            reset_after: Duration::from_secs(60),
            max_attempts_per_record: 3,
        }
    }
}

/// The waits between restarts.
#[derive(Debug)]
pub(crate) struct Backoff {
    policy: RestartPolicy,
    next: Duration,
}

impl Backoff {
    pub(crate) fn new(policy: RestartPolicy) -> Self {
        Backoff {
            policy,
            next: policy.initial_backoff,
        }
    }

    /// The wait before restarting a run that failed after running for `ran_for`.
    pub(crate) fn after_failure(&mut self, ran_for: Duration) -> Duration {
        if ran_for >= self.policy.reset_after {
            self.next = self.policy.initial_backoff;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(self.policy.max_backoff);
        wait
    }
}

/// How a supervised instance ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It returned on its own.
    Finished,
    /// It was asked to stop.
    Stopped,
}

/// How a run of an instance failed.
struct Failure {
    /// The kind, as metric labels and `restarts_by_kind` name it.
    kind: &'static str,
    /// What to report.
    message: String,
    /// Whether the record in hand may be at fault (not an external system being away).
    blames_the_record: bool,
}

/// What a supervisor needs besides the instance plan.
#[derive(Clone, Debug)]
pub(crate) struct Supervision {
    pub(crate) app: String,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) dead_letter_topic: String,
    pub(crate) settings: HostSettings,
    pub(crate) restart: RestartPolicy,
    pub(crate) end_of_input: Arc<EndOfInput>,
    /// Notified whenever an instance has connected its ports and started running.
    pub(crate) started: Arc<tokio::sync::Notify>,
    /// This process's replica name, for transactional ids.
    pub(crate) replica: String,
    /// Whether consumers join as static members named like the transactional ids.
    pub(crate) static_members: bool,
}

/// Runs an instance until it finishes or `shutdown` fires, restarting it after failures.
pub(crate) async fn supervise(
    instance: InstancePlan,
    supervision: Supervision,
    status: Arc<InstanceStatus>,
    shutdown: CancellationToken,
) -> Outcome {
    let mut backoff = Backoff::new(supervision.restart);
    let attempts = Arc::new(FailedAttempts::new(
        supervision.restart.max_attempts_per_record,
    ));
    loop {
        status.set_state(InstanceState::Starting);
        let started = Instant::now();
        let span = tracing::info_span!("streamlet", name = %instance.name);
        let (ready, connected) = tokio::sync::oneshot::channel();
        let running = tokio::spawn(
            run_instance(
                (instance.factory)(),
                supervision.backend.clone(),
                wiring(&instance, &supervision, ready, attempts.clone()),
                Arc::new(SystemClock),
                status.metrics.clone(),
                shutdown.clone(),
            )
            .instrument(span),
        );
        let running = async {
            // Running once its ports are connected; a failure before that skips the wait.
            if connected.await.is_ok() {
                status.set_state(InstanceState::Running);
                supervision.started.notify_one();
            }
            running.await
        };
        let failure = match running.await {
            Ok(Ok(())) if shutdown.is_cancelled() => {
                status.set_state(InstanceState::Stopped);
                return Outcome::Stopped;
            }
            Ok(Ok(())) => {
                status.set_state(InstanceState::Finished);
                return Outcome::Finished;
            }
            Ok(Err(error)) => Failure {
                kind: error.kind().label(),
                message: format!("{} error: {error:#}", error.kind().label()),
                // A broker or service being away is no fault of the record in hand.
                blames_the_record: error.kind() != ErrorKind::External,
            },
            Err(join) if join.is_panic() => Failure {
                kind: "panic",
                message: format!("panicked: {}", panic_message(join.into_panic())),
                blames_the_record: true,
            },
            Err(join) => Failure {
                kind: "aborted",
                message: format!("was aborted: {join}"),
                blames_the_record: false,
            },
        };
        let Failure {
            kind,
            message: failure,
            blames_the_record,
        } = failure;
        status.record_failure(kind, failure.clone());
        if blames_the_record
            && let Some(failures) = attempts.record_failure(&failure)
            && failures >= attempts.max_attempts()
        {
            tracing::warn!(
                streamlet = %instance.name,
                "streamlet '{}' failed {failures} times in a row while handling the same record; it goes to the inlet's bad-data policy after this restart",
                instance.name
            );
        }
        if shutdown.is_cancelled() {
            tracing::error!(streamlet = %instance.name, "streamlet '{}' failed while stopping: {failure}", instance.name);
            status.set_state(InstanceState::Stopped);
            return Outcome::Stopped;
        }
        let wait = backoff.after_failure(started.elapsed());
        tracing::error!(
            streamlet = %instance.name,
            restarts = status.restarts(),
            "streamlet '{}' failed: {failure}; restarting in {wait:?}",
            instance.name
        );
        status.set_state(InstanceState::Restarting);
        tokio::select! {
            () = shutdown.cancelled() => {
                status.set_state(InstanceState::Stopped);
                return Outcome::Stopped;
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}

fn wiring(
    instance: &InstancePlan,
    supervision: &Supervision,
    ready: tokio::sync::oneshot::Sender<()>,
    attempts: Arc<FailedAttempts>,
) -> Wiring {
    // The name of this process's part in the instance, the same after a restart.
    let member_name = format!(
        "{}.{}.{}",
        supervision.app, instance.name, supervision.replica
    );
    Wiring {
        app: supervision.app.clone(),
        instance: instance.name.clone(),
        inlets: instance
            .inlets
            .iter()
            .map(|inlet| InletWiring {
                port: inlet.port.clone(),
                topic: inlet.topic.clone(),
                group: inlet.group.clone(),
                writer_schemas: inlet.writer_schemas.clone(),
                end_of_input: supervision.end_of_input.receiver(&inlet.topic),
                consumer_settings: inlet.consumer_settings.clone(),
            })
            .collect(),
        outlets: instance
            .outlets
            .iter()
            .map(|outlet| OutletWiring {
                port: outlet.port.clone(),
                topic: outlet.topic.clone(),
                tag_schema: outlet.tag_schema,
            })
            .collect(),
        dead_letter_topic: supervision.dead_letter_topic.clone(),
        parameters: instance.parameters.clone(),
        settings: {
            let mut settings = supervision.settings.clone();
            settings
                .producer
                .settings
                .extend(instance.producer_settings.clone());
            settings
        },
        ready: Some(ready),
        watermarks: None,
        static_member: supervision.static_members.then(|| member_name.clone()),
        transactional_id: Some(member_name),
        attempts,
    }
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum_and_resets_after_a_long_run() {
        let policy = RestartPolicy {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            reset_after: Duration::from_secs(60),
            max_attempts_per_record: 3,
        };
        let mut backoff = Backoff::new(policy);
        let quick = Duration::from_millis(10);
        let waits: Vec<u64> = (0..5)
            .map(|_| backoff.after_failure(quick).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(
            backoff.after_failure(Duration::from_secs(61)),
            Duration::from_secs(1)
        );
    }
}
