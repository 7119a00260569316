//! Records per second of a one-streamlet relay (consume, map, produce) on Runnel's Kafka
//! backplane, against bare librdkafka relays with the same client settings, side by side
//! against one Apache Kafka node started by the benchmark (one tansu broker with `--tansu`).
//!
//! ```text
//! cargo bench -p runnel-kafka --bench relay -- [RECORDS] [RUNS] [ONLY] [--tansu]
//! ```
//!
//! (defaults 300,000 and 5; `ONLY` runs the relays whose name contains it, such as `runnel`,
//! for profiling). Every relay reads the same input topic (RECORDS small Avro records over 4
//! partitions, written once) from the beginning with a fresh consumer group, and writes a
//! fresh output topic; every relay's clock stops on the same condition: every record produced
//! and acknowledged, and the input offsets committed by the broker (read back from it for
//! Runnel, a synchronous commit after the producer's flush for the bare relays). Runnel's
//! relay is a `Processor` hosted by `run_instance` exactly as `app run` hosts it: decode, map,
//! encode, send, commit after acknowledgement every 200 ms. The bare relays are a librdkafka
//! consumer and producer in one loop, committing the consumed position every 200 ms without
//! waiting for deliveries; one copies payloads, one decodes, maps and encodes them with a
//! direct serde codec (`serde_avro_fast`), and one through `apache_avro::Value` (the slow path
//! Runnel itself replaced). Runs take turns.
//! Rates count from each relay's first record, so the consumer group join (seconds on tansu,
//! less on Apache Kafka) is left out; the medians and the ratios are printed, with the process's CPU time per
//! record.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec, partition_for_key};
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_kafka::test_broker::{ApacheKafka, Tansu, TestBroker};
use runnel_kafka::{KafkaBackend, KafkaConfig};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const PARTITIONS: u32 = 4;
const INPUT: &str = "relay-in";

/// One reading.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct Reading {
    sensor: String,
    sequence: i64,
    celsius: f64,
}

const IN: Inlet<Reading> = Inlet::new("in");
const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());

fn encode(schema: &apache_avro::Schema, value: &Reading) -> Vec<u8> {
    let mut buffer = Vec::new();
    apache_avro::write_avro_datum_ref(schema, value, &mut buffer).unwrap();
    buffer
}

async fn fill(backend: &KafkaBackend, records: usize) {
    backend
        .create_topic(&TopicSpec::new(INPUT, PARTITIONS))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = Reading::get_schema();
    for sequence in 0..records {
        let reading = Reading {
            sensor: format!("sensor-{}", sequence % 64),
            sequence: sequence as i64,
            celsius: 20.0 + (sequence % 100) as f64 / 10.0,
        };
        let partition = partition_for_key(reading.sensor.as_bytes(), PARTITIONS);
        let record = Record::new(encode(&schema, &reading)).with_key(reading.sensor.clone());
        drop(producer.send(INPUT, partition, record).await.unwrap());
    }
    producer.flush().await.unwrap();
}

/// Runnel: `Processor` in `run_instance`, at-least-once, until the input is read.
async fn runnel_relay(backend: &KafkaBackend, records: usize, run: usize) -> Timing {
    let output = format!("relay-out-runnel-{run}");
    backend
        .create_topic(&TopicSpec::new(&output, PARTITIONS))
        .await
        .unwrap();
    backend
        .create_topic(&TopicSpec::new("relay-dead", 1))
        .await
        .unwrap();
    let (_end, ended) = watch::channel(true);
    let wiring = Wiring {
        app: "bench".into(),
        instance: format!("relay-{run}"),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: INPUT.into(),
            group: format!("bench.relay-{run}.in"),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: BTreeMap::new(),
        }],
        outlets: vec![OutletWiring {
            port: "out".into(),
            topic: output,
            tag_schema: false,
        }],
        dead_letter_topic: "relay-dead".into(),
        parameters: HashMap::new(),
        settings: HostSettings::default(),
        ready: None,
        watermarks: None,
        transactional_id: None,
        static_member: None,
        attempts: Default::default(),
    };
    let first = Arc::new(OnceLock::new());
    let first_seen = first.clone();
    let relay = Processor::new(IN, OUT, move |mut reading: Reading| {
        first_seen.get_or_init(Mark::now);
        reading.celsius = reading.celsius * 1.8 + 32.0;
        Some(reading)
    });
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&relay)));
    let started = Mark::now();
    // Done when every input offset is committed (so every output acknowledged), not when
    // the instance has also left the consumer group and closed its clients.
    let watched = metrics.clone();
    let broker = backend.clone();
    let group = format!("bench.relay-{run}.in");
    let done = tokio::spawn(async move {
        while watched.committed() < records as u64 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Staged; now until the broker has the offsets.
        loop {
            let committed = broker.committed(&group, INPUT).await.unwrap_or_default();
            if committed.iter().flatten().sum::<u64>() >= records as u64 {
                return Mark::now();
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    runnel_host::run_instance(
        Box::new(relay),
        Arc::new(backend.clone()),
        wiring,
        Arc::new(SystemClock),
        metrics,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let done = done.await.unwrap();
    Timing::between(started, *first.get().expect("the relay read records"), done)
}

/// What the bare relay does to each payload.
#[derive(Clone, Copy)]
enum Work {
    /// Copies the bytes: the least any relay can do.
    Copy,
    /// Decodes with a direct serde Avro codec (`serde_avro_fast`), maps as Runnel's relay
    /// does, encodes again: what a careful hand-written Rust relay does.
    DirectMap,
    /// The same through `apache_avro::Value`: what a hand-written relay using apache-avro's
    /// documented API does.
    ValueMap,
}

/// Bare librdkafka: consume, copy or map the payload, produce to the same partition.
fn bare_relay(config: &KafkaConfig, records: usize, run: usize, work: Work) -> Timing {
    let output = format!("relay-out-bare-{}-{run}", work as u8);
    let schema = Reading::get_schema();
    let fast: serde_avro_fast::Schema = schema.canonical_form().parse().unwrap();
    let mut fast_writer = serde_avro_fast::ser::SerializerConfig::new(&fast);
    let mut common = ClientConfig::new();
    common.set("bootstrap.servers", &config.bootstrap_servers);
    let admin = common.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = KafkaBackend::connect(config.clone()).await.unwrap();
        backend
            .create_topic(&TopicSpec::new(&output, PARTITIONS))
            .await
            .unwrap();
    });
    drop(admin);
    let mut consumer_config = common.clone();
    for (key, value) in config.settings.iter() {
        consumer_config.set(key, value);
    }
    let consumer: BaseConsumer = consumer_config
        .set("group.id", format!("bench.bare-{}-{run}.in", work as u8))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed")
        .set("fetch.queue.backoff.ms", "10")
        .create()
        .unwrap();
    // The same producer settings Runnel uses: idempotent, acks=all.
    let producer: ThreadedProducer<DefaultProducerContext> = common
        .clone()
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .create()
        .unwrap();
    consumer.subscribe(&[INPUT]).unwrap();
    let started = Mark::now();
    let mut first = None;
    let mut copied = 0;
    let mut positions: BTreeMap<i32, i64> = BTreeMap::new();
    let mut last_commit = Instant::now();
    while copied < records {
        let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        first.get_or_insert_with(Mark::now);
        let payload = message.payload().unwrap_or_default();
        let mapped;
        let payload = match work {
            Work::Copy => payload,
            Work::DirectMap => {
                let mut reading: Reading =
                    serde_avro_fast::from_datum_slice(payload, &fast).unwrap();
                reading.celsius = reading.celsius * 1.8 + 32.0;
                mapped = serde_avro_fast::to_datum_vec(&reading, &mut fast_writer).unwrap();
                &mapped[..]
            }
            Work::ValueMap => {
                let value = apache_avro::from_avro_datum(&schema, &mut &payload[..], None).unwrap();
                let mut reading: Reading = apache_avro::from_value(&value).unwrap();
                reading.celsius = reading.celsius * 1.8 + 32.0;
                mapped = encode(&schema, &reading);
                &mapped[..]
            }
        };
        let mut record = BaseRecord::<[u8], [u8]>::to(&output)
            .partition(message.partition())
            .payload(payload);
        if let Some(key) = message.key() {
            record = record.key(key);
        }
        if let Some(timestamp) = message.timestamp().to_millis() {
            record = record.timestamp(timestamp);
        }
        let mut pending = record;
        loop {
            match producer.send(pending) {
                Ok(()) => break,
                Err((_, returned)) => {
                    pending = returned;
                    producer.poll(Duration::from_millis(1));
                }
            }
        }
        positions.insert(message.partition(), message.offset() + 1);
        copied += 1;
        if last_commit.elapsed() > Duration::from_millis(200) {
            commit(&consumer, &positions, CommitMode::Async);
            last_commit = Instant::now();
        }
    }
    producer.flush(Duration::from_secs(60)).unwrap();
    commit(&consumer, &positions, CommitMode::Sync);
    Timing::between(started, first.expect("the relay read records"), Mark::now())
}

fn commit(consumer: &BaseConsumer, positions: &BTreeMap<i32, i64>, mode: CommitMode) {
    let mut list = TopicPartitionList::new();
    for (partition, offset) in positions {
        list.add_partition_offset(INPUT, *partition, Offset::Offset(*offset))
            .unwrap();
    }
    let sync = matches!(mode, CommitMode::Sync);
    let committed = consumer.commit(&list, mode);
    if sync {
        committed.expect("the final commit is accepted");
    }
}

/// A moment of a run: the wall clock and the process's CPU time (every thread) so far.
#[derive(Clone, Copy)]
struct Mark {
    at: Instant,
    cpu: Duration,
}

impl Mark {
    fn now() -> Mark {
        Mark {
            at: Instant::now(),
            cpu: process_cpu(),
        }
    }
}

/// How long a relay took and the CPU it used, in all and from its first record on (after
/// the group join, which costs every relay the same time).
struct Timing {
    started: Mark,
    first_record: Mark,
    done: Mark,
}

impl Timing {
    fn between(started: Mark, first_record: Mark, done: Mark) -> Timing {
        Timing {
            started,
            first_record,
            done,
        }
    }

    /// Records/s from the first record on, and CPU µs per record from the first record on
    /// and in all (the join, the instance's start and its stop included).
    fn report(&self, relay: &str, run: usize, records: usize) -> Measured {
        let streaming = self.done.at - self.first_record.at;
        let rate = records as f64 / streaming.as_secs_f64();
        let per_record =
            |from: Mark| (self.done.cpu - from.cpu).as_secs_f64() * 1e6 / records as f64;
        let measured = Measured {
            rate,
            streaming_cpu: per_record(self.first_record),
            total_cpu: per_record(self.started),
        };
        println!(
            "run {run}: {relay} relay {records} records in {:.2?} ({streaming:.2?} after the first record): {rate:.0} records/s, CPU {:.2} µs/record after the first record, {:.2} in all",
            self.done.at - self.started.at,
            measured.streaming_cpu,
            measured.total_cpu,
        );
        measured
    }
}

/// One run's figures.
struct Measured {
    rate: f64,
    streaming_cpu: f64,
    total_cpu: f64,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let records: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let only = args.next().unwrap_or_default();
    let on_tansu = std::env::args().any(|a| a == "--tansu");
    let broker: Box<dyn TestBroker> = if on_tansu {
        Box::new(Tansu::start())
    } else {
        Box::new(ApacheKafka::start())
    };
    let on = if on_tansu {
        "tansu"
    } else {
        "Apache Kafka, one node"
    };
    println!("relays on {on}");
    let config = broker.config();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime
        .block_on(KafkaBackend::connect(config.clone()))
        .unwrap();
    println!("filling {INPUT} with {records} records over {PARTITIONS} partitions");
    runtime.block_on(fill(&backend, records));
    let mut results: [Vec<Measured>; 4] = Default::default();
    let names = [
        "runnel",
        "bare librdkafka, copy",
        "bare librdkafka, direct serde-avro map",
        "bare librdkafka, apache_avro::Value map",
    ];
    for run in 0..runs {
        for (relay, name) in names.iter().enumerate() {
            if !name.contains(only.as_str()) {
                continue;
            }
            let timing = match relay {
                0 => runtime.block_on(runnel_relay(&backend, records, run)),
                1 => bare_relay(&config, records, run, Work::Copy),
                2 => bare_relay(&config, records, run, Work::DirectMap),
                _ => bare_relay(&config, records, run, Work::ValueMap),
            };
            results[relay].push(timing.report(name, run, records));
        }
    }
    let medians: Vec<(&str, Measured)> = names
        .into_iter()
        .zip(results)
        .filter(|(_, runs)| !runs.is_empty())
        .map(|(name, runs)| {
            let median_of =
                |figure: fn(&Measured) -> f64| median(runs.iter().map(figure).collect());
            let measured = Measured {
                rate: median_of(|m| m.rate),
                streaming_cpu: median_of(|m| m.streaming_cpu),
                total_cpu: median_of(|m| m.total_cpu),
            };
            (name, measured)
        })
        .collect();
    println!("medians of {runs} runs (CPU: µs per record after the first record, and in all):");
    for (name, measured) in &medians {
        println!(
            "  {name:<40} {:>9.0} records/s  {:.2} µs  {:.2} µs",
            measured.rate, measured.streaming_cpu, measured.total_cpu
        );
    }
    if let Some((_, runnel)) = medians.iter().find(|(name, _)| *name == "runnel") {
        for (name, measured) in medians.iter().filter(|(name, _)| *name != "runnel") {
            println!(
                "  runnel / {name}: rate {:.2}, CPU per record {:.2} after the first record, {:.2} in all",
                runnel.rate / measured.rate,
                runnel.streaming_cpu / measured.streaming_cpu,
                runnel.total_cpu / measured.total_cpu,
            );
        }
    }
}

/// CPU time (user and system) of this process's threads so far, to the nanosecond (Linux's
/// `/proc/self/stat` counts in 10 ms ticks, coarse for a run of a few hundred ms).
fn process_cpu() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}
