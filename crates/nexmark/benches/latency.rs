//! End-to-end latency of Nexmark q0 and q5 on the embedded log or Kafka, at a share of the
//! maximum rate (half by default).
//!
//! ```text
//! source ─► persons, auctions, bids ─► q0 or q5 ─► results ─► sink
//! ```
//!
//! The source is the Nexmark generator (the library's `Generator`, the same events as the
//! `generator` streamlet, `events-per-second` set to the rate) paced against a clock: event
//! `n` is due `n × 1,000,000,000 / rate` ns after the source starts, and the source sleeps
//! until each event's due time, so events leave in bursts of about one timer tick (1 ms).
//! The rate is a share (`BENCH_LOADS`, half by default) of the events per second this
//! binary first measures unpaced with the same policy, or the rate given on the command
//! line.
//!
//! - **q0** (passthrough of every bid): just before sending each bid the source reads the
//!   clock and writes the reading over the start of the bid's `extra` padding (20 digits,
//!   nanoseconds since a process-wide instant; the bid keeps its length); q0 passes the bid
//!   on unchanged and the sink computes `now - sent` when it receives the decoded bid. The
//!   sample covers what the pipeline bench's does: both appends with their linger and group
//!   commit (and fsync, per policy), q0's read, decode, encode, and the sink's read and
//!   decode.
//! - **q5** (hot items per sliding window of 10 s every 5 s): a pane exists only once the
//!   watermark (event time minus the queries' 1 s bound) passes the window's end, so its
//!   latency is measured from the moment the window's end was due at the source (the due
//!   time of the first event whose event time is at or after the end, found from the
//!   generator's event-time formula) to the sink receiving the pane. It holds
//!   the 1 s bound by definition, plus the time until an event 1 s past the end arrives,
//!   plus the hops. Panes of windows that end less than the bound before the last event
//!   (fired by the end of the input, not by the watermark) are left out. A run of `count`
//!   events at rate `r` closes about `count / r / 5` windows, so q5 has few samples: it
//!   prints each run's minimum, median and maximum.
//!
//! `cargo bench -p runnel-nexmark --bench latency -- <q0|q5> [events] [runs] [rate]`
//! (defaults 1,000,000 events and 3 runs). `BENCH_FSYNC_POLICIES` lists the fsync
//! policies, interleaved within each run (default `always,never,10ms`); `tansu` in that
//! list runs on a fresh tansu broker (in-memory storage, `runnel_kafka::test_broker`)
//! through the Kafka backend instead of the embedded log, with `message.max.bytes` at 16 MiB
//! so that q5's checkpoint fits, and `kafka` on a fresh Apache Kafka node
//! (`runnel_kafka::test_broker::ApacheKafka`, as the Kafka tests start it)
//! (`BENCH_KAFKA_SETTINGS=key=value,...` adds client settings to both); `BENCH_LOADS` lists
//! the rates to pace at as fractions of the unpaced rate (default `0.5`; each policy runs at
//! each load, named `policy at 50%` where there are several); `BENCH_WARM_UP_SECONDS` leaves
//! out q0 bids sent, and q5 panes of windows whose end was due, that soon after the source
//! started (default 0; the tansu runs need it, as consumers join their group seconds after
//! the source starts sending);
//! `BENCH_SEGMENT_BYTES` the log's segment size (default 16 MiB); `BENCH_DIR` is
//! where the temporary logs go (default the current directory); `BENCH_LATENCY_CSV=path`
//! writes, per policy, the quantiles of the run with the median p99 (for
//! `scripts/latency-plot`); `RUST_LOG` (such as `RUST_LOG=warn`) prints the runtime's log
//! lines on stderr. Topics keep at most
//! 64 MiB each (16 MiB segments), so long runs do not fill the disk.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use runnel::prelude::*;
use runnel::window::Pane;
use runnel_backend::Backend;
use runnel_blueprint::verify;
use runnel_embedded_log::{EmbeddedBackend, FsyncPolicy, LogConfig};
use runnel_kafka::test_broker::{ApacheKafka, Tansu};
use runnel_kafka::{KafkaBackend, KafkaConfig};
use runnel_nexmark::generator::{Generator, GeneratorConfig};
use runnel_nexmark::model::Event;
use runnel_nexmark::queries::{q0, q5};
use runnel_nexmark::source::{AUCTIONS, BIDS, PERSONS};
use runnel_runtime::{Console, LocalConfig, Registry, RunOptions, ViewMode};
use tokio_util::sync::CancellationToken;

const COUNT: Parameter<i64> = Parameter::int("count");
/// Events per second; 0 sends as fast as the log takes them.
const RATE: Parameter<i64> = Parameter::int("rate");

/// The sink's inlet for q0's bids.
const BID_IN: Inlet<runnel_nexmark::model::Bid> = Inlet::new("in");
/// The sink's inlet for q5's panes.
const PANE_IN: Inlet<Pane<String, q5::HotItems>> = Inlet::new("in");

/// The queries' watermark bound (`queries::WATERMARKS`), in milliseconds.
const BOUND_MILLIS: i64 = 1_000;

/// The instant latencies are measured from: shared by the source and the sink.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds from [`epoch`] to now.
fn nanos_since_epoch() -> i64 {
    i64::try_from(epoch().elapsed().as_nanos()).unwrap_or(i64::MAX)
}

/// `BENCH_WARM_UP_SECONDS` (default 0) in nanoseconds: q0 bids sent, and q5 panes of
/// windows whose end was due, this soon after the source started are not measured.
fn warm_up_nanos() -> i64 {
    static WARM_UP: OnceLock<i64> = OnceLock::new();
    *WARM_UP.get_or_init(|| {
        std::env::var("BENCH_WARM_UP_SECONDS").map_or(0, |seconds| {
            seconds.parse::<i64>().expect("a warm-up in seconds") * 1_000_000_000
        })
    })
}

/// When the current run's source started, in nanoseconds since [`epoch`].
static SOURCE_STARTED: AtomicI64 = AtomicI64::new(0);
/// The event time of the current run's last event, in milliseconds.
static LAST_EVENT_TIME: AtomicI64 = AtomicI64::new(0);

/// The generator's configuration at `rate` events per second of event time (a million
/// when unpaced).
fn generator_config(rate: i64) -> GeneratorConfig {
    GeneratorConfig {
        events_per_second: if rate > 0 { rate } else { 1_000_000 },
        ..GeneratorConfig::default()
    }
}

/// Nanoseconds after the source's start at which event `number` is due at `rate`.
fn due_nanos(number: u64, rate: i64) -> u64 {
    u64::try_from(u128::from(number) * 1_000_000_000 / rate.max(1) as u128).unwrap_or(u64::MAX)
}

/// The number of the first event at or after event time `time` (ms), per the generator's
/// formula (event `n` at `base_time + n × inter_event_delay_micros / 1,000`, in order, the
/// delay rounded to the nearest microsecond: at 113,664 events/s it is 9 µs, where
/// truncating would say 8 and put every window's end 12% later).
fn first_event_at(time: i64, config: &GeneratorConfig) -> u64 {
    let micros_per_event = config.inter_event_delay_micros();
    let micros = (time - config.base_time) * 1_000;
    u64::try_from((micros + micros_per_event - 1) / micros_per_event).unwrap_or(0)
}

struct PacedGenerator;

impl Streamlet for PacedGenerator {
    fn shape(&self) -> Shape {
        Shape::new()
            .outlet(PERSONS)
            .outlet(AUCTIONS)
            .outlet(BIDS)
            .parameter(COUNT)
            .parameter(RATE)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let (persons, auctions, bids) =
            (ctx.outlet(PERSONS), ctx.outlet(AUCTIONS), ctx.outlet(BIDS));
        let rate = ctx.parameter(RATE);
        let generator = Generator::new(generator_config(rate)).map_err(Error::msg)?;
        let count = u64::try_from(ctx.parameter(COUNT)).unwrap_or(0);
        let started = Instant::now();
        SOURCE_STARTED.store(nanos_since_epoch(), Ordering::Relaxed);
        for number in 0..count {
            if rate > 0 {
                let due = started + Duration::from_nanos(due_nanos(number, rate));
                if due > Instant::now() {
                    tokio::time::sleep_until(due.into()).await;
                }
            }
            match generator.event(number) {
                Event::Person(person) => {
                    persons
                        .send_record(Outgoing::new(&person).timestamp(person.date_time))
                        .await?
                }
                Event::Auction(auction) => {
                    auctions
                        .send_record(Outgoing::new(&auction).timestamp(auction.date_time))
                        .await?
                }
                Event::Bid(mut bid) => {
                    let stamp = format!("{:020}", nanos_since_epoch());
                    let rest = bid.extra.get(stamp.len()..).unwrap_or("");
                    bid.extra = stamp + rest;
                    LAST_EVENT_TIME.store(bid.date_time, Ordering::Relaxed);
                    bids.send_record(Outgoing::new(&bid).timestamp(bid.date_time))
                        .await?
                }
            }
        }
        Ok(())
    }
}

const BLUEPRINT: &str = r#"
name = "latency"
[streamlets]
generator = "generator"
query = "query"
sink = "sink"
[topics.persons]
producers = ["generator.persons"]
[topics.auctions]
producers = ["generator.auctions"]
[topics.bids]
producers = ["generator.bids"]
consumers = ["query.in"]
[topics.results]
producers = ["query.out"]
consumers = ["sink.in"]
"#;

/// The query measured.
#[derive(Clone, Copy, PartialEq)]
enum Query {
    Q0,
    Q5,
}

/// Latency samples of one run, in nanoseconds.
type Samples = Arc<Mutex<Vec<u64>>>;

/// The registry for `query`; with `samples`, the sink adds each result's latency.
fn registry(query: Query, rate: i64, samples: Option<Samples>) -> Registry {
    let registry = Registry::new().register("generator", || PacedGenerator);
    match query {
        Query::Q0 => registry
            .register("query", q0::streamlet)
            .register("sink", move || {
                let samples = samples.clone();
                Egress::new(BID_IN, move |bid: runnel_nexmark::model::Bid| {
                    if let Some(samples) = &samples {
                        let sent: i64 = bid
                            .extra
                            .get(..20)
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0);
                        let latency = nanos_since_epoch() - sent;
                        if sent >= SOURCE_STARTED.load(Ordering::Relaxed) + warm_up_nanos() {
                            samples
                                .lock()
                                .unwrap()
                                .push(u64::try_from(latency).unwrap_or(0));
                        }
                    }
                    async { Ok(()) }
                })
            }),
        Query::Q5 => registry
            .register("query", q5::streamlet)
            .register("sink", move || {
                let samples = samples.clone();
                Egress::new(PANE_IN, move |pane: Pane<String, q5::HotItems>| {
                    if let Some(samples) = &samples {
                        // Fired by the watermark, not by the end of the input.
                        if pane.window_end + BOUND_MILLIS <= LAST_EVENT_TIME.load(Ordering::Relaxed)
                        {
                            let first = first_event_at(pane.window_end, &generator_config(rate));
                            let started = SOURCE_STARTED.load(Ordering::Relaxed);
                            let due =
                                started + i64::try_from(due_nanos(first, rate)).unwrap_or(i64::MAX);
                            let latency = nanos_since_epoch() - due;
                            // Windows whose end was due in the warm-up are left out, as q0's
                            // bids sent then are.
                            if due >= started + warm_up_nanos() {
                                samples
                                    .lock()
                                    .unwrap()
                                    .push(u64::try_from(latency).unwrap_or(0));
                            }
                        }
                    }
                    async { Ok(()) }
                })
            }),
    }
}

fn main() {
    // What the runtime logs (restarts, errors), on stderr, when `RUST_LOG` asks for it.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    let query = match args.next().as_deref() {
        Some("q0") => Query::Q0,
        Some("q5") => Query::Q5,
        _ => panic!("usage: latency <q0|q5> [events] [runs] [rate]"),
    };
    let events: i64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("an event count"));
    let runs: usize = args.next().map_or(3, |n| n.parse().expect("a run count"));
    let rate: Option<i64> = args.next().map(|n| n.parse().expect("a rate in events/s"));
    let policies: Vec<String> = std::env::var("BENCH_FSYNC_POLICIES")
        .unwrap_or_else(|_| "always,never,10ms".into())
        .split(',')
        .map(str::to_owned)
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let loads: Vec<f64> = std::env::var("BENCH_LOADS")
        .unwrap_or_else(|_| "0.5".into())
        .split(',')
        .map(|load| {
            load.parse()
                .expect("a load: a fraction of the unpaced rate")
        })
        .collect();
    // Each policy at each load, named as the plot's legend shows it.
    let mut names: Vec<(String, &str)> = Vec::new();
    let mut rates: Vec<i64> = Vec::new();
    for policy in &policies {
        let maximum = match rate {
            Some(_) => None,
            None => Some(runtime.block_on(once(query, events, 0, policy, None))),
        };
        for load in &loads {
            let name = match loads.len() {
                1 => policy.clone(),
                _ => format!("{policy} at {:.0}%", load * 100.0),
            };
            let paced = match (rate, maximum) {
                (Some(rate), _) => rate,
                (None, Some(maximum)) => {
                    let paced = (maximum * load) as i64;
                    println!("{name}: unpaced {maximum:.0} events/s, so paced at {paced} events/s");
                    paced
                }
                (None, None) => unreachable!("measured unless given"),
            };
            names.push((name, policy));
            rates.push(paced);
        }
    }
    let mut results: Vec<Vec<Vec<u64>>> = vec![Vec::new(); names.len()];
    for run in 1..=runs {
        for (index, (name, policy)) in names.iter().enumerate() {
            let samples: Samples = Arc::new(Mutex::new(Vec::new()));
            let achieved = runtime.block_on(once(
                query,
                events,
                rates[index],
                policy,
                Some(samples.clone()),
            ));
            let mut samples = std::mem::take(&mut *samples.lock().unwrap());
            samples.sort_unstable();
            assert!(!samples.is_empty(), "the sink measured no result");
            println!(
                "run {run}, fsync {name}: {events} events ({achieved:.0} events/s achieved): {}",
                summary(query, &samples)
            );
            results[index].push(samples);
        }
    }
    let mut csv = String::from("policy,rate,quantile,latency_us\n");
    for (index, (name, _)) in names.iter().enumerate() {
        let mut by_p99: Vec<&Vec<u64>> = results[index].iter().collect();
        by_p99.sort_by(|a, b| quantile(a, 0.99).total_cmp(&quantile(b, 0.99)));
        let median_run = by_p99[by_p99.len() / 2];
        let mut quantiles: Vec<f64> = (0..=1000).map(|i| f64::from(i) / 1000.0).collect();
        quantiles.extend([0.9995, 0.9999, 0.99999]);
        quantiles.sort_by(f64::total_cmp);
        for q in quantiles {
            csv.push_str(&format!(
                "{name},{},{q},{:.1}\n",
                rates[index],
                quantile(median_run, q)
            ));
        }
        let mut all = results[index].concat();
        all.sort_unstable();
        let median = |q: f64| {
            let mut values: Vec<f64> = results[index].iter().map(|s| quantile(s, q)).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        match query {
            Query::Q0 => println!(
                "median of {runs}, fsync {name} at {} events/s: p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
                rates[index],
                median(0.5),
                median(0.99),
                median(0.999),
                median(1.0)
            ),
            Query::Q5 => println!(
                "all {runs} runs, fsync {name} at {} events/s: {}",
                rates[index],
                summary(query, &all)
            ),
        }
    }
    if let Ok(path) = std::env::var("BENCH_LATENCY_CSV") {
        std::fs::write(&path, csv).expect("the latency quantiles written");
        println!("quantiles of each policy's median-p99 run written to {path}");
    }
}

/// One run's figures: percentiles for q0, minimum, median and maximum of the panes for q5.
fn summary(query: Query, samples: &[u64]) -> String {
    match query {
        Query::Q0 => format!(
            "latency p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
            quantile(samples, 0.5),
            quantile(samples, 0.99),
            quantile(samples, 0.999),
            quantile(samples, 1.0)
        ),
        Query::Q5 => format!(
            "{} panes after their window's end: min {:.0} ms, median {:.0} ms, max {:.0} ms",
            samples.len(),
            quantile(samples, 0.0) / 1e3,
            quantile(samples, 0.5) / 1e3,
            quantile(samples, 1.0) / 1e3
        ),
    }
}

/// `config` with the client settings of `BENCH_KAFKA_SETTINGS` (`key=value,...`).
fn with_settings(mut config: KafkaConfig) -> KafkaConfig {
    for setting in std::env::var("BENCH_KAFKA_SETTINGS")
        .unwrap_or_default()
        .split(',')
    {
        if let Some((key, value)) = setting.split_once('=') {
            config = config.with(key, value);
        }
    }
    config
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

/// The sample at quantile `q` (nearest rank) of sorted `samples`, in microseconds.
fn quantile(samples: &[u64], q: f64) -> f64 {
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1] as f64 / 1e3
}

/// Runs the query once over `events` events at `rate` events per second (0: unpaced); with
/// `samples`, the sink adds each result's latency. Returns the events per second through
/// the whole run.
async fn once(
    query: Query,
    events: i64,
    rate: i64,
    log_name: &str,
    samples: Option<Samples>,
) -> f64 {
    epoch();
    let registry = registry(query, rate, samples);
    let descriptor = registry.descriptor("latency");
    let blueprint = verify(Path::new("latency.toml"), BLUEPRINT, &descriptor)
        .blueprint
        .unwrap();
    let mut config = LocalConfig::default();
    config.set(&format!("generator.count={events}")).unwrap();
    config.set(&format!("generator.rate={rate}")).unwrap();
    let plan = runnel_runtime::plan(&blueprint, &descriptor, &registry, &config).unwrap();
    let directory =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    // Kept until the run ends: dropping it stops the broker.
    let mut _tansu = None;
    let mut _kafka = None;
    let backend: Arc<dyn Backend> = if log_name == "tansu" {
        let broker = Tansu::start();
        // q5's checkpoint holds the whole window state: over 1 MB (librdkafka's default
        // `message.max.bytes`) in an unpaced run, whose event time runs at a million events
        // a second; tansu takes larger records.
        let config = with_settings(broker.config().with("message.max.bytes", "16777216"));
        let backend = KafkaBackend::connect(config).await.unwrap();
        _tansu = Some(broker);
        Arc::new(backend)
    } else if log_name == "kafka" {
        let broker = ApacheKafka::start();
        let backend = KafkaBackend::connect(with_settings(broker.config()))
            .await
            .unwrap();
        _kafka = Some(broker);
        Arc::new(backend)
    } else {
        let mut log = LogConfig::default().with_fsync(fsync_policy(log_name));
        log.segment_bytes = std::env::var("BENCH_SEGMENT_BYTES")
            .map_or(16 << 20, |n| n.parse().expect("a segment size in bytes"));
        log.retention_bytes = Some(64 << 20);
        Arc::new(EmbeddedBackend::open(directory.path(), log).unwrap())
    };
    let options = RunOptions {
        view: ViewMode::Off,
        ..RunOptions::default()
    };
    let started = Instant::now();
    runnel_runtime::run(
        plan,
        backend,
        options,
        Console::stdout(false),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    events as f64 / started.elapsed().as_secs_f64()
}
