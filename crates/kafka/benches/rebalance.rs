//! How long a consumer group of Runnel's Kafka backplane stops reading while it scales out
//! from one member to three, per rebalance protocol, on an Apache Kafka node the benchmark
//! starts itself.
//!
//! ```text
//! cargo bench -p runnel-kafka --bench rebalance -- [ROUNDS]
//! ```
//!
//! (default 3 rounds). Protocols take turns in each round: `eager` (librdkafka's default
//! `partition.assignment.strategy`, `range,roundrobin`: every partition is taken from every
//! member and assigned anew) with Runnel's group timeouts (a 10 s session, heartbeats every
//! second), the same with librdkafka's own (45 s, every 3 s), `cooperative-sticky` (only
//! partitions that move are taken) and KIP-848's `consumer` protocol
//! (`group.protocol=consumer`: the broker assigns, incrementally, with its own timeouts).
//! In each run a producer writes 1,000 records
//! a second across 6 partitions of a fresh topic; one member reads alone for 3 to 6 seconds
//! (a different time in each round, the same for each protocol), then
//! two more join at once. Measured from the moment they are started:
//!
//! - **all three reading**: until every member owns a partition and has received a record;
//! - **longest stall**: the longest time in which no member received any record (records
//!   arrive every millisecond, so anything well above that is the group standing still);
//! - **worst delay**: the largest time from a record's sending to its receipt.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, CommitOffset, Consumer, ConsumerConfig, ProducerConfig, Record, TopicSpec,
};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::ApacheKafka;

const PARTITIONS: u32 = 6;
/// Records written per second, spread over the partitions.
const RATE: u64 = 1_000;
/// How long the run goes on once all three read, and at least how long the first member
/// reads alone.
const SETTLE: Duration = Duration::from_secs(3);

/// How much longer than [`SETTLE`] the first member reads alone in `round`: spread over
/// 3 s, the longest heartbeat interval measured, so that the new members do not always join
/// at the same point of the first member's heartbeat cycle (members learn of a rebalance
/// from a heartbeat's answer, so a fixed wait would measure one phase only).
fn alone_longer(round: usize) -> Duration {
    Duration::from_millis((round as u64 * 1_117) % 3_000)
}

/// A rebalance protocol: its name and the consumer settings that choose it.
const PROTOCOLS: [(&str, &[(&str, &str)]); 4] = [
    ("eager", &[]),
    // Before Runnel set group timeouts of its own: members learn of a rebalance from a
    // heartbeat's answer.
    (
        "eager, librdkafka's timeouts",
        &[
            ("session.timeout.ms", "45000"),
            ("heartbeat.interval.ms", "3000"),
        ],
    ),
    (
        "cooperative-sticky",
        &[("partition.assignment.strategy", "cooperative-sticky")],
    ),
    ("consumer (KIP-848)", &[("group.protocol", "consumer")]),
];

/// What one member saw: (arrival, delay) per record, the arrival measured from the run's
/// start and the delay from the record's sending.
type Received = Vec<(Duration, Duration)>;

/// The figures of one run.
struct Figures {
    all_reading: Duration,
    longest_stall: Duration,
    worst_delay: Duration,
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|argument| !argument.starts_with('-'))
        .map_or(3, |rounds| rounds.parse().expect("ROUNDS is a number"));
    let kafka = ApacheKafka::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut results: Vec<(&str, Vec<Figures>)> = PROTOCOLS
        .iter()
        .map(|(name, _)| (*name, Vec::new()))
        .collect();
    for round in 1..=rounds {
        for (index, (name, settings)) in PROTOCOLS.iter().enumerate() {
            let figures = runtime.block_on(scale_out(&kafka, settings, alone_longer(round)));
            println!(
                "round {round} {name:>20}: all three reading after {:>6} ms, longest stall {:>6} ms, worst delay {:>6} ms",
                figures.all_reading.as_millis(),
                figures.longest_stall.as_millis(),
                figures.worst_delay.as_millis()
            );
            results[index].1.push(figures);
        }
    }
    println!("\nmedians of {rounds} rounds (ms): all three reading / longest stall / worst delay");
    for (name, figures) in &results {
        let median = |pick: fn(&Figures) -> Duration| {
            let mut values: Vec<u128> = figures.iter().map(|f| pick(f).as_millis()).collect();
            values.sort_unstable();
            values[values.len() / 2]
        };
        println!(
            "{name:>20}: {} / {} / {}",
            median(|f| f.all_reading),
            median(|f| f.longest_stall),
            median(|f| f.worst_delay)
        );
    }
}

/// One run: one member reading alone, then two more joining.
async fn scale_out(
    kafka: &ApacheKafka,
    settings: &[(&str, &str)],
    alone_longer: Duration,
) -> Figures {
    let config = settings
        .iter()
        .fold(kafka.config(), |config, (key, value)| {
            config.with(*key, *value)
        });
    let backend = KafkaBackend::connect(config).await.unwrap();
    let topic = runnel_backend::conformance::unique("rebalance");
    let group = runnel_backend::conformance::unique("rebalance-group");
    backend
        .create_topic(&TopicSpec::new(&topic, PARTITIONS))
        .await
        .unwrap();
    let start = Instant::now();
    let producing = tokio::spawn(produce(backend.clone(), topic.clone(), start));

    let first = member(&backend, &group, &topic, start).await;
    tokio::time::sleep(SETTLE + alone_longer).await;
    let joined_at = start.elapsed();
    let second = member(&backend, &group, &topic, start).await;
    let third = member(&backend, &group, &topic, start).await;
    let members = [first, second, third];
    let deadline = Instant::now() + Duration::from_secs(120);
    let all_reading = loop {
        let reading = members.iter().all(|(consumer, received, _)| {
            !consumer.positions().is_empty()
                && received
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|(at, _)| *at > joined_at)
        });
        if reading {
            break start.elapsed() - joined_at;
        }
        assert!(
            Instant::now() < deadline,
            "the group never shared the topic"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    tokio::time::sleep(SETTLE).await;
    producing.abort();
    let mut arrivals = Vec::new();
    let mut worst_delay = Duration::ZERO;
    for (consumer, received, polling) in members {
        polling.abort();
        consumer.close().await.unwrap();
        for (at, delay) in received.lock().unwrap().iter() {
            if *at > joined_at {
                arrivals.push(*at);
                worst_delay = worst_delay.max(*delay);
            }
        }
    }
    arrivals.sort_unstable();
    let longest_stall = std::iter::once(joined_at)
        .chain(arrivals)
        .collect::<Vec<_>>()
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .max()
        .unwrap_or_default();
    Figures {
        all_reading,
        longest_stall,
        worst_delay,
    }
}

/// Writes [`RATE`] records a second, round robin over the partitions, each value the time it
/// was sent (nanoseconds since `start`), until aborted.
async fn produce(backend: KafkaBackend, topic: String, start: Instant) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut ticks = tokio::time::interval(Duration::from_nanos(1_000_000_000 / RATE));
    for sequence in 0u64.. {
        ticks.tick().await;
        let sent = start.elapsed().as_nanos() as u64;
        let partition = (sequence % u64::from(PARTITIONS)) as u32;
        let record = Record::new(sent.to_be_bytes().to_vec());
        drop(producer.send(&topic, partition, record).await.unwrap());
    }
}

/// A member of `group` on `topic` that keeps polling, noting each record's arrival.
async fn member(
    backend: &KafkaBackend,
    group: &str,
    topic: &str,
    start: Instant,
) -> (
    Arc<dyn Consumer>,
    Arc<Mutex<Received>>,
    tokio::task::JoinHandle<()>,
) {
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, [topic]))
        .await
        .unwrap();
    let received = Arc::new(Mutex::new(Received::default()));
    let polling = tokio::spawn({
        let (consumer, received) = (consumer.clone(), received.clone());
        async move {
            // Offsets are committed every 100 ms (and, staged, before partitions are taken
            // away), as the runtime's committer does.
            let mut committed_at = Instant::now();
            let mut next: BTreeMap<(Arc<str>, u32), u64> = BTreeMap::new();
            while let Ok(records) = consumer.poll(1_000).await {
                let at = start.elapsed();
                {
                    let mut received = received.lock().unwrap();
                    for record in &records {
                        let value = record.record.value.as_deref().unwrap_or_default();
                        let sent = u64::from_be_bytes(value.try_into().unwrap_or_default());
                        let delay = at.saturating_sub(Duration::from_nanos(sent));
                        received.push((at, delay));
                        next.insert((record.topic.clone(), record.partition), record.offset + 1);
                    }
                }
                let offsets: Vec<CommitOffset> = next
                    .iter()
                    .map(|((topic, partition), offset)| CommitOffset {
                        topic: topic.clone(),
                        partition: *partition,
                        offset: *offset,
                    })
                    .collect();
                consumer.stage(&offsets);
                if committed_at.elapsed() >= Duration::from_millis(100) {
                    // A partition taken away meanwhile refuses the commit; the next one
                    // leaves it out.
                    let owned = consumer.positions();
                    let owned: Vec<CommitOffset> = offsets
                        .into_iter()
                        .filter(|offset| {
                            owned.iter().any(|(tp, _)| {
                                *tp.topic == *offset.topic && tp.partition == offset.partition
                            })
                        })
                        .collect();
                    let _ = consumer.commit(&owned).await;
                    committed_at = Instant::now();
                }
            }
        }
    });
    (consumer, received, polling)
}
