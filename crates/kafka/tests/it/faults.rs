//! Node faults on a three-node Apache Kafka cluster (replication factor 3,
//! `min.insync.replicas` 2) while an exactly-once copy runs under steady input: SIGKILL of the
//! leader of a partition the copy reads, of the active KRaft controller and (twice) of the
//! node holding the copy's transaction coordinator, a node stopped for longer than the
//! transaction timeout, and a network partition cutting that coordinator's node off from its
//! clients (but not from the other nodes) for 30 s. After each, every input acknowledged before the fault reaches the
//! output; at the end, read committed, the output holds every input record exactly once, in
//! input order per partition, and the input every acknowledged value. Prints the recovery times (docs/benchmarks.md, "Node
//! faults on three Kafka nodes").

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec, partition_for_key};
use runnel_host::HostSettings;
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::ApacheKafka;
use runnel_streamlet::prelude::*;
use tokio::sync::watch;

use crate::support::{self, ExactlyOnceCopy, Topics};

const PARTITIONS: u32 = 3;
const NODES: u32 = 3;
/// librdkafka's default `transaction.timeout.ms`, which Runnel keeps.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// What the test shares with its threads: when each input was acknowledged, when each
/// output was read, and the copy's failures.
#[derive(Default)]
struct Seen {
    acknowledged: Mutex<Vec<(String, Instant)>>,
    /// Per output partition, the values read committed, in order, and when.
    read: Mutex<BTreeMap<i32, Vec<(String, Instant)>>>,
    failures: Mutex<Vec<(Instant, String)>>,
    stop_input: AtomicBool,
    stop_copy: AtomicBool,
    stop_reading: AtomicBool,
}

impl Seen {
    /// The values read so far.
    fn read_values(&self) -> HashSet<String> {
        let read = self.read.lock().unwrap();
        read.values()
            .flatten()
            .map(|(value, _)| value.clone())
            .collect()
    }

    /// Waits until every value in `values` was read; how long that took from `since`, or
    /// the values still missing after 240 s.
    fn wait_for(&self, values: &[String], since: Instant) -> Result<Duration, Vec<String>> {
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let read = self.read_values();
            let missing: Vec<String> = values
                .iter()
                .filter(|value| !read.contains(*value))
                .cloned()
                .collect();
            if missing.is_empty() {
                return Ok(since.elapsed());
            }
            if Instant::now() > deadline {
                return Err(missing);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs the copy until `seen.stop_copy`, starting it again after each failure as the runtime's
/// supervisor would, noting the failures.
fn run_copy(backend: KafkaBackend, topics: Topics, seen: Arc<Seen>) {
    let (_never, ended) = watch::channel(false);
    while !seen.stop_copy.load(Ordering::Relaxed) {
        let settings = HostSettings {
            commit_interval: Duration::from_millis(100),
            ..HostSettings::default()
        };
        let (runtime, running) = support::start(
            ExactlyOnceCopy {
                every: 0,
                pause: Duration::ZERO,
            },
            &backend,
            &topics,
            "copy",
            ended.clone(),
            settings,
            Some(format!("{}.copy.0", topics.input)),
        );
        let stopping = seen.clone();
        let outcome = runtime.block_on(async move {
            tokio::select! {
                outcome = running => Some(outcome),
                () = async {
                    while !stopping.stop_copy.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                } => None,
            }
        });
        runtime.shutdown_background();
        let failure = match outcome {
            None => break,
            Some(Ok(Err(error))) => format!("{error:#}"),
            Some(Ok(Ok(()))) => "the copy ended".to_owned(),
            Some(Err(panic)) => panic.to_string(),
        };
        seen.failures
            .lock()
            .unwrap()
            .push((Instant::now(), failure));
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Reads `topic` read committed from its start until `seen.stop_reading`, noting when each value
/// arrived.
fn read_output(bootstrap: String, topic: String, seen: Arc<Seen>) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..PARTITIONS as i32 {
        assignment
            .add_partition_offset(&topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    while !seen.stop_reading.load(Ordering::Relaxed) {
        // Errors while a node is down are the client's to retry: keep polling.
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
            let value: String = serde_json::from_slice(message.payload().unwrap()).unwrap();
            seen.read
                .lock()
                .unwrap()
                .entry(message.partition())
                .or_default()
                .push((value, Instant::now()));
        }
    }
}

/// Panics with what the copy's topics, its group and the reader show, after `missing` did
/// not reach the output.
fn stuck(
    runtime: &tokio::runtime::Runtime,
    backend: &KafkaBackend,
    topics: &Topics,
    seen: &Seen,
    missing: &[String],
    what: &str,
) -> ! {
    let (inputs, committed, outputs) = runtime.block_on(async {
        (
            backend.offsets(&topics.input).await,
            backend
                .committed(&topics.group("copy"), &topics.input)
                .await,
            backend.offsets(&topics.output).await,
        )
    });
    let read: BTreeMap<i32, usize> = seen
        .read
        .lock()
        .unwrap()
        .iter()
        .map(|(partition, values)| (*partition, values.len()))
        .collect();
    let mut by_partition: BTreeMap<u32, usize> = BTreeMap::new();
    for value in missing {
        let key = value.split('-').next().unwrap_or_default();
        *by_partition
            .entry(partition_for_key(key.as_bytes(), PARTITIONS))
            .or_default() += 1;
    }
    panic!(
        "{what}: {} inputs never reached the output (by input partition: {by_partition:?}); input offsets {inputs:?}, the copy's committed offsets {committed:?}, output offsets {outputs:?}, read per output partition {read:?}; the copy's failures: {:?}",
        missing.len(),
        seen.failures.lock().unwrap()
    )
}

/// The leader of `topic`'s `partition` and its in-sync replicas.
fn leader_and_isr(bootstrap: &str, topic: &str, partition: i32) -> (i32, Vec<i32>) {
    let client: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let metadata = client
        .fetch_metadata(Some(topic), Duration::from_secs(30))
        .unwrap();
    let found = metadata.topics()[0]
        .partitions()
        .iter()
        .find(|found| found.id() == partition)
        .map(|found| (found.leader(), found.isr().to_vec()));
    found.unwrap_or((-1, Vec::new()))
}

/// Waits until every partition of `topics` has a leader and all three replicas in sync.
fn wait_until_healthy(bootstrap: &str, topics: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    for topic in topics {
        for partition in 0..PARTITIONS as i32 {
            loop {
                let (leader, isr) = leader_and_isr(bootstrap, topic, partition);
                if leader > 0 && isr.len() == NODES as usize {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{topic}/{partition}: leader {leader}, isr {isr:?}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// The active KRaft controller, from the quorum state a live node keeps.
fn active_controller(kafka: &ApacheKafka) -> u32 {
    for node in 1..=NODES {
        let state = kafka.dir().join(format!(
            "node-{node}/data/__cluster_metadata-0/quorum-state"
        ));
        if let Ok(text) = std::fs::read_to_string(state) {
            let state: serde_json::Value = serde_json::from_str(&text).unwrap();
            if let Some(leader) = state["leaderId"].as_i64().filter(|leader| *leader > 0) {
                return u32::try_from(leader).unwrap();
            }
        }
    }
    panic!("no node knows the active controller")
}

/// The partition of `__transaction_state` that holds `transactional_id`: Java's
/// `String.hashCode`, made non-negative, modulo the partition count (as Kafka's
/// `TransactionStateManager.partitionFor` does).
fn transaction_state_partition(transactional_id: &str, partitions: i32) -> i32 {
    let hash = transactional_id.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let positive = if hash == i32::MIN { 0 } else { hash.abs() };
    positive % partitions
}

/// One fault: which node, how it is taken down, and for how long at least.
struct Fault {
    name: &'static str,
    node: u32,
    how: Disruption,
    down_for: Duration,
}

/// What happens to the node.
#[derive(Clone, Copy, PartialEq)]
enum Disruption {
    /// SIGKILL, restarted once every input before the fault is through.
    Kill,
    /// SIGTERM, a controlled shutdown, restarted after `down_for`.
    Stop,
    /// Cut off from its clients (a network partition: it stays in the cluster, leading its
    /// partitions) for `down_for`, then healed.
    CutOff,
}

/// How long the node holding the transaction coordinator stays cut off from its clients:
/// shorter than the transaction timeout, longer than the copy's commit timeout, so that
/// commits fail while open transactions stay alive on the broker.
const CUT_OFF_FOR: Duration = Duration::from_secs(30);

#[test]
fn an_exactly_once_copy_rides_out_node_faults_on_three_nodes() {
    let kafka = ApacheKafka::start_cluster(NODES);
    let bootstrap = kafka.bootstrap_servers();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime
        .block_on(KafkaBackend::connect(kafka.config()))
        .unwrap();
    let topics = Topics::unique("faults");
    runtime.block_on(async {
        for topic in [&topics.input, &topics.output, &topics.dead] {
            backend
                .create_topic(&TopicSpec::new(topic, PARTITIONS))
                .await
                .unwrap();
        }
    });
    wait_until_healthy(&bootstrap, &[&topics.input, &topics.output]);

    let seen = Arc::new(Seen::default());
    let copying = {
        let (backend, seen) = (backend.clone(), seen.clone());
        let topics = Topics {
            input: topics.input.clone(),
            output: topics.output.clone(),
            dead: topics.dead.clone(),
        };
        std::thread::spawn(move || run_copy(backend, topics, seen))
    };
    let reading = {
        let (bootstrap, topic, seen) = (bootstrap.clone(), topics.output.clone(), seen.clone());
        std::thread::spawn(move || read_output(bootstrap, topic, seen))
    };
    // Steady input, about 800 records a second, each acknowledged by all in-sync replicas.
    let producing = {
        let (backend, topic, seen) = (backend.clone(), topics.input.clone(), seen.clone());
        runtime.spawn(async move {
            let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
            let mut sent: BTreeMap<u32, Vec<String>> = BTreeMap::new();
            let mut deliveries = Vec::new();
            let mut i = 0u64;
            while !seen.stop_input.load(Ordering::Relaxed) {
                let key = format!("k{}", i % 31);
                let value = format!("{key}-{i}");
                let partition = partition_for_key(key.as_bytes(), PARTITIONS);
                sent.entry(partition).or_default().push(value.clone());
                let record = Record::new(serde_json::to_vec(&value).unwrap()).with_key(key);
                let delivery = producer.send(&topic, partition, record).await.unwrap();
                let acknowledged = seen.clone();
                deliveries.push(tokio::spawn(async move {
                    delivery.await.unwrap();
                    acknowledged
                        .acknowledged
                        .lock()
                        .unwrap()
                        .push((value, Instant::now()));
                }));
                i += 1;
                tokio::time::sleep(Duration::from_micros(1_250)).await;
            }
            producer.flush().await.unwrap();
            for delivery in deliveries {
                delivery.await.unwrap();
            }
            sent
        })
    };

    let transactional_id = format!("{}.copy.0", topics.input);
    let coordinator_partition = transaction_state_partition(&transactional_id, 3);
    let mut rows = Vec::new();
    for kind in [0, 1, 2, 2, 3, 4] {
        wait_until_healthy(&bootstrap, &[&topics.input, &topics.output]);
        std::thread::sleep(Duration::from_secs(3)); // steady before the fault
        let fault = match kind {
            0 => Fault {
                name: "SIGKILL the leader of an input partition",
                node: leader_and_isr(&bootstrap, &topics.input, 0).0 as u32,
                how: Disruption::Kill,
                down_for: Duration::ZERO,
            },
            1 => Fault {
                name: "SIGKILL the active controller",
                node: active_controller(&kafka),
                how: Disruption::Kill,
                down_for: Duration::ZERO,
            },
            2 => Fault {
                name: "SIGKILL the node holding the copy's transaction coordinator",
                node: leader_and_isr(&bootstrap, "__transaction_state", coordinator_partition).0
                    as u32,
                how: Disruption::Kill,
                down_for: Duration::ZERO,
            },
            3 => Fault {
                name: "stop (SIGTERM) the leader of an output partition for 70 s, past the transaction timeout",
                node: leader_and_isr(&bootstrap, &topics.output, 0).0 as u32,
                how: Disruption::Stop,
                down_for: TRANSACTION_TIMEOUT + Duration::from_secs(10),
            },
            _ => Fault {
                name: "cut the node holding the copy's transaction coordinator off from its clients for 30 s (network partition)",
                node: leader_and_isr(&bootstrap, "__transaction_state", coordinator_partition).0
                    as u32,
                how: Disruption::CutOff,
                down_for: CUT_OFF_FOR,
            },
        };
        let before: Vec<String> = seen
            .acknowledged
            .lock()
            .unwrap()
            .iter()
            .map(|(value, _)| value.clone())
            .collect();
        let failures_before = seen.failures.lock().unwrap().len();
        let faulted = Instant::now();
        match fault.how {
            Disruption::Kill => kafka.kill(fault.node),
            Disruption::Stop => kafka.stop(fault.node),
            Disruption::CutOff => {
                // The node stays the leader of its partitions and the coordinator of the
                // copy's transactions: nothing moves until the partition heals.
                let cut_off = kafka.cut_off_clients(fault.node);
                std::thread::sleep(fault.down_for);
                cut_off.heal();
            }
        }
        let recovery = seen.wait_for(&before, faulted).unwrap_or_else(|missing| {
            stuck(&runtime, &backend, &topics, &seen, &missing, fault.name)
        });
        // The worst time from acknowledgement to output of the inputs acknowledged in the
        // ten seconds after the fault.
        std::thread::sleep(Duration::from_secs(10).saturating_sub(faulted.elapsed()));
        let during: Vec<(String, Instant)> = seen
            .acknowledged
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, at)| *at > faulted && at.duration_since(faulted) < Duration::from_secs(10))
            .cloned()
            .collect();
        let values: Vec<String> = during.iter().map(|(value, _)| value.clone()).collect();
        if let Err(missing) = seen.wait_for(&values, faulted) {
            stuck(&runtime, &backend, &topics, &seen, &missing, fault.name);
        }
        let arrivals: HashMap<String, Instant> = seen
            .read
            .lock()
            .unwrap()
            .values()
            .flatten()
            .cloned()
            .collect();
        let worst = during
            .iter()
            .map(|(value, acknowledged)| arrivals[value].duration_since(*acknowledged))
            .max()
            .unwrap_or_default();
        if fault.how != Disruption::CutOff {
            std::thread::sleep(fault.down_for.saturating_sub(faulted.elapsed()));
            kafka.restart(fault.node);
        }
        let failures: Vec<String> = seen.failures.lock().unwrap()[failures_before..]
            .iter()
            .map(|(_, failure)| failure.clone())
            .collect();
        let recovery = if fault.how == Disruption::CutOff {
            format!(
                "{} ms ({} ms after it healed)",
                recovery.as_millis(),
                recovery.saturating_sub(fault.down_for).as_millis()
            )
        } else {
            format!("{} ms", recovery.as_millis())
        };
        rows.push(format!(
            "| {} | {} | {recovery} | {} ms | {} | {} |",
            fault.name,
            fault.node,
            worst.as_millis(),
            failures.len(),
            failures.first().map_or("-", String::as_str),
        ));
    }

    seen.stop_input.store(true, Ordering::Relaxed);
    let sent = runtime.block_on(producing).unwrap();
    let everything: Vec<String> = sent.values().flatten().cloned().collect();
    if let Err(missing) = seen.wait_for(&everything, Instant::now()) {
        stuck(
            &runtime,
            &backend,
            &topics,
            &seen,
            &missing,
            "the last inputs",
        );
    }
    std::thread::sleep(Duration::from_secs(3)); // room for a duplicate to show
    seen.stop_copy.store(true, Ordering::Relaxed);
    copying.join().unwrap();
    seen.stop_reading.store(true, Ordering::Relaxed);
    reading.join().unwrap();
    eprintln!(
        "| fault | node | every input acknowledged before it in the output after | worst acknowledgement-to-output time of inputs in the 10 s after | copy failures | first failure |"
    );
    for row in &rows {
        eprintln!("{row}");
    }
    let read: BTreeMap<u32, Vec<String>> = seen
        .read
        .lock()
        .unwrap()
        .iter()
        .map(|(partition, values)| {
            let values = values.iter().map(|(value, _)| value.clone()).collect();
            (*partition as u32, values)
        })
        .collect();
    let copied: usize = read.values().map(Vec::len).sum();
    // librdkafka's idempotent producer (2.12) can write a record twice when a partition's
    // leader fails over with requests in flight: it bumps its epoch on the out-of-order
    // sequence errors that follow, and the retried batch is no longer deduplicated
    // (confluentinc/librdkafka#4953). So the input may hold an acknowledged value twice; the
    // copy must reproduce the input as it is, each record once.
    let input = read_all(&bootstrap, &topics.input);
    let input_records: usize = input.values().map(Vec::len).sum();
    eprintln!(
        "inputs sent {}, in the input topic {input_records}, copied {copied}",
        everything.len()
    );
    let logged: HashSet<&String> = input.values().flatten().collect();
    let lost: Vec<&String> = everything
        .iter()
        .filter(|value| !logged.contains(value))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged inputs not in the input topic: {lost:?}"
    );
    assert_eq!(
        read, input,
        "every input record once in the output, in order per partition"
    );
}

/// Every record of `topic`, read committed from its start to its end, per partition.
fn read_all(bootstrap: &str, topic: &str) -> BTreeMap<u32, Vec<String>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("{topic}-final-reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut records = BTreeMap::new();
    for partition in 0..PARTITIONS as i32 {
        let (_, end) = consumer
            .fetch_watermarks(topic, partition, Duration::from_secs(30))
            .unwrap();
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
        consumer.assign(&assignment).unwrap();
        let mut values = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut position = 0;
        while position < end {
            assert!(
                Instant::now() < deadline,
                "{topic}/{partition}: stuck at offset {position} of {end}"
            );
            if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                let message = message.unwrap();
                values.push(serde_json::from_slice(message.payload().unwrap()).unwrap());
                position = message.offset() + 1;
            }
        }
        records.insert(partition as u32, values);
    }
    records
}
