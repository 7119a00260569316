//! Hosting one instance for a test: the wiring of a streamlet with inlet `in` and outlet
//! `out` on topics of the same names, and a runtime of its own that the test shuts down to
//! kill it as a crash would.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::Backend;
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Instance `instance` of app `app`, reading `in` as group `app.<instance>.in`, writing
/// `out`, dead letters to `dead`.
pub(crate) fn wiring(
    instance: &str,
    ended: watch::Receiver<bool>,
    settings: HostSettings,
    transactional_id: Option<&str>,
) -> Wiring {
    Wiring {
        app: "app".into(),
        instance: instance.into(),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: "in".into(),
            group: format!("app.{instance}.in"),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: BTreeMap::new(),
        }],
        outlets: vec![OutletWiring {
            port: "out".into(),
            topic: "out".into(),
            tag_schema: false,
        }],
        dead_letter_topic: "dead".into(),
        parameters: HashMap::new(),
        settings,
        ready: None,
        watermarks: None,
        transactional_id: transactional_id.map(str::to_owned),
        static_member: None,
        attempts: Default::default(),
    }
}

/// Runs `streamlet` on a one-thread runtime of its own, which the test kills with
/// [`kill`].
pub(crate) fn start_killable(
    streamlet: impl Streamlet,
    backend: Arc<dyn Backend>,
    wiring: Wiring,
) -> (tokio::runtime::Runtime, JoinHandle<Result<()>>) {
    let (runtime, running, _) = start_observed(streamlet, backend, wiring);
    (runtime, running)
}

/// As [`start_killable`], also returning the instance's metrics (its state size, queries).
pub(crate) fn start_observed(
    streamlet: impl Streamlet,
    backend: Arc<dyn Backend>,
    wiring: Wiring,
) -> (
    tokio::runtime::Runtime,
    JoinHandle<Result<()>>,
    Arc<InstanceMetrics>,
) {
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let running = runtime.spawn(runnel_host::run_instance(
        Box::new(streamlet),
        backend,
        wiring,
        Arc::new(SystemClock),
        metrics.clone(),
        CancellationToken::new(),
    ));
    (runtime, running, metrics)
}

/// A crash: every task of the instance stops where it is. Waiting until they are dropped
/// lets its consumer leave the group, as a killed process's does.
pub(crate) async fn kill(runtime: tokio::runtime::Runtime) {
    tokio::task::spawn_blocking(move || runtime.shutdown_timeout(Duration::from_secs(5)))
        .await
        .unwrap();
}

/// The errors of the instances a supervisor restarted.
pub(crate) type Failures = Arc<std::sync::Mutex<Vec<String>>>;

/// A member that a supervisor restarts when it fails, on a runtime of its own.
pub(crate) struct Supervised {
    runtime: tokio::runtime::Runtime,
    running: JoinHandle<Result<()>>,
    killed: Arc<std::sync::atomic::AtomicBool>,
}

impl Supervised {
    /// Runs instances made by `make`, starting a new one whenever one fails (as the
    /// runtime's supervisor does), until one returns. Each failure's message, with its
    /// causes, goes to `failures`, unless the member was being killed.
    pub(crate) fn start<S: Streamlet>(
        make: impl Fn() -> (S, Wiring) + Send + 'static,
        backend: Arc<dyn Backend>,
        failures: Failures,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let dying = killed.clone();
        let running = runtime.spawn(async move {
            loop {
                let (streamlet, wiring) = make();
                let shape = Streamlet::shape(&streamlet);
                let outcome = runnel_host::run_instance(
                    Box::new(streamlet),
                    backend.clone(),
                    wiring,
                    Arc::new(SystemClock),
                    Arc::new(InstanceMetrics::for_shape(&shape)),
                    CancellationToken::new(),
                )
                .await;
                let error = match outcome {
                    Ok(()) => return Ok(()),
                    Err(error) => error,
                };
                if dying.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(error); // failing as the kill tears the runtime down
                }
                let mut message = error.to_string();
                let mut cause = std::error::Error::source(error.cause());
                while let Some(source) = cause {
                    message = format!("{message}: {source}");
                    cause = source.source();
                }
                failures.lock().unwrap().push(message);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Supervised {
            runtime,
            running,
            killed,
        }
    }

    /// Whether the member returned (it is not restarted after a success).
    pub(crate) fn is_finished(&self) -> bool {
        self.running.is_finished()
    }

    /// Kills the member as a crash would ([`kill`]).
    pub(crate) async fn kill(self) {
        self.killed.store(true, std::sync::atomic::Ordering::SeqCst);
        kill(self.runtime).await;
    }

    /// Waits until the member returns, then drops its runtime.
    pub(crate) async fn finish(self) -> Result<()> {
        let outcome = self
            .running
            .await
            .expect("the member's task ran to its end");
        self.runtime.shutdown_background();
        outcome
    }
}
