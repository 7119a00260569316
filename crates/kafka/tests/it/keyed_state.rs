//! Keyed state on Apache Kafka: a member's checkpoints write many changelog entries at once
//! (records of many entries in a changelog the runtime created; one record per entry in a
//! compacted one an earlier version created), and a member taking the partition over after a
//! kill restores every key from them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use runnel_backend::conformance::unique;
use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_host::HostSettings;
use runnel_kafka::KafkaBackend;
use runnel_streamlet::checkpoint::CHANGELOG_ENTRIES_HEADER;
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ValueState};
use tokio::sync::watch;

use crate::support::{self, Topics, backend};

const IN: Inlet<String> = Inlet::new("in").json();
const OUT: Outlet<String> = Outlet::new("out").json();
const COUNT: ValueState<u64> = ValueState::new("count");

/// Counts each value's occurrences, sending `value=count` for every one.
struct Counter;

impl Streamlet for Counter {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut state = ctx
            .keyed_state()?
            .checkpoint_every(Duration::from_millis(50));
        while let Some(next) = state.next(&mut input).await? {
            if let Keyed::Message(message) = next {
                let key = message.value().clone();
                let count = state
                    .entry(message.partition(), key.as_bytes())
                    .value(COUNT)
                    .update(|count| count.unwrap_or(0) + 1)?;
                output.send(&format!("{key}={count}")).await?;
                message.commit();
            }
        }
        Ok(())
    }
}

fn start(
    backend: &KafkaBackend,
    topics: &Topics,
    ended: watch::Receiver<bool>,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    let settings = HostSettings::default();
    support::start(Counter, backend, topics, "counter", ended, settings, None)
}

async fn produce(backend: &KafkaBackend, topic: &str, values: impl Iterator<Item = String>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for value in values {
        let record = Record::new(serde_json::to_vec(&value).unwrap()).with_key(value);
        drop(producer.send(topic, 0, record).await.unwrap());
    }
    producer.flush().await.unwrap();
}

/// Keys `key-0` to `key-39`, each once per round.
fn rounds(rounds: std::ops::Range<u32>) -> impl Iterator<Item = String> {
    rounds.flat_map(|_| (0..40).map(|key| format!("key-{key}")))
}

/// The changelog of the `counter` instance of `topics`' app.
fn changelog(topics: &Topics) -> String {
    format!("{}.counter.changelog", topics.input)
}

/// The changelog's records of partition 0, all of them.
async fn changelog_records(backend: &KafkaBackend, topics: &Topics) -> Vec<Record> {
    let end = backend.offsets(&changelog(topics)).await.unwrap()[0].end;
    let records = backend
        .read(
            &changelog(topics),
            0,
            0,
            usize::MAX,
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert!(
        records.last().is_some_and(|last| last.offset + 1 >= end),
        "read the changelog to its end {end}"
    );
    records
        .into_iter()
        .map(|consumed| consumed.record)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_taking_keyed_state_over_restores_every_key_of_the_last_checkpoint() {
    let backend = backend().await;
    let topics = Topics::unique("keyed");
    take_over(&backend, &topics).await;
    // The runtime created the changelog: not compacted, its records hold many entries.
    assert!(!backend.topic_compacted(&changelog(&topics)).await.unwrap());
    let records = changelog_records(&backend, &topics).await;
    let counts: Vec<usize> = records
        .iter()
        .map(|record| {
            assert!(record.key.is_none(), "a record of many entries has no key");
            let count = record.headers.get_str(CHANGELOG_ENTRIES_HEADER);
            count
                .expect("every record says how many entries it holds")
                .parse()
                .unwrap()
        })
        .collect();
    // Ten rounds of 40 keys at checkpoints every 50 ms: far fewer records than entries.
    assert!(
        counts.iter().sum::<usize>() >= 40 && counts.iter().any(|count| *count > 1),
        "entries per record: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_changelog_from_an_earlier_version_keeps_a_record_per_entry() {
    let backend = backend().await;
    let topics = Topics::unique("keyed-compacted");
    let compacted = TopicSpec::new(changelog(&topics), 1).with_config("cleanup.policy", "compact");
    backend.create_topic(&compacted).await.unwrap();
    take_over(&backend, &topics).await;
    assert!(backend.topic_compacted(&changelog(&topics)).await.unwrap());
    let records = changelog_records(&backend, &topics).await;
    assert!(records.len() >= 40, "a record per entry: {}", records.len());
    assert!(records.iter().all(|record| {
        record.key.is_some() && record.headers.get(CHANGELOG_ENTRIES_HEADER).is_none()
    }));
}

/// Counts five rounds of keys in one member, kills it, and checks that a second member
/// restores every count and goes on from there for five more.
async fn take_over(backend: &KafkaBackend, topics: &Topics) {
    for topic in [&topics.input, &topics.output, &topics.dead] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    produce(backend, &topics.input, rounds(0..5)).await;
    let (_, running) = watch::channel(false);
    // Each member connects on its own, as processes do: a backend knows the offsets its own
    // producers were acknowledged, which hides a broker's short partition ends.
    let (first, _) = start(&support::backend().await, topics, running);
    let deadline = Instant::now() + Duration::from_secs(120);
    while backend
        .committed(&topics.group("counter"), &topics.input)
        .await
        .unwrap()[0]
        != Some(200)
    {
        assert!(
            Instant::now() < deadline,
            "the first member commits its input"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::task::spawn_blocking(move || first.shutdown_timeout(Duration::from_secs(5)))
        .await
        .unwrap();

    produce(backend, &topics.input, rounds(5..10)).await;
    let (_, ended) = watch::channel(true);
    let (second, finished) = start(&support::backend().await, topics, ended);
    tokio::time::timeout(Duration::from_secs(120), finished)
        .await
        .expect("the second member reads to the end")
        .unwrap()
        .unwrap();
    tokio::task::spawn_blocking(move || second.shutdown_timeout(Duration::from_secs(5)))
        .await
        .unwrap();

    let reader = backend
        .consumer(&ConsumerConfig::new(
            unique("keyed-reader"),
            [&topics.output],
        ))
        .await
        .unwrap();
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    let end = backend.offsets(&topics.output).await.unwrap()[0].end;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut read = 0;
    while read < 400 && Instant::now() < deadline {
        for consumed in reader.poll(1_000).await.unwrap() {
            let text: String =
                serde_json::from_slice(consumed.record.value.as_deref().unwrap()).unwrap();
            let (key, count) = text.split_once('=').unwrap();
            last.insert(key.to_owned(), count.parse().unwrap());
            read += 1;
        }
    }
    reader.close().await.unwrap();
    assert!(
        read >= 400,
        "read {read} of at least 400 counts (end {end})"
    );
    let wrong: Vec<_> = last.iter().filter(|(_, count)| **count != 10).collect();
    assert!(
        last.len() == 40 && wrong.is_empty(),
        "every key's last count is 10; wrong: {wrong:?}"
    );
}

/// What a changelog that is not compacted needs: the records a snapshot superseded are
/// deleted below an offset (`DeleteRecords`), the partition's first offset moving there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_below_an_offset_are_deleted() {
    let backend = backend().await;
    let topic = unique("deleted-below");
    backend
        .create_topic(&TopicSpec::new(&topic, 2))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for n in 0..10 {
        drop(
            producer
                .send(&topic, 1, Record::new(format!("{n}")))
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();
    assert_eq!(
        backend.delete_records_before(&topic, 1, 4).await.unwrap(),
        4
    );
    let offsets = backend.offsets(&topic).await.unwrap();
    assert_eq!((offsets[1].start, offsets[1].end), (4, 10));
    let left = backend
        .read(&topic, 1, 4, 100, Duration::from_secs(10))
        .await
        .unwrap();
    let values: Vec<_> = left
        .iter()
        .map(|consumed| consumed.record.value.clone().unwrap())
        .collect();
    assert_eq!(values, ["4", "5", "6", "7", "8", "9"]);
    // Everything, and nothing more than there is.
    assert_eq!(
        backend
            .delete_records_before(&topic, 1, u64::MAX)
            .await
            .unwrap(),
        10
    );
    assert_eq!(
        backend.delete_records_before(&topic, 0, 0).await.unwrap(),
        0
    );
    let error = backend
        .delete_records_before(&topic, 7, 0)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains(&topic) && error.to_string().contains("partition 7"),
        "{error}"
    );
    assert!(!backend.topic_compacted(&topic).await.unwrap());
}
