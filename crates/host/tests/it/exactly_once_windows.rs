//! An exactly-once windowed count, killed (its Tokio runtime shut down mid-step, as in a
//! crash) at varying moments and restarted, again and again: readers that read committed
//! see every pane exactly once, with the count a batch computation gives. On
//! `MemoryBackend` and on the embedded log.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_host::{HostSettings, Wiring};
use runnel_streamlet::ErrorKind;
use runnel_streamlet::prelude::*;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::window::{Count, Pane, Timing, WindowSpec};
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::hosting;
use crate::model::{Click, click, counts_per_ten_seconds};

const CLICKS: i64 = 30_000;
const KILLS: usize = 8;
const IN: Inlet<Click> = Inlet::new("in");
const OUT: Outlet<Pane<String, i64>> = Outlet::new("out").keyed_by(|pane| pane.key.clone());
const TEN_SECONDS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(10));

fn counts(by_partition: bool) -> impl Streamlet {
    let counts = WindowedAggregate::new(IN, OUT, TEN_SECONDS, Count::new())
        .key_by(|c: &Click| c.user.clone())
        .event_time(|c| c.time)
        .watermarks(Watermarks::bounded(Duration::from_secs(3)))
        .checkpoint_every(Duration::from_millis(10))
        .exactly_once();
    if by_partition {
        counts.state_by_partition()
    } else {
        counts
    }
}

/// How many users take turns clicking (with the 3 s bound, no click is late).
const USERS: i64 = 7;

fn batch() -> BTreeMap<(String, i64), i64> {
    counts_per_ten_seconds((0..CLICKS).map(|i| click(i, USERS)))
}

async fn setup(backend: &Arc<dyn Backend>) {
    for (topic, partitions) in [("in", 2), ("out", 2), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
}

/// Appends clicks `clicks`, each user's to one partition.
async fn produce(backend: &Arc<dyn Backend>, clicks: std::ops::Range<i64>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Click as AvroSchema>::get_schema();
    for i in clicks {
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(click(i, USERS)).unwrap())
                .unwrap();
        drop(
            producer
                .send("in", (i % USERS % 2) as u32, Record::new(value))
                .await
                .unwrap(),
        );
        if i % 100 == 99 {
            // Let the instance read while the input arrives.
            tokio::task::yield_now().await;
        }
    }
    producer.flush().await.unwrap();
}

/// Starts the instance on a runtime of its own, which the test shuts down to kill it.
fn start(
    backend: &Arc<dyn Backend>,
    ended: watch::Receiver<bool>,
    by_partition: bool,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    hosting::start_killable(counts(by_partition), backend.clone(), wiring(ended))
}

/// The `counts` instance's wiring.
fn wiring(ended: watch::Receiver<bool>) -> Wiring {
    let settings = HostSettings {
        poll_batch: 64,
        ..HostSettings::default()
    };
    hosting::wiring("counts", ended, settings, Some("app.counts.0"))
}

async fn committed_inputs(backend: &Arc<dyn Backend>) -> i64 {
    let committed = backend.committed("app.counts.in", "in").await.unwrap();
    committed
        .into_iter()
        .map(Option::unwrap_or_default)
        .sum::<u64>() as i64
}

/// Every pane a read-committed reader sees, in order, as (key, window start, index, timing,
/// count).
async fn read_committed(
    backend: &Arc<dyn Backend>,
) -> Vec<(String, i64, u32, Timing, i64, u32, u64)> {
    let reader = backend
        .consumer(&ConsumerConfig::new("check", ["out"]))
        .await
        .unwrap();
    let schema = <Pane<String, i64> as AvroSchema>::get_schema();
    let mut panes = Vec::new();
    while let Ok(polled) = tokio::time::timeout(Duration::from_secs(1), reader.poll(1000)).await {
        for consumed in polled.unwrap() {
            let bytes = consumed.record.value.expect("panes are never null");
            let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
            let pane: Pane<String, i64> = apache_avro::from_value(&value).unwrap();
            panes.push((
                pane.key.clone(),
                pane.window_start,
                pane.index,
                pane.timing,
                pane.value,
                consumed.partition,
                consumed.offset,
            ));
        }
    }
    reader.close().await.unwrap();
    panes
}

async fn killed_and_restarted(backend: Arc<dyn Backend>, by_partition: bool) {
    setup(&backend).await;
    let (end, ended) = watch::channel(false);
    // Each run gets a share of the input as it arrives, and is killed part way through
    // it (a varying part), whatever the speed of the machine.
    let share = CLICKS / (KILLS as i64 + 1);
    let mut committed_at_kills = Vec::new();
    for kill in 0..KILLS as i64 {
        let (runtime, running) = start(&backend, ended.clone(), by_partition);
        let (from, to) = (kill * share, (kill + 1) * share);
        let killed_at = from + share * (kill % 4 + 1) / 5;
        let before = committed_inputs(&backend).await;
        produce(&backend, from..killed_at).await;
        // Kill once the run got going (committed something), a varying moment later.
        let deadline = Instant::now() + Duration::from_secs(60);
        while committed_inputs(&backend).await <= before {
            assert!(Instant::now() < deadline, "run {kill} committed nothing");
            if running.is_finished() {
                panic!(
                    "the instance stopped before it was killed: {:?}",
                    running.await
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(kill as u64 % 3)).await;
        // Its consumer leaves the group, so the bounded last run is assigned every partition.
        hosting::kill(runtime).await;
        committed_at_kills.push(committed_inputs(&backend).await);
        produce(&backend, killed_at..to).await;
    }
    assert!(
        committed_at_kills.windows(2).any(|pair| pair[0] < pair[1]),
        "the runs made progress: {committed_at_kills:?}"
    );
    produce(&backend, KILLS as i64 * share..CLICKS).await;

    end.send_replace(true);
    let (runtime, last) = start(&backend, ended, by_partition);
    tokio::time::timeout(Duration::from_secs(120), last)
        .await
        .expect("the last run finishes")
        .unwrap()
        .unwrap();
    runtime.shutdown_background();

    let panes = read_committed(&backend).await;

    let mut seen = BTreeMap::new();
    let mut at = BTreeMap::new();
    for (key, start, index, timing, count, partition, offset) in panes {
        assert_eq!(
            (index, timing),
            (0, Timing::OnTime),
            "one on-time pane per window"
        );
        let earlier = seen.insert((key.clone(), start), count);
        let first = at.insert((key.clone(), start), (partition, offset));
        assert!(
            earlier.is_none(),
            "the pane of window {start} of {key} was read twice: {earlier:?} at (partition, offset) {first:?} and {count} at ({partition}, {offset})"
        );
    }
    let expected = batch();
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(window, count)| seen.get(*window) != Some(count))
        .map(|(window, count)| (window, count, seen.get(window)))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && seen.len() == expected.len(),
        "{} windows read, {} expected; the first wrong ones (window, expected, read): {wrong:?}",
        seen.len(),
        expected.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_window_count_killed_again_and_again_commits_each_pane_once() {
    killed_and_restarted(Arc::new(MemoryBackend::new()), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_window_count_on_the_embedded_log_commits_each_pane_once() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    killed_and_restarted(Arc::new(backend), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_window_count_kept_by_partition_commits_each_pane_once() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    killed_and_restarted(Arc::new(backend), true).await;
}

/// Holds one message, uncommitted, while it saves a checkpoint.
struct SavesWhileHolding;

impl Streamlet for SavesWhileHolding {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).checkpointed().exactly_once()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
        let mut input = ctx.inlet(IN);
        let held = input.next().await?.expect("there is input");
        checkpoints.save(Vec::new());
        std::future::pending::<()>().await;
        held.commit();
        Ok(())
    }
}

#[tokio::test]
async fn an_exactly_once_checkpoint_saved_while_holding_a_message_fails_the_instance() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    setup(&backend).await;
    produce(&backend, 0..10).await;
    let (_end, ended) = watch::channel(false);
    let mut wiring = wiring(ended);
    wiring.instance = "holds".into();
    let metrics = Arc::new(InstanceMetrics::for_shape(&SavesWhileHolding.shape()));
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        runnel_host::run_instance(
            Box::new(SavesWhileHolding),
            backend,
            wiring,
            Arc::new(SystemClock),
            metrics,
            CancellationToken::new(),
        ),
    )
    .await
    .expect("the instance fails instead of waiting");
    let error = outcome.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Internal, "{error}");
    assert_eq!(
        error.to_string(),
        "the streamlet saved a checkpoint while holding 1 message(s) it had not committed or rejected; an exactly-once streamlet must settle every message it was handed before it saves"
    );
}
