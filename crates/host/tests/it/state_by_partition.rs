//! A windowed count that keeps its state by input partition scales out and back in under
//! input: one member, then a second joins (the partitions are split between them), then
//! the first is killed mid-stream (the second takes its partitions over from their
//! checkpoints). Every window's last count equals a batch computation, and a pane sent
//! twice (replayed after a handover) is sent identical.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, MemoryBackend, ProducerConfig, Record, TopicSpec, partition_for_key,
};
use runnel_host::HostSettings;
use runnel_streamlet::prelude::*;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::window::{Count, Pane, WindowSpec};
use tokio::sync::watch;

use crate::hosting;
use crate::model::{Click, click, counts_per_ten_seconds};

const CLICKS: i64 = 40_000;
const PARTITIONS: u32 = 4;
const IN: Inlet<Click> = Inlet::new("in");
const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
const TEN_SECONDS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(10));

fn counts() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, TEN_SECONDS, Count::new())
        .key_by(|c: &Click| c.user.clone())
        .event_time(|c| c.time)
        .watermarks(Watermarks::bounded(Duration::from_secs(3)))
        .checkpoint_every(Duration::from_millis(10))
        .state_by_partition()
}

/// How many users take turns clicking (with the 3 s bound, no click is late).
const USERS: i64 = 11;

fn batch() -> BTreeMap<(String, i64), i64> {
    counts_per_ten_seconds((0..CLICKS).map(|i| click(i, USERS)))
}

async fn setup(backend: &MemoryBackend) {
    for (topic, partitions) in [("in", PARTITIONS), ("out", 1), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
}

/// The input, arriving over about two seconds, each user's clicks on the partition its key
/// hashes to.
async fn produce(backend: MemoryBackend) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Click as AvroSchema>::get_schema();
    for i in 0..CLICKS {
        let click = click(i, USERS);
        let partition = partition_for_key(click.user.as_bytes(), PARTITIONS);
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(&click).unwrap()).unwrap();
        let record = Record::new(value).with_key(click.user);
        drop(producer.send("in", partition, record).await.unwrap());
        if i % 1_000 == 999 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    producer.flush().await.unwrap();
}

/// Starts a member of the `counts` consumer group on a runtime of its own.
fn start(
    backend: &MemoryBackend,
    ended: watch::Receiver<bool>,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    let settings = HostSettings {
        poll_batch: 64,
        ..HostSettings::default()
    };
    let wiring = hosting::wiring("counts", ended, settings, None);
    hosting::start_killable(counts(), Arc::new(backend.clone()), wiring)
}

async fn committed(backend: &MemoryBackend) -> u64 {
    backend
        .committed("app.counts.in", "in")
        .await
        .unwrap()
        .into_iter()
        .map(Option::unwrap_or_default)
        .sum()
}

async fn wait_for_commits(backend: &MemoryBackend, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
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
        assert!(
            Instant::now() < deadline,
            "only {committed} of {count} inputs were committed"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_count_kept_by_partition_scales_out_and_survives_a_killed_member() {
    let backend = MemoryBackend::new();
    setup(&backend).await;
    let producing = tokio::spawn(produce(backend.clone()));
    let (end, ended) = watch::channel(false);

    let (first, _) = start(&backend, ended.clone());
    wait_for_commits(&backend, CLICKS as u64 / 5).await;
    let (second, last) = start(&backend, ended.clone());
    wait_for_commits(&backend, CLICKS as u64 / 2).await;
    hosting::kill(first).await;
    let at_kill = committed(&backend).await;
    assert!(
        at_kill < CLICKS as u64,
        "the first member was killed mid-stream"
    );
    producing.await.unwrap();
    end.send_replace(true);
    tokio::time::timeout(Duration::from_secs(120), last)
        .await
        .expect("the remaining member reads everything and finishes")
        .unwrap()
        .unwrap();
    hosting::kill(second).await;
    let checkpointed: Vec<u64> = backend
        .offsets("app.counts.checkpoints")
        .await
        .unwrap()
        .iter()
        .map(|partition| partition.end)
        .collect();
    assert!(
        checkpointed.iter().all(|&end| end > 0) && checkpointed.len() == PARTITIONS as usize,
        "every partition's state was checkpointed to its own partition: {checkpointed:?}"
    );

    let schema = <Pane<String, i64> as AvroSchema>::get_schema();
    let mut panes: BTreeMap<(String, i64, u32), i64> = BTreeMap::new();
    for consumed in backend.records("out").unwrap() {
        let bytes = consumed.record.value.expect("panes are never null");
        let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
        let pane: Pane<String, i64> = apache_avro::from_value(&value).unwrap();
        let identity = (pane.key.clone(), pane.window_start, pane.index);
        if let Some(earlier) = panes.insert(identity.clone(), pane.value) {
            assert_eq!(
                earlier, pane.value,
                "pane {identity:?} was sent twice with different counts"
            );
        }
    }
    let last_counts: BTreeMap<(String, i64), i64> = panes
        .into_iter()
        .map(|((key, start, _), count)| ((key, start), count))
        .collect();
    let expected = batch();
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(window, count)| last_counts.get(*window) != Some(count))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && last_counts.len() == expected.len(),
        "{} windows counted, {} expected; the first wrong ones (window, expected count): {wrong:?}",
        last_counts.len(),
        expected.len()
    );
}
