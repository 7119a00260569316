use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::{ApacheKafka, Tansu};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The Apache Kafka node shared by this test binary (every case uses names of its own): the
/// reference broker.
pub(crate) fn kafka() -> &'static ApacheKafka {
    static BROKER: OnceLock<ApacheKafka> = OnceLock::new();
    BROKER.get_or_init(ApacheKafka::start)
}

/// The tansu broker shared by this test binary: a second implementation of the protocol.
pub(crate) fn tansu() -> &'static Tansu {
    static BROKER: OnceLock<Tansu> = OnceLock::new();
    BROKER.get_or_init(Tansu::start)
}

/// A fresh backend on the shared Apache Kafka node.
pub(crate) async fn backend() -> KafkaBackend {
    KafkaBackend::connect(kafka().config()).await.unwrap()
}

/// A fresh backend on the shared tansu broker.
pub(crate) async fn tansu_backend() -> KafkaBackend {
    KafkaBackend::connect(tansu().config()).await.unwrap()
}

/// The topics of a one-instance app: its input, output and dead letters.
pub(crate) struct Topics {
    pub(crate) input: String,
    pub(crate) output: String,
    pub(crate) dead: String,
}

impl Topics {
    /// Topics named after `prefix`, unique to the call.
    pub(crate) fn unique(prefix: &str) -> Topics {
        let unique = runnel_backend::conformance::unique;
        Topics {
            input: unique(&format!("{prefix}-in")),
            output: unique(&format!("{prefix}-out")),
            dead: unique(&format!("{prefix}-dead")),
        }
    }

    /// The consumer group of `instance`'s inlet `in`.
    pub(crate) fn group(&self, instance: &str) -> String {
        format!("{}.{instance}.in", self.input)
    }
}

/// Runs `streamlet` as instance `instance` (inlet `in` reading the input, outlet `out`
/// writing the output) on a one-thread runtime of its own, which the test shuts down to
/// kill it.
pub(crate) fn start(
    streamlet: impl Streamlet,
    backend: &KafkaBackend,
    topics: &Topics,
    instance: &str,
    ended: watch::Receiver<bool>,
    settings: HostSettings,
    transactional_id: Option<String>,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    let wiring = Wiring {
        app: topics.input.clone(),
        instance: instance.into(),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: topics.input.clone(),
            group: topics.group(instance),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: BTreeMap::new(),
        }],
        outlets: vec![OutletWiring {
            port: "out".into(),
            topic: topics.output.clone(),
            tag_schema: false,
        }],
        dead_letter_topic: topics.dead.clone(),
        parameters: HashMap::new(),
        settings,
        ready: None,
        watermarks: None,
        transactional_id,
        static_member: None,
        attempts: Default::default(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
    let running = runtime.spawn(runnel_host::run_instance(
        Box::new(streamlet),
        Arc::new(backend.clone()),
        wiring,
        Arc::new(SystemClock),
        metrics,
        CancellationToken::new(),
    ));
    (runtime, running)
}

/// The input of the copies: JSON strings `<key>-<n>`.
pub(crate) const IN: Inlet<String> = Inlet::new("in").json();
/// The output of the copies, keyed by the part of the value before the dash.
pub(crate) const OUT: Outlet<String> = Outlet::new("out")
    .json()
    .keyed_by(|value| value.split('-').next().unwrap_or_default().to_owned());

/// Copies values exactly once, sleeping `pause` after every `every` values (slowly enough
/// to be killed mid-stream), or never when `every` is 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExactlyOnceCopy {
    pub(crate) every: u64,
    pub(crate) pause: Duration,
}

impl Streamlet for ExactlyOnceCopy {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).exactly_once()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut copied = 0u64;
        while let Some(message) = input.next().await? {
            if self.every > 0 && copied.is_multiple_of(self.every) {
                tokio::time::sleep(self.pause).await;
            }
            output.send(message.value()).await?;
            message.commit();
            copied += 1;
        }
        Ok(())
    }
}
