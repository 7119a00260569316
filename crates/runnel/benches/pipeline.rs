//! End-to-end throughput of a three-stage pipeline on the embedded log, with at-least-once
//! commits and fsync on every group commit:
//!
//! ```text
//! source ─► readings ─► scale ─► scaled ─► sink
//! ```
//!
//! The source encodes and sends N readings as fast as the log takes them (it reads and
//! commits nothing); `scale` reads, decodes, maps, encodes and sends each one, committing its
//! input after the output is acknowledged; `sink` reads, decodes and commits each one (it
//! sends nothing). The run ends when the sink has read everything (bounded input), so the
//! time covers every record's two appends (fsynced in group commits), two reads, two decodes,
//! two encodes and two commits.
//!
//! `cargo bench -p runnel --bench pipeline -- [records] [runs]` (default 1,000,000 and 3).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use runnel::prelude::*;
use runnel_blueprint::verify;
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_runtime::{Console, LocalConfig, Registry, RunOptions, ViewMode};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct Reading {
    sensor: String,
    sequence: i64,
    celsius: f64,
}

const OUT: Outlet<Reading> = Outlet::new("out");
const IN: Inlet<Reading> = Inlet::new("in");
const COUNT: Parameter<i64> = Parameter::int("count");

struct Source;

impl Streamlet for Source {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT).parameter(COUNT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let sensor = "sensor-0000042".to_owned();
        for sequence in 0..ctx.parameter(COUNT) {
            out.send(&Reading {
                sensor: sensor.clone(),
                sequence,
                celsius: 21.5,
            })
            .await?;
        }
        Ok(())
    }
}

const BLUEPRINT: &str = r#"
name = "bench"
[streamlets]
source = "source"
scale = "scale"
sink = "sink"
[topics.readings]
producers = ["source.out"]
consumers = ["scale.in"]
[topics.scaled]
producers = ["scale.out"]
consumers = ["sink.in"]
"#;

fn main() {
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    let records: i64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("a record count"));
    let runs: usize = args.next().map_or(3, |n| n.parse().expect("a run count"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut rates, mut costs) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        let cpu_before = cpu_seconds();
        let rate = runtime.block_on(once(records));
        let cost = (cpu_seconds() - cpu_before) / records as f64 * 1e6;
        println!(
            "run {run}: {records} records in three stages, {rate:.0} records/s, {cost:.2} µs of CPU per record"
        );
        rates.push(rate);
        costs.push(cost);
    }
    rates.sort_by(f64::total_cmp);
    costs.sort_by(f64::total_cmp);
    println!(
        "median: {:.0} records/s, {:.2} µs of CPU per record (all stages and the log's threads)",
        rates[rates.len() / 2],
        costs[costs.len() / 2]
    );
}

/// User plus system CPU time of this process so far, from `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |t| {
        t.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / 100.0
}

async fn once(records: i64) -> f64 {
    let registry = Registry::new()
        .register("source", || Source)
        .register("scale", || {
            Processor::new(IN, OUT, |mut r: Reading| {
                r.celsius = r.celsius * 1.8 + 32.0;
                Some(r)
            })
        })
        .register("sink", || Egress::new(IN, |_: Reading| async { Ok(()) }));
    let descriptor = registry.descriptor("bench");
    let blueprint = verify(Path::new("bench.toml"), BLUEPRINT, &descriptor)
        .blueprint
        .unwrap();
    let mut config = LocalConfig::default();
    config.set(&format!("source.count={records}")).unwrap();
    let plan = runnel_runtime::plan(&blueprint, &descriptor, &registry, &config).unwrap();
    let directory =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let fsync = match std::env::var("BENCH_FSYNC").as_deref() {
        Ok("never") => runnel_embedded_log::FsyncPolicy::Never,
        _ => runnel_embedded_log::FsyncPolicy::Always,
    };
    let backend =
        EmbeddedBackend::open(directory.path(), LogConfig::default().with_fsync(fsync)).unwrap();
    let options = RunOptions {
        view: ViewMode::Off,
        ..RunOptions::default()
    };
    let started = Instant::now();
    let report = runnel_runtime::run(
        plan,
        Arc::new(backend),
        options,
        Console::stdout(false),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    let sink = report
        .status
        .streamlets
        .iter()
        .find(|i| i.name == "sink")
        .unwrap();
    assert_eq!(
        sink.records_in, records as u64,
        "the sink read every record"
    );
    records as f64 / elapsed.as_secs_f64()
}
