//! Hosting one instance for a test: the wiring of a streamlet with inlet `in` and outlet
//! `out` on topics of the same names, and a runtime of its own that the test shuts down to
//! kill it as a crash would.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::Backend;
use runnel_streamlet::prelude::*;
use runnel_streamlet::{
    HostSettings, InletWiring, InstanceMetrics, OutletWiring, SystemClock, Wiring,
};
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
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let running = runtime.spawn(runnel_streamlet::run_instance(
        Box::new(streamlet),
        backend,
        wiring,
        Arc::new(SystemClock),
        metrics,
        CancellationToken::new(),
    ));
    (runtime, running)
}

/// A crash: every task of the instance stops where it is. Waiting until they are dropped
/// lets its consumer leave the group, as a killed process's does.
pub(crate) async fn kill(runtime: tokio::runtime::Runtime) {
    tokio::task::spawn_blocking(move || runtime.shutdown_timeout(Duration::from_secs(5)))
        .await
        .unwrap();
}
