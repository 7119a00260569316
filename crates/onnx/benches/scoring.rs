//! Scoring benchmarks with the fraud-detection example's models (7 features in, 2
//! probabilities out): how long loading and checking a model takes, model calls by batch
//! size, and the scorer streamlet's throughput, per-record latency and swap time on an
//! in-memory backplane (so the log's cost is not in the figures).
//!
//! ```text
//! cargo bench -p runnel-onnx --bench scoring
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use runnel_backend::{Backend, MemoryBackend, Producer, ProducerConfig, Record, TopicSpec};
use runnel_blueprint::parameter::ParameterValue;
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};
use runnel_onnx::{Model, ModelEvent, ModelRecord, ModelScorer, Score, Scoring};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{FailedAttempts, InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const MODELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/fraud-detection/model"
);

fn record(file: &str, version: &str) -> ModelRecord {
    ModelRecord {
        name: "fraud".to_owned(),
        version: version.to_owned(),
        onnx: std::fs::read(format!("{MODELS}/{file}"))
            .expect("the model file")
            .into(),
        input_shape: vec![-1, 7],
        output_shape: vec![-1, 2],
    }
}

/// Features that look like the example's: a few typical rows, repeated.
fn features(records: usize) -> Vec<f32> {
    let rows: [[f32; 7]; 4] = [
        [3.2, 0.1, 10.2, 0.4, 2.3, 0.0, 0.0],
        [5.6, 4.2, 6.1, 0.0, 2.5, 1.0, 1.0],
        [2.9, -0.7, 11.0, 0.6, 3.1, 0.0, 0.0],
        [6.9, 12.0, 5.2, 0.0, 2.0, 1.0, 1.0],
    ];
    (0..records)
        .flat_map(|index| rows[index % rows.len()])
        .collect()
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    sorted[((sorted.len() as f64 * share) as usize).min(sorted.len() - 1)]
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

fn millis(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// Loading and checking (parse, optimize, probe), the work before a swap.
fn load_times() {
    println!("\nmodel load and check (Model::load), 20 loads each");
    println!("| model | median | slowest |\n|---|---|---|");
    for (file, name) in [
        ("lr.onnx", "logistic regression"),
        ("gbt.onnx", "gradient-boosted trees"),
    ] {
        let record = record(file, "1");
        let mut times: Vec<Duration> = (0..20)
            .map(|_| {
                let started = Instant::now();
                Model::load(&record, 7, 2).expect("the model loads");
                started.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "| {name} | {} | {} |",
            millis(percentile(&times, 0.5)),
            millis(times[19])
        );
    }
}

/// Model calls of each batch size for about a second each.
fn model_calls() {
    println!("\nmodel calls (Model::score) by batch size, about 1 s each");
    println!("| model | batch | records/s | per call p50 | per call p99 |\n|---|---|---|---|---|");
    for (file, name) in [("lr.onnx", "lr"), ("gbt.onnx", "gbt")] {
        let model = Model::load(&record(file, "1"), 7, 2).expect("the model loads");
        for batch in [1, 8, 64, 256] {
            let rows = features(batch);
            let mut calls = Vec::new();
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(1) {
                let call = Instant::now();
                std::hint::black_box(model.score(&rows).expect("scores"));
                calls.push(call.elapsed());
            }
            let rate = (calls.len() * batch) as f64 / started.elapsed().as_secs_f64();
            calls.sort();
            println!(
                "| {name} | {batch} | {rate:.0} | {} | {} |",
                micros(percentile(&calls, 0.5)),
                micros(percentile(&calls, 0.99))
            );
        }
    }
}

/// A record to score, stamped with when it was sent.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct Probe {
    id: i64,
    sent_nanos: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct Scored {
    id: i64,
    fraud: f64,
    version: String,
}

const IN: Inlet<Probe> = Inlet::new("in").json();
const OUT: Outlet<Scored> = Outlet::new("out").json();

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i64)
}

/// Records how long each record took from being sent to being scored, and when the
/// first record of each version was scored.
#[derive(Clone, Default)]
struct Timing {
    latencies: Arc<Mutex<Vec<Duration>>>,
    first_of: Arc<Mutex<HashMap<String, i64>>>,
}

struct ProbeScoring(Timing);

impl Scoring for ProbeScoring {
    type Input = Probe;
    type Output = Scored;
    const FEATURES: usize = 7;
    const OUTPUTS: usize = 2;

    fn features(&self, probe: &Probe, features: &mut Vec<f32>) {
        let rows = self::features(4);
        let row = (probe.id % 4) as usize * 7;
        features.extend_from_slice(&rows[row..row + 7]);
    }

    fn scored(&self, probe: Probe, score: Score<'_>) -> Scored {
        let now = now_nanos();
        let latency = Duration::from_nanos((now - probe.sent_nanos).max(0) as u64);
        self.0.latencies.lock().unwrap().push(latency);
        self.0
            .first_of
            .lock()
            .unwrap()
            .entry(score.version.to_owned())
            .or_insert(now);
        Scored {
            id: probe.id,
            fraud: f64::from(score.values[1]),
            version: score.version.to_owned(),
        }
    }
}

/// The scorer on an in-memory backplane.
struct Bench {
    backend: Arc<MemoryBackend>,
    producer: Arc<dyn Producer>,
    timing: Timing,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<runnel_streamlet::Result<()>>,
    _ends: [watch::Sender<bool>; 2],
}

impl Bench {
    async fn start(model: &str, batch_size: i64, linger: Duration) -> Bench {
        let backend = Arc::new(MemoryBackend::new());
        for (topic, partitions) in [
            ("in", 1),
            ("models", 1),
            ("out", 1),
            ("events", 1),
            ("dead", 1),
        ] {
            backend
                .create_topic(&TopicSpec::new(topic, partitions))
                .await
                .unwrap();
        }
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        let ends = [watch::Sender::new(false), watch::Sender::new(false)];
        let inlet = |port: &str, topic: &str, end: &watch::Sender<bool>| InletWiring {
            port: port.to_owned(),
            topic: topic.to_owned(),
            group: port.to_owned(),
            writer_schemas: Vec::new(),
            end_of_input: end.subscribe(),
            consumer_settings: Default::default(),
        };
        let outlet = |port: &str, topic: &str| OutletWiring {
            port: port.to_owned(),
            topic: topic.to_owned(),
            tag_schema: false,
        };
        let wiring = Wiring {
            app: "bench".to_owned(),
            instance: "scorer".to_owned(),
            inlets: vec![
                inlet("in", "in", &ends[0]),
                inlet("models", "models", &ends[1]),
            ],
            outlets: vec![outlet("out", "out"), outlet("model-events", "events")],
            dead_letter_topic: "dead".to_owned(),
            parameters: HashMap::from([
                ("batch-size".to_owned(), ParameterValue::Int(batch_size)),
                ("batch-linger".to_owned(), ParameterValue::Duration(linger)),
            ]),
            settings: HostSettings::default(),
            ready: None,
            watermarks: None,
            transactional_id: None,
            static_member: None,
            attempts: Arc::new(FailedAttempts::new(3)),
        };
        let timing = Timing::default();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(run_instance(
            Box::new(ModelScorer::new(IN, OUT, ProbeScoring(timing.clone()))),
            backend.clone(),
            wiring,
            Arc::new(SystemClock),
            Arc::new(InstanceMetrics::default()),
            shutdown.clone(),
        ));
        let bench = Bench {
            backend,
            producer,
            timing,
            shutdown,
            task,
            _ends: ends,
        };
        bench.publish_model(&record(model, "1")).await;
        bench.until_events(1).await;
        bench
    }

    async fn publish_model(&self, model: &ModelRecord) {
        let schema = ModelRecord::get_schema();
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(model).unwrap()).unwrap();
        let receipt = self
            .producer
            .send("models", 0, Record::new(value))
            .await
            .unwrap();
        receipt.await.unwrap();
    }

    async fn until_events(&self, count: usize) {
        while self.backend.records("events").unwrap().len() < count {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn send(&self, id: i64) {
        let probe = Probe {
            id,
            sent_nanos: now_nanos(),
        };
        let value = serde_json::to_vec(&probe).unwrap();
        // The receipt is dropped: the in-memory log has the record at once.
        drop(
            self.producer
                .send("in", 0, Record::new(value))
                .await
                .unwrap(),
        );
    }

    fn scored(&self) -> usize {
        self.timing.latencies.lock().unwrap().len()
    }

    async fn until_scored(&self, count: usize) {
        while self.scored() < count {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

/// Records per second from the first send to the last score, 50,000 records sent by one
/// task as fast as it goes while the scorer scores them.
async fn throughput(model: &str, batch: i64) -> f64 {
    let bench = Bench::start(model, batch, Duration::ZERO).await;
    let records = 50_000;
    let started = Instant::now();
    for id in 0..records {
        bench.send(id).await;
    }
    bench.until_scored(records as usize).await;
    let rate = records as f64 / started.elapsed().as_secs_f64();
    bench.stop().await;
    rate
}

/// Records sent at `rate` per second for `seconds`: latency from send to score.
async fn latency(
    model: &str,
    batch: i64,
    linger: Duration,
    rate: u64,
    seconds: u64,
) -> (Duration, Duration, Duration) {
    let bench = Bench::start(model, batch, linger).await;
    let total = rate * seconds;
    let started = Instant::now();
    for id in 0..total {
        let due = started + Duration::from_nanos(id * 1_000_000_000 / rate);
        tokio::time::sleep_until(due.into()).await;
        bench.send(id as i64).await;
    }
    bench.until_scored(total as usize).await;
    let mut latencies = bench.timing.latencies.lock().unwrap().clone();
    latencies.sort();
    bench.stop().await;
    (
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        *latencies.last().unwrap(),
    )
}

/// Under a steady load, the time from publishing a model to the first record it scores.
async fn swap_time() -> Vec<Duration> {
    let bench = Bench::start("gbt.onnx", 64, Duration::ZERO).await;
    let load = {
        let producer = bench.producer.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let mut id = 0_i64;
            while started.elapsed() < Duration::from_secs(6) {
                let probe = Probe {
                    id,
                    sent_nanos: now_nanos(),
                };
                let value = serde_json::to_vec(&probe).unwrap();
                // The in-memory log has the record at once; the receipt is not needed.
                drop(producer.send("in", 0, Record::new(value)).await.unwrap());
                id += 1;
                if id % 10 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    };
    let mut swaps = Vec::new();
    for version in 2..=6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let file = if version % 2 == 0 {
            "lr.onnx"
        } else {
            "gbt.onnx"
        };
        let published = now_nanos();
        bench
            .publish_model(&record(file, &version.to_string()))
            .await;
        let version = version.to_string();
        loop {
            if let Some(first) = bench.timing.first_of.lock().unwrap().get(&version) {
                swaps.push(Duration::from_nanos((first - published) as u64));
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    load.await.unwrap();
    let events: Vec<ModelEvent> = bench
        .backend
        .records("events")
        .unwrap()
        .iter()
        .map(|record| {
            let schema = ModelEvent::get_schema();
            let value = apache_avro::from_avro_datum(
                &schema,
                &mut record.record.value.as_deref().unwrap(),
                None,
            )
            .unwrap();
            apache_avro::from_value(&value).unwrap()
        })
        .collect();
    assert!(
        events.iter().all(|event| event.serving),
        "every model served"
    );
    bench.stop().await;
    swaps
}

fn main() {
    // `cargo bench -p runnel-onnx --bench scoring -- streamlet` skips the model-only parts.
    if !std::env::args().any(|arg| arg == "streamlet") {
        load_times();
        model_calls();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("\nthe scorer streamlet, 50,000 records sent as fast as they go");
        println!("| model | batch-size | records/s |\n|---|---|---|");
        for model in ["lr.onnx", "gbt.onnx"] {
            for batch in [1, 64] {
                println!("| {model} | {batch} | {:.0} |", throughput(model, batch).await);
            }
        }
        println!("\nthe scorer streamlet: latency from send to score at a steady rate, 5 s each");
        println!("| model | rate | batch-size | batch-linger | p50 | p99 | max |\n|---|---|---|---|---|---|---|");
        for (model, rates) in [("lr.onnx", [2_000, 20_000]), ("gbt.onnx", [1_000, 5_000])] {
            for rate in rates {
                for (batch, linger) in [(1, 0), (64, 0), (64, 2)] {
                    let (p50, p99, max) =
                        latency(model, batch, Duration::from_millis(linger), rate, 5).await;
                    println!(
                        "| {model} | {rate}/s | {batch} | {linger} ms | {} | {} | {} |",
                        micros(p50),
                        micros(p99),
                        micros(max)
                    );
                }
            }
        }
        println!("\nswap: from publishing a model to the first record it scores, under load");
        let mut swaps = swap_time().await;
        swaps.sort();
        println!(
            "5 swaps (lr and gbt alternating): median {}, slowest {}",
            millis(percentile(&swaps, 0.5)),
            millis(*swaps.last().unwrap())
        );
    });
}
