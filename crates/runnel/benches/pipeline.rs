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
//! `cargo bench -p runnel --bench pipeline -- [records] [runs]` (default 1,000,000 and 3)
//! measures throughput; `BENCH_FSYNC` picks the log's fsync policy (`always`, the default,
//! `never`, or an interval such as `10ms`) and `BENCH_LINGER_MICROS` the writer's linger
//! (default 1 ms), in both modes.
//!
//! `cargo bench -p runnel --bench pipeline -- latency [records] [runs] [rate]` measures
//! end-to-end latency instead, for each fsync policy in turn (`always`, `never`, `10ms`),
//! the policies interleaved within each run. The source sends at a fixed rate (records per
//! second; by default half the throughput this binary first measures unpaced with the same
//! policy): before each record it sleeps until that record's due time, so records leave in
//! bursts of about one timer tick (1 ms). It reads the clock just before handing each record
//! to its outlet and puts the reading in the record; the sink's function takes `now - sent`
//! when it receives the decoded record. So each sample covers the source's encode and append,
//! the log's group commit (and its fsync, which precedes visibility), `scale`'s read, decode,
//! encode and append (synced the same way), and the sink's read and decode; the commits of
//! `scale` and the sink run beside it. Every sample is kept and sorted, so the percentiles
//! are exact. `BENCH_LATENCY_CSV=path` writes, per policy, the quantiles of the run with the
//! median p99 (for `scripts/latency-plot`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use runnel::prelude::*;
use runnel_blueprint::verify;
use runnel_embedded_log::{EmbeddedBackend, FsyncPolicy, LogConfig};
use runnel_runtime::{Console, LocalConfig, Registry, RunOptions, ViewMode};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct Reading {
    sensor: String,
    sequence: i64,
    celsius: f64,
    /// Nanoseconds since [`epoch`] when the source sent the record (0 when not measuring).
    sent_nanos: i64,
}

const OUT: Outlet<Reading> = Outlet::new("out");
const IN: Inlet<Reading> = Inlet::new("in");
const COUNT: Parameter<i64> = Parameter::int("count");
/// Records per second the source sends at; 0 sends as fast as the log takes them.
const RATE: Parameter<i64> = Parameter::int("rate");

/// The instant latencies are measured from: shared by the source and the sink.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds from [`epoch`] to now.
fn nanos_since_epoch() -> i64 {
    i64::try_from(epoch().elapsed().as_nanos()).unwrap_or(i64::MAX)
}

/// The latest the paced source sent a record after its due time in the current run, in
/// nanoseconds (so a run can show the source kept the rate).
static SOURCE_BEHIND_NANOS: AtomicU64 = AtomicU64::new(0);

struct Source;

impl Streamlet for Source {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT).parameter(COUNT).parameter(RATE)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let sensor = "sensor-0000042".to_owned();
        let rate = ctx.parameter(RATE);
        let started = Instant::now();
        for sequence in 0..ctx.parameter(COUNT) {
            let mut sent_nanos = 0;
            if rate > 0 {
                let due = started + Duration::from_secs_f64(sequence as f64 / rate as f64);
                if due > Instant::now() {
                    tokio::time::sleep_until(due.into()).await;
                }
                let behind = u64::try_from(due.elapsed().as_nanos()).unwrap_or(u64::MAX);
                SOURCE_BEHIND_NANOS.fetch_max(behind, Ordering::Relaxed);
                sent_nanos = nanos_since_epoch();
            }
            out.send(&Reading {
                sensor: sensor.clone(),
                sequence,
                celsius: 21.5,
                sent_nanos,
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
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .peekable();
    let latency = args.next_if(|arg| arg == "latency").is_some();
    let records: i64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("a record count"));
    let runs: usize = args.next().map_or(3, |n| n.parse().expect("a run count"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if latency {
        let rate: Option<i64> = args.next().map(|n| n.parse().expect("a rate in records/s"));
        latency_runs(&runtime, records, runs, rate);
        return;
    }
    let fsync = fsync_policy(std::env::var("BENCH_FSYNC").as_deref().unwrap_or("always"));
    let (mut rates, mut costs) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        let cpu_before = cpu_seconds();
        let rate = runtime.block_on(once(records, 0, fsync, None));
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

/// `always`, `never`, or an interval in milliseconds such as `10ms`.
fn fsync_policy(name: &str) -> FsyncPolicy {
    match name {
        "always" => FsyncPolicy::Always,
        "never" => FsyncPolicy::Never,
        interval => FsyncPolicy::Interval(Duration::from_millis(
            interval
                .strip_suffix("ms")
                .and_then(|n| n.parse().ok())
                .expect("an fsync policy: always, never or an interval such as 10ms"),
        )),
    }
}

/// Percentiles of one latency run, in microseconds.
#[derive(Clone, Copy)]
struct Percentiles {
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

/// The sample at quantile `q` (nearest rank) of sorted `samples`, in microseconds.
fn quantile(samples: &[u64], q: f64) -> f64 {
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1] as f64 / 1e3
}

/// Runs the paced pipeline `runs` times for each fsync policy, interleaved, and prints each
/// run's percentiles and their medians per policy.
fn latency_runs(runtime: &tokio::runtime::Runtime, records: i64, runs: usize, rate: Option<i64>) {
    let policies = ["always", "never", "10ms"];
    let rates: Vec<i64> = policies
        .iter()
        .map(|name| {
            rate.unwrap_or_else(|| {
                let maximum = runtime.block_on(once(records, 0, fsync_policy(name), None));
                let half = (maximum / 2.0) as i64;
                println!(
                    "fsync {name}: unpaced {maximum:.0} records/s, so paced at {half} records/s"
                );
                half
            })
        })
        .collect();
    let mut results: Vec<Vec<(Percentiles, Vec<u64>)>> = vec![Vec::new(); policies.len()];
    for run in 1..=runs {
        for (index, name) in policies.iter().enumerate() {
            let samples = Arc::new(Mutex::new(Vec::with_capacity(records as usize)));
            SOURCE_BEHIND_NANOS.store(0, Ordering::Relaxed);
            let achieved = runtime.block_on(once(
                records,
                rates[index],
                fsync_policy(name),
                Some(samples.clone()),
            ));
            let mut samples = std::mem::take(&mut *samples.lock().unwrap());
            assert_eq!(samples.len(), records as usize, "a sample per record");
            samples.sort_unstable();
            let percentiles = Percentiles {
                p50: quantile(&samples, 0.5),
                p99: quantile(&samples, 0.99),
                p999: quantile(&samples, 0.999),
                max: quantile(&samples, 1.0),
            };
            let behind = SOURCE_BEHIND_NANOS.load(Ordering::Relaxed) as f64 / 1e6;
            println!(
                "run {run}, fsync {name}: {records} records at {} records/s ({achieved:.0} achieved, source at most {behind:.1} ms behind schedule): latency p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
                rates[index], percentiles.p50, percentiles.p99, percentiles.p999, percentiles.max
            );
            results[index].push((percentiles, samples));
        }
    }
    let mut csv = String::from("policy,rate,quantile,latency_us\n");
    for (index, name) in policies.iter().enumerate() {
        let median = |field: fn(&Percentiles) -> f64| {
            let mut values: Vec<f64> = results[index].iter().map(|(p, _)| field(p)).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        println!(
            "median of {runs}, fsync {name} at {} records/s: p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
            rates[index],
            median(|p| p.p50),
            median(|p| p.p99),
            median(|p| p.p999),
            median(|p| p.max)
        );
        let mut by_p99: Vec<&(Percentiles, Vec<u64>)> = results[index].iter().collect();
        by_p99.sort_by(|a, b| a.0.p99.total_cmp(&b.0.p99));
        let samples = &by_p99[by_p99.len() / 2].1;
        let mut quantiles: Vec<f64> = (0..=1000).map(|i| f64::from(i) / 1000.0).collect();
        quantiles.extend([0.9995, 0.9999, 0.99999]);
        quantiles.sort_by(f64::total_cmp);
        for q in quantiles {
            csv.push_str(&format!(
                "{name},{},{q},{:.1}\n",
                rates[index],
                quantile(samples, q)
            ));
        }
    }
    if let Ok(path) = std::env::var("BENCH_LATENCY_CSV") {
        std::fs::write(&path, csv).expect("the latency quantiles written");
        println!("quantiles of each policy's median run written to {path}");
    }
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

/// Runs the pipeline once over `records` records, the source paced at `rate` records/s (0:
/// unpaced); with `samples`, the sink adds each record's latency in nanoseconds. Returns the
/// records per second through the whole pipeline.
async fn once(
    records: i64,
    rate: i64,
    fsync: FsyncPolicy,
    samples: Option<Arc<Mutex<Vec<u64>>>>,
) -> f64 {
    epoch();
    let registry = Registry::new()
        .register("source", || Source)
        .register("scale", || {
            Processor::new(IN, OUT, |mut r: Reading| {
                r.celsius = r.celsius * 1.8 + 32.0;
                Some(r)
            })
        })
        .register("sink", move || {
            let samples = samples.clone();
            Egress::new(IN, move |reading: Reading| {
                if let Some(samples) = &samples {
                    let latency = nanos_since_epoch() - reading.sent_nanos;
                    samples
                        .lock()
                        .unwrap()
                        .push(u64::try_from(latency).unwrap_or(0));
                }
                async { Ok(()) }
            })
        });
    let descriptor = registry.descriptor("bench");
    let blueprint = verify(Path::new("bench.toml"), BLUEPRINT, &descriptor)
        .blueprint
        .unwrap();
    let mut config = LocalConfig::default();
    config.set(&format!("source.count={records}")).unwrap();
    config.set(&format!("source.rate={rate}")).unwrap();
    let plan = runnel_runtime::plan(&blueprint, &descriptor, &registry, &config).unwrap();
    let directory =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let mut log = LogConfig::default().with_fsync(fsync);
    if let Ok(micros) = std::env::var("BENCH_LINGER_MICROS") {
        log = log.with_linger(Duration::from_micros(
            micros.parse().expect("a linger in microseconds"),
        ));
    }
    let backend = EmbeddedBackend::open(directory.path(), log).unwrap();
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
