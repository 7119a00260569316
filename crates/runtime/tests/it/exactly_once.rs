//! Exactly-once through the runtime on the embedded log: a child process runs the
//! exactly-once `copy` instance of a plan (as `run-streamlet` would) and is killed with
//! SIGKILL several times mid-stream; a last run drains what is left. The output, read
//! committed, holds every input exactly once, in input order per partition.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, ConsumerConfig};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_runtime::{LocalConfig, Plan, Registry, RunOptions};
use runnel_streamlet::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::support::{Number, console, options, planned};

const INPUTS: i64 = 20_000;
const KILLS: usize = 5;
/// The environment variable that turns [`exactly_once_copy_child`] into the copying process.
const DIRECTORY: &str = "RUNNEL_RUNTIME_EXACTLY_ONCE_DIRECTORY";

pub(crate) const IN: Inlet<Number> = Inlet::new("in");
/// Keyed by the value modulo 7, so a number lands in the same partition of both topics and
/// each output partition holds one input partition's numbers, in its order.
pub(crate) const OUT: Outlet<Number> =
    Outlet::new("out").keyed_by(|number: &Number| key_of(number.value));
pub(crate) const COUNT: Parameter<i64> = Parameter::int("count").default("10");

pub(crate) fn key_of(value: i64) -> String {
    format!("k{}", value % 7)
}

/// Emits `count` keyed numbers, then finishes.
pub(crate) struct KeyedNumbers;

impl Streamlet for KeyedNumbers {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT).parameter(COUNT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        for value in 0..ctx.parameter(COUNT) {
            out.send(&Number { value }).await?;
        }
        Ok(())
    }
}

/// Copies numbers exactly once, slowly enough to be killed mid-stream, printing
/// `copied N` every 500 numbers so the test knows when to kill.
struct SlowCopy;

impl Streamlet for SlowCopy {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).exactly_once()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut copied = 0u64;
        while let Some(message) = input.next().await? {
            tokio::time::sleep(Duration::from_micros(100)).await;
            output.send(message.value()).await?;
            message.commit();
            copied += 1;
            if copied.is_multiple_of(500) {
                let mut out = std::io::stdout().lock();
                writeln!(out, "copied {copied}").unwrap();
                out.flush().unwrap();
            }
        }
        Ok(())
    }
}

const BLUEPRINT: &str = r#"
name = "eos"
[streamlets]
numbers = "keyed-numbers"
copy = "slow-copy"
[topics.first]
producers = ["numbers.out"]
consumers = ["copy.in"]
partitions = 2
[topics.second]
producers = ["copy.out"]
partitions = 2
"#;

fn plan() -> Plan {
    let registry = Registry::new()
        .register("keyed-numbers", || KeyedNumbers)
        .register("slow-copy", || SlowCopy);
    let mut config = LocalConfig::default();
    config.set(&format!("numbers.count={INPUTS}")).unwrap();
    planned(&registry, BLUEPRINT, &config).unwrap()
}

fn only(instance: &str) -> RunOptions {
    RunOptions {
        only: Some(instance.into()),
        ..options()
    }
}

/// Run by [`exactly_once_copies_survive_sigkill_through_the_runtime`] in a child process:
/// runs the `copy` instance on the log in [`DIRECTORY`] until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of exactly_once_copies_survive_sigkill_through_the_runtime"]
async fn exactly_once_copy_child() {
    let directory = std::env::var(DIRECTORY)
        .expect("run by exactly_once_copies_survive_sigkill_through_the_runtime");
    let backend = EmbeddedBackend::open(&directory, LogConfig::default()).unwrap();
    runnel_runtime::run(
        plan(),
        Arc::new(backend),
        only("copy"),
        console(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
}

fn decode(bytes: &[u8]) -> Number {
    let schema = <Number as AvroSchema>::get_schema();
    let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
    apache_avro::from_value(&value).unwrap()
}

/// Every value of `topic` a fresh read-committed reader sees, per partition in offset
/// order, waiting for `count` values and a second longer for any duplicate.
async fn read_committed(
    backend: &EmbeddedBackend,
    topic: &str,
    count: usize,
) -> BTreeMap<u32, Vec<i64>> {
    let reader = backend
        .consumer(&ConsumerConfig::new(format!("check-{topic}"), [topic]))
        .await
        .unwrap();
    let mut values: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    let mut read = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match tokio::time::timeout(Duration::from_secs(1), reader.poll(1000)).await {
            Ok(polled) => {
                for record in polled.unwrap() {
                    let number = decode(
                        record
                            .record
                            .value
                            .as_deref()
                            .expect("copies are never null"),
                    );
                    values
                        .entry(record.partition)
                        .or_default()
                        .push(number.value);
                    read += 1;
                }
            }
            Err(_) if read >= count => break,
            Err(_) => assert!(
                Instant::now() < deadline,
                "only {read} of {count} values of '{topic}' arrived"
            ),
        }
    }
    reader.close().await.unwrap();
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_copies_survive_sigkill_through_the_runtime() {
    let directory = tempfile::tempdir().unwrap();
    // The input, written once by the plan's own source.
    let inputs = {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        let report = runnel_runtime::run(
            plan(),
            Arc::new(backend.clone()),
            only("numbers"),
            console(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(report.outcomes.len(), 1);
        read_committed(&backend, "first", INPUTS as usize).await
    };

    let mut progress_at_kills = Vec::new();
    for kill in 0..KILLS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "exactly_once::exactly_once_copy_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIRECTORY, directory.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill at a different point of each run: after 1,000, 1,500, ... numbers copied.
        let target = 1_000 + 500 * kill as u64;
        let mut copied = 0;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            if let Some(count) = line.unwrap().strip_prefix("copied ") {
                copied = count.parse().unwrap();
                if copied >= target {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL: no drain, no commit, no abort
        child.wait().unwrap();
        progress_at_kills.push(copied);
    }
    assert!(
        progress_at_kills.iter().all(|&copied| copied > 0),
        "every child copied before it was killed: {progress_at_kills:?}"
    );

    // The last run, in this process: drains the rest, then stops.
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(runnel_runtime::run(
        plan(),
        Arc::new(backend.clone()),
        only("copy"),
        console(),
        shutdown.clone(),
    ));
    let copied = read_committed(&backend, "second", INPUTS as usize).await;
    shutdown.cancel();
    running.await.unwrap().unwrap();

    for (partition, expected) in &inputs {
        let outputs = copied.get(partition).cloned().unwrap_or_default();
        let first_difference = expected
            .iter()
            .zip(&outputs)
            .position(|(input, output)| input != output);
        assert!(
            outputs.len() == expected.len() && first_difference.is_none(),
            "partition {partition}: {} inputs, {} outputs, first difference at position {:?}",
            expected.len(),
            outputs.len(),
            first_difference
        );
    }
    let total: usize = copied.values().map(Vec::len).sum();
    assert_eq!(total, INPUTS as usize, "no duplicates, nothing lost");
    println!("killed after copying {progress_at_kills:?} numbers per run");
}

/// Reads numbers and commits them (at least once).
struct Sink;

impl Streamlet for Sink {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        while let Some(message) = input.next().await? {
            message.commit();
        }
        Ok(())
    }
}

/// A group reading a topic written in transactions commits past the commit markers once it
/// has read everything, so its lag at rest is 0 records, not one marker per partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_rest_on_a_transactional_topic_has_no_lag() {
    const BOUNDED: &str = r#"
name = "eos"
[streamlets]
numbers = "keyed-numbers"
copy = "copy"
sink = "sink"
[topics.first]
producers = ["numbers.out"]
consumers = ["copy.in"]
partitions = 2
[topics.second]
producers = ["copy.out"]
consumers = ["sink.in"]
partitions = 2
"#;
    /// Copies numbers exactly once.
    struct Copy;
    impl Streamlet for Copy {
        fn shape(&self) -> Shape {
            Shape::new().inlet(IN).outlet(OUT).exactly_once()
        }
        async fn run(self, mut ctx: Context) -> Result<()> {
            let mut input = ctx.inlet(IN);
            let output = ctx.outlet(OUT);
            while let Some(message) = input.next().await? {
                output.send(message.value()).await?;
                message.commit();
            }
            Ok(())
        }
    }
    let registry = Registry::new()
        .register("keyed-numbers", || KeyedNumbers)
        .register("copy", || Copy)
        .register("sink", || Sink);
    let mut config = LocalConfig::default();
    config.set("numbers.count=100").unwrap();
    let plan = planned(&registry, BOUNDED, &config).unwrap();
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(runnel_runtime::run(
        plan,
        Arc::new(backend.clone()),
        options(),
        console(),
        shutdown.clone(),
    ));
    while backend.topic("second").await.unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let copied = read_committed(&backend, "second", 100).await;
    assert_eq!(copied.values().map(Vec::len).sum::<usize>(), 100);
    // At rest: every record the sink read is committed (within a few commit intervals).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (ends, committed) = loop {
        let ends: Vec<u64> = backend
            .offsets("second")
            .await
            .unwrap()
            .iter()
            .map(|offsets| offsets.end)
            .collect();
        let committed = backend.committed("eos.sink.in", "second").await.unwrap();
        if committed.iter().zip(&ends).all(|(c, e)| *c == Some(*e)) || Instant::now() > deadline {
            break (ends, committed);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    shutdown.cancel();
    running.await.unwrap().unwrap();
    let lag: Vec<u64> = ends
        .iter()
        .zip(&committed)
        .map(|(end, committed)| end - committed.unwrap_or(0))
        .collect();
    assert_eq!(lag, [0, 0], "ends {ends:?}, committed {committed:?}");
}
