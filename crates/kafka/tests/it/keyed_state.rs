//! Keyed state on Apache Kafka: a member's checkpoints write many changelog entries at once (one
//! record per entry, in one produce batch), and a member taking the partition over after a
//! kill restores every key from them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use runnel_backend::conformance::unique;
use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_host::HostSettings;
use runnel_kafka::KafkaBackend;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_taking_keyed_state_over_restores_every_key_of_the_last_checkpoint() {
    let backend = backend().await;
    let topics = Topics::unique("keyed");
    for topic in [&topics.input, &topics.output, &topics.dead] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    produce(&backend, &topics.input, rounds(0..5)).await;
    let (_, running) = watch::channel(false);
    // Each member connects on its own, as processes do: a backend knows the offsets its own
    // producers were acknowledged, which hides a broker's short partition ends.
    let (first, _) = start(&support::backend().await, &topics, running);
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

    produce(&backend, &topics.input, rounds(5..10)).await;
    let (_, ended) = watch::channel(true);
    let (second, finished) = start(&support::backend().await, &topics, ended);
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
