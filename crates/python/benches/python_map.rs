//! A trivial Python map (`runnel.examples:warmer`, `warmer_batch` in batch form, and
//! `runnel.arrow_examples:WarmerArrow` in the arrow form) run by the host over the in-memory
//! log: records per second and CPU per record, of the host and of the Python process,
//! interleaved runs, medians (docs/benchmarks.md).
//!
//! `cargo bench -p runnel-python --features arrow --bench python_map -- [records] [runs]`

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, MemoryBackend, ProducerConfig, Record, TopicSpec};
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_python::{PythonCommand, PythonStreamlet};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(namespace = "runnel.examples")]
struct Reading {
    sensor: String,
    celsius: f64,
}

/// The wiring of a map from topic `in` (to its inlet `inlet`) to `out` (from `outlet`).
fn wiring(inlet: &str, outlet: &str) -> Wiring {
    let (_, ended) = tokio::sync::watch::channel(true);
    Wiring {
        app: "bench".into(),
        instance: "map".into(),
        inlets: vec![InletWiring {
            port: inlet.into(),
            topic: "in".into(),
            group: "bench.map.in".into(),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: Default::default(),
        }],
        outlets: vec![OutletWiring {
            port: outlet.into(),
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
    }
}

/// CPU seconds of this process and of its children that were waited for (`/proc/self/stat`
/// fields utime, stime, cutime, cstime).
fn cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks = |at: usize| fields[at].parse::<f64>().unwrap() / 100.0; // CLK_TCK is 100
    (ticks(11) + ticks(12), ticks(13) + ticks(14))
}

struct Measured {
    seconds: f64,
    host_cpu: f64,
    python_cpu: f64,
}

async fn run(reference: &str, records: usize) -> Measured {
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    for topic in ["in", "out", "dead"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = Reading::get_schema();
    for index in 0..records {
        let reading = Reading {
            sensor: format!("sensor-{}", index % 100),
            celsius: index as f64 / 10.0,
        };
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(&reading).unwrap()).unwrap();
        drop(producer.send("in", 0, Record::new(value)).await.unwrap());
    }
    producer.flush().await.unwrap();
    let streamlet = PythonStreamlet::describe(PythonCommand::new(reference))
        .await
        .unwrap();
    let shape = Streamlet::shape(&streamlet);
    let inlet = shape.inlet_names().next().expect("a map has an inlet");
    let outlet = shape.outlet_names().next().expect("a map has an outlet");
    let wiring = wiring(inlet, outlet);
    let (start, before) = (Instant::now(), cpu());
    runnel_host::run_instance(
        Box::new(streamlet),
        backend.clone(),
        wiring,
        Arc::new(SystemClock),
        Arc::new(InstanceMetrics::for_shape(&shape)),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let (seconds, after) = (start.elapsed().as_secs_f64(), cpu());
    let written = backend.offsets("out").await.unwrap()[0].end;
    assert_eq!(written as usize, records, "every record mapped");
    Measured {
        seconds,
        host_cpu: after.0 - before.0,
        python_cpu: after.1 - before.1,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let records: usize = arguments.first().map_or(1_000_000, |n| n.parse().unwrap());
    let runs: usize = arguments.get(1).map_or(3, |n| n.parse().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut forms = vec![
        ("record at a time", "runnel.examples:warmer"),
        ("batch", "runnel.examples:warmer_batch"),
    ];
    if cfg!(feature = "arrow") {
        forms.push(("arrow", "runnel.arrow_examples:WarmerArrow"));
    }
    let mut measured: Vec<Vec<Measured>> = forms.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (index, (_, reference)) in forms.iter().enumerate() {
            measured[index].push(runtime.block_on(run(reference, records)));
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    println!("{records} records, {runs} interleaved runs, medians");
    println!(
        "| form | records/s | host CPU µs/record | Python CPU µs/record | records per CPU-second |"
    );
    println!("|---|---|---|---|---|");
    for ((name, _), runs) in forms.iter().zip(&measured) {
        let rate = median(runs.iter().map(|m| records as f64 / m.seconds).collect());
        let host = median(
            runs.iter()
                .map(|m| m.host_cpu * 1e6 / records as f64)
                .collect(),
        );
        let python = median(
            runs.iter()
                .map(|m| m.python_cpu * 1e6 / records as f64)
                .collect(),
        );
        let per_cpu = median(
            runs.iter()
                .map(|m| records as f64 / (m.host_cpu + m.python_cpu))
                .collect(),
        );
        println!("| {name} | {rate:.0} | {host:.2} | {python:.2} | {per_cpu:.0} |");
    }
}
