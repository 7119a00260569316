//! Exactly-once on Kafka: a copying streamlet with a transactional producer.
//!
//! librdkafka's mock cluster runs the protocol path (InitProducerId, AddOffsetsToTxn,
//! TxnOffsetCommit, EndTxn) without crashes; it does not store transactional offsets nor hide
//! aborted records. Apache Kafka does both, so the kill-and-restart test runs there. tansu is
//! left out: its read_committed readers see aborted records.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec, partition_for_key,
};
use runnel_host::HostSettings;
use runnel_kafka::{KafkaBackend, KafkaConfig, test_broker};
use runnel_streamlet::prelude::*;
use tokio::sync::watch;

use crate::support::{self, ExactlyOnceCopy, Topics};

/// Runs the copy on a runtime of its own (shut down to kill it).
fn start(
    backend: &KafkaBackend,
    topics: &Topics,
    ended: watch::Receiver<bool>,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    let settings = HostSettings {
        commit_interval: Duration::from_millis(100),
        ..HostSettings::default()
    };
    // The app is named after the input topic, and the id follows the input's group.
    let transactional_id = format!("{}.copy.0", topics.input);
    support::start(
        ExactlyOnceCopy {
            every: 1,
            pause: Duration::from_micros(200),
        },
        backend,
        topics,
        "copy",
        ended,
        settings,
        Some(transactional_id),
    )
}

/// Every value of `topic`, per partition in offset order, read_committed.
async fn read_committed(
    backend: &KafkaBackend,
    topic: &str,
    count: usize,
) -> BTreeMap<u32, Vec<String>> {
    let group = runnel_backend::conformance::unique("reader");
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, [topic]))
        .await
        .unwrap();
    let mut values: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut read = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while read < count && Instant::now() < deadline {
        let Ok(records) =
            tokio::time::timeout(Duration::from_millis(500), consumer.poll(1000)).await
        else {
            continue;
        };
        for record in records.unwrap() {
            let value: String =
                serde_json::from_slice(record.record.value.as_deref().unwrap()).unwrap();
            values.entry(record.partition).or_default().push(value);
            read += 1;
        }
    }
    // Anything beyond `count` would be a duplicate: look a little longer for one.
    if let Ok(Ok(records)) = tokio::time::timeout(Duration::from_secs(2), consumer.poll(1000)).await
    {
        for record in records {
            let value: String =
                serde_json::from_slice(record.record.value.as_deref().unwrap()).unwrap();
            values.entry(record.partition).or_default().push(value);
        }
    }
    consumer.close().await.unwrap();
    values
}

/// Writes `count` inputs, copies them exactly once with `kills` crashes on the way, and
/// checks that the committed output holds every input once, in order per partition.
async fn copy_exactly_once(backend: KafkaBackend, topics: Topics, count: usize, kills: usize) {
    for topic in [&topics.input, &topics.output, &topics.dead] {
        backend
            .create_topic(&TopicSpec::new(topic, 2))
            .await
            .unwrap();
    }
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut expected: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for i in 0..count {
        let key = format!("k{}", i % 7);
        let value = format!("{key}-{i}");
        let partition = partition_for_key(key.as_bytes(), 2);
        expected.entry(partition).or_default().push(value.clone());
        let record = Record::new(serde_json::to_vec(&value).unwrap()).with_key(key);
        drop(
            producer
                .send(&topics.input, partition, record)
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();

    let (end, ended) = watch::channel(false);
    for kill in 1..=kills {
        let (runtime, _running) = start(&backend, &topics, ended.clone());
        let target = kill * count / (kills + 3);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let written: u64 = backend
                .offsets(&topics.output)
                .await
                .unwrap()
                .iter()
                .map(|p| p.end)
                .sum();
            if written as usize >= target {
                break;
            }
            assert!(Instant::now() < deadline, "the copy made no progress");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        runtime.shutdown_background(); // a crash: no drain, no commit, no abort
    }
    end.send_replace(true);
    let (runtime, last) = start(&backend, &topics, ended);
    tokio::time::timeout(Duration::from_secs(120), last)
        .await
        .expect("the last run finishes")
        .unwrap()
        .unwrap();
    runtime.shutdown_background();

    let copied = read_committed(&backend, &topics.output, count).await;
    assert_eq!(copied, expected, "every input once, in order per partition");
}

/// The transactional path on librdkafka's mock cluster, without crashes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transactional_path_copies_every_input_once_on_the_mock_cluster() {
    let mock = test_broker::mock_cluster(1);
    let topics = Topics {
        input: "in".into(),
        output: "out".into(),
        dead: "dead".into(),
    };
    for topic in [&topics.input, &topics.output, &topics.dead] {
        mock.create_topic(topic, 2, 1).unwrap();
    }
    let backend = KafkaBackend::connect(KafkaConfig::new(mock.bootstrap_servers()))
        .await
        .unwrap();
    copy_exactly_once(backend, topics, 500, 0).await;
}

/// Killed and restarted several times mid-stream, the copy still commits every input once,
/// on Apache Kafka.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_and_restarted_commits_every_input_exactly_once() {
    let backend = support::backend().await;
    let topics = Topics::unique("eos");
    copy_exactly_once(backend, topics, 5_000, 5).await;
}
