//! Checkpoints of a windowed streamlet: state and input offsets are stored together, so a
//! restart after a graceful stop or an abrupt end neither loses nor double-counts input.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, MemoryBackend, ProducerConfig, Record, TopicSpec};
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_streamlet::prelude::*;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::window::{Count, Pane, Timing, WindowSpec};
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Click {
    user: String,
    time: i64,
}

const IN: Inlet<Click> = Inlet::new("in");
const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
const TEN_SECONDS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(10));

fn counts() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, TEN_SECONDS, Count::new())
        .key_by(|c: &Click| c.user.clone())
        .event_time(|c| c.time)
        .watermarks(Watermarks::bounded(Duration::from_secs(3)))
        .checkpoint_every(Duration::ZERO)
}

/// Click `i`: users take turns, event time moves 700 ms a click, every fifth one is 2 s
/// late (within the 3 s bound).
fn click(i: i64) -> Click {
    Click {
        user: ["ann", "bob", "cy"][(i % 3) as usize].to_owned(),
        time: i * 700 - if i % 5 == 4 { 2_000 } else { 0 },
    }
}

async fn setup() -> MemoryBackend {
    let backend = MemoryBackend::new();
    for (topic, partitions) in [("in", 2), ("out", 1), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
    backend
}

async fn produce(backend: &MemoryBackend, clicks: std::ops::Range<i64>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Click as AvroSchema>::get_schema();
    for i in clicks {
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(click(i)).unwrap()).unwrap();
        let partition = (i % 2) as u32;
        producer
            .send("in", partition, Record::new(value))
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

fn start(
    backend: &MemoryBackend,
    ended: bool,
    shutdown: CancellationToken,
) -> (
    JoinHandle<runnel_streamlet::Result<()>>,
    watch::Sender<bool>,
) {
    let (end_of_input, end) = watch::channel(ended);
    let wiring = Wiring {
        app: "app".into(),
        instance: "counts".into(),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: "in".into(),
            group: "app.counts.in".into(),
            writer_schemas: vec![],
            end_of_input: end,
            consumer_settings: BTreeMap::new(),
        }],
        outlets: vec![OutletWiring {
            port: "out".into(),
            topic: "out".into(),
            tag_schema: false,
        }],
        dead_letter_topic: "dead".into(),
        parameters: HashMap::new(),
        settings: HostSettings::default(),
        ready: None,
        watermarks: None,
        transactional_id: None,
        static_member: None,
        attempts: Default::default(),
    };
    let streamlet = counts();
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
    let running = tokio::spawn(runnel_host::run_instance(
        Box::new(streamlet),
        Arc::new(backend.clone()),
        wiring,
        Arc::new(SystemClock),
        metrics,
        shutdown,
    ));
    (running, end_of_input)
}

/// Waits until the consumer group committed at least `count` input records.
async fn wait_for_commits(backend: &MemoryBackend, count: u64) {
    loop {
        let committed: u64 = backend
            .committed("app.counts.in", "in")
            .await
            .unwrap()
            .into_iter()
            .map(Option::unwrap_or_default)
            .sum();
        if committed >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Every pane in the output; fails if one (key, window, index) was sent twice with
/// different values.
fn panes(backend: &MemoryBackend) -> BTreeMap<(String, i64, u32), (Timing, i64)> {
    let schema = <Pane<String, i64> as AvroSchema>::get_schema();
    let mut panes = BTreeMap::new();
    for consumed in backend.records("out").unwrap() {
        let value = apache_avro::from_avro_datum(
            &schema,
            &mut &consumed.record.value.as_deref().unwrap()[..],
            None,
        )
        .unwrap();
        let pane: Pane<String, i64> = apache_avro::from_value(&value).unwrap();
        let identity = (pane.key.clone(), pane.window_start, pane.index);
        let seen = (pane.timing, pane.value);
        if let Some(earlier) = panes.insert(identity.clone(), seen) {
            assert_eq!(
                earlier, seen,
                "pane {identity:?} sent twice with different values"
            );
        }
    }
    panes
}

/// The counts of clicks `0..n` per user and 10-second window, computed directly.
fn batch(n: i64) -> BTreeMap<(String, i64, u32), (Timing, i64)> {
    let mut counts = BTreeMap::new();
    for i in 0..n {
        let click = click(i);
        let start = click.time - click.time.rem_euclid(10_000);
        counts
            .entry((click.user, start, 0))
            .or_insert((Timing::OnTime, 0))
            .1 += 1;
    }
    counts
}

#[tokio::test]
async fn a_stopped_instance_resumes_from_its_checkpoint() {
    let backend = setup().await;
    produce(&backend, 0..60).await;
    let shutdown = CancellationToken::new();
    let (first, _input) = start(&backend, false, shutdown.clone());
    wait_for_commits(&backend, 60).await;
    shutdown.cancel();
    first.await.unwrap().unwrap();
    let before = backend.records("out").unwrap().len();
    assert!(before > 0, "some windows completed in the first run");

    produce(&backend, 60..120).await;
    let (second, _input) = start(&backend, true, CancellationToken::new());
    second.await.unwrap().unwrap();
    assert_eq!(panes(&backend), batch(120));
    assert_eq!(
        backend.records("out").unwrap().len(),
        batch(120).len(),
        "a graceful stop checkpoints everything: nothing is sent twice"
    );
    assert_eq!(
        backend.committed("app.counts.in", "in").await.unwrap(),
        [Some(60), Some(60)]
    );
}

#[tokio::test]
async fn an_aborted_instance_loses_nothing_and_counts_nothing_twice() {
    let backend = setup().await;
    produce(&backend, 0..90).await;
    let (first, _input) = start(&backend, false, CancellationToken::new());
    wait_for_commits(&backend, 40).await;
    first.abort(); // no final checkpoint, no flush: the nearest thing to kill -9 in-process
    let _ = first.await;

    produce(&backend, 90..150).await;
    let (second, _input) = start(&backend, true, CancellationToken::new());
    second.await.unwrap().unwrap();
    assert_eq!(panes(&backend), batch(150));
}

#[tokio::test]
async fn the_checkpoint_topic_holds_state_and_offsets_in_one_record() {
    let backend = setup().await;
    produce(&backend, 0..10).await;
    let (running, _input) = start(&backend, true, CancellationToken::new());
    running.await.unwrap().unwrap();
    let records = backend.records("app.counts.checkpoints").unwrap();
    let last = &records.last().unwrap().record;
    let offsets: serde_json::Value = serde_json::from_slice(
        last.headers
            .get(runnel_streamlet::checkpoint::OFFSETS_HEADER)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        offsets,
        serde_json::json!([
            {"inlet": "in", "topic": "in", "partition": 0, "offset": 5},
            {"inlet": "in", "topic": "in", "partition": 1, "offset": 5},
        ])
    );
    assert_eq!(last.key.as_deref(), Some(&b"counts"[..]));
}

/// Keeps every user it has seen, saved whole at every message: a state that grows with its
/// input.
struct Hoard;

const CLICKS: Inlet<Click> = Inlet::new("in");

impl Streamlet for Hoard {
    fn shape(&self) -> Shape {
        Shape::new().inlet(CLICKS).checkpointed()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let checkpoints = ctx.checkpoints().expect("checkpointed");
        let mut input = ctx.inlet(CLICKS);
        let mut users = Vec::new();
        while let Some(message) = input.next().await? {
            users.push(message.value().user.clone());
            message.commit();
            checkpoints.save(serde_json::to_vec(&users)?);
        }
        Ok(())
    }
}

/// A state saved whole that outgrows the largest record of its checkpoint topic fails the
/// instance with an error that says so and where such a state belongs, rather than a bare
/// "record too large" on every restart.
#[tokio::test]
async fn a_whole_state_too_large_for_its_checkpoint_topic_says_where_it_belongs() {
    let backend = setup().await;
    let spec = TopicSpec::new("app.hoard.checkpoints", 1).with_config("max.message.bytes", "2048");
    backend.create_topic(&spec).await.unwrap();
    produce(&backend, 0..500).await;
    let (_, ended) = watch::channel(true);
    let wiring = crate::hosting::wiring("hoard", ended, HostSettings::default(), None);
    let outcome = runnel_host::run_instance(
        Box::new(Hoard),
        Arc::new(backend.clone()),
        wiring,
        Arc::new(SystemClock),
        Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&Hoard))),
        CancellationToken::new(),
    )
    .await;
    let error = outcome.expect_err("the checkpoint does not fit");
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(error.cause());
    while let Some(source) = cause {
        message = format!("{message}: {source}");
        cause = source.source();
    }
    assert!(
        message.contains("larger than topic 'app.hoard.checkpoints' takes (2048 bytes)"),
        "{message}"
    );
    assert!(
        message.contains("Shape::checkpointed_with_changelog"),
        "{message}"
    );
    assert_eq!(
        message.matches("2048").count(),
        1,
        "the cause once: {message}"
    );
}
