//! Exactly-once under repeated SIGKILL, through the runtime on the embedded log: 200,000
//! keyed numbers go through an exactly-once copy and an exactly-once windowed count, in a
//! child process killed 20 times at varying moments; a last run drains the rest. Read
//! committed, the copy holds every input exactly once in input order per partition, and
//! every window's count is read once and equals a batch computation.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use runnel_app_test::{decode, read_topic};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_runtime::{LocalConfig, Plan, Registry, RunOptions};
use runnel_streamlet::prelude::*;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::window::{Count, Pane, WindowSpec};
use tokio_util::sync::CancellationToken;

use crate::exactly_once::{IN, KeyedNumbers, OUT, key_of};
use crate::support::{Number, console, options, planned};

const INPUTS: i64 = 200_000;
const KILLS: usize = 20;
/// The environment variable that turns [`exactly_once_soak_child`] into the killed process.
const DIRECTORY: &str = "RUNNEL_RUNTIME_EXACTLY_ONCE_SOAK_DIRECTORY";

const PANES: Outlet<Pane<String, i64>> = Outlet::new("out").keyed_by(|pane| pane.key.clone());
/// Number `n` happened at `n * 10` ms: a second of event time holds 100 numbers.
const SECOND: WindowSpec = WindowSpec::tumbling(Duration::from_secs(1));

/// Copies numbers exactly once, slowly enough to be killed mid-stream, printing
/// `copied N` every 1,000 numbers so the test knows when to kill.
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
            if copied.is_multiple_of(8) {
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
            output.send(message.value()).await?;
            message.commit();
            copied += 1;
            if copied.is_multiple_of(1_000) {
                let mut out = std::io::stdout().lock();
                writeln!(out, "copied {copied}").unwrap();
                out.flush().unwrap();
            }
        }
        Ok(())
    }
}

fn counts() -> impl Streamlet {
    WindowedAggregate::new(IN, PANES, SECOND, Count::new())
        .key_by(|number: &Number| key_of(number.value))
        .event_time(|number| number.value * 10)
        .watermarks(Watermarks::bounded(Duration::ZERO))
        .checkpoint_every(Duration::from_millis(100))
        .exactly_once()
}

const BLUEPRINT: &str = r#"
name = "soak"
[streamlets]
numbers = "keyed-numbers"
copy = "slow-copy"
counts = "counts"
[topics.numbers]
producers = ["numbers.out"]
consumers = ["copy.in", "counts.in"]
partitions = 3
[topics.copies]
producers = ["copy.out"]
partitions = 3
[topics.panes]
producers = ["counts.out"]
partitions = 3
"#;

fn plan(count: i64) -> Plan {
    let registry = Registry::new()
        .register("keyed-numbers", || KeyedNumbers)
        .register("slow-copy", || SlowCopy)
        .register("counts", counts);
    let mut config = LocalConfig::default();
    config.set(&format!("numbers.count={count}")).unwrap();
    planned(&registry, BLUEPRINT, &config).unwrap()
}

fn except_numbers() -> RunOptions {
    RunOptions {
        only: None,
        ..options()
    }
}

/// Run by [`exactly_once_survives_twenty_sigkills_over_200k_records`] in a child process:
/// runs the copy and the count (the source has nothing more to send) until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of exactly_once_survives_twenty_sigkills_over_200k_records"]
async fn exactly_once_soak_child() {
    let directory = std::env::var(DIRECTORY)
        .expect("run by exactly_once_survives_twenty_sigkills_over_200k_records");
    let backend = EmbeddedBackend::open(&directory, LogConfig::default()).unwrap();
    runnel_runtime::run(
        plan(0),
        Arc::new(backend),
        except_numbers(),
        console(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
}

/// The values of `topic`, read committed up to its end, per partition in offset order.
async fn by_partition(backend: &EmbeddedBackend, topic: &str) -> BTreeMap<u32, Vec<Vec<u8>>> {
    let mut values: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for consumed in read_topic(backend, topic).await {
        let value = consumed.record.value.expect("outputs are never null");
        values
            .entry(consumed.partition)
            .or_default()
            .push(value.to_vec());
    }
    values
}

/// The count of every key and 1-second window, computed directly.
fn batch() -> BTreeMap<(String, i64), i64> {
    let mut counts = BTreeMap::new();
    for value in 0..INPUTS {
        let time = value * 10;
        *counts
            .entry((key_of(value), time - time.rem_euclid(1_000)))
            .or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_survives_twenty_sigkills_over_200k_records() {
    let directory = tempfile::tempdir().unwrap();
    // The input, written once by the plan's own source.
    let inputs = {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        let options = RunOptions {
            only: Some("numbers".into()),
            ..options()
        };
        let source = runnel_runtime::run(
            plan(INPUTS),
            Arc::new(backend.clone()),
            options,
            console(),
            CancellationToken::new(),
        );
        source.await.unwrap();
        by_partition(&backend, "numbers").await
    };

    // Kill after a varying number of copies, 3,000 to 9,999 (a fixed pseudo-random
    // sequence, so a failure can be replayed).
    let mut seed: u64 = 0x5eed;
    let mut copied_at_kills = Vec::new();
    for _ in 0..KILLS {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let target = 3_000 + (seed >> 33) % 7_000;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "exactly_once_soak::exactly_once_soak_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIRECTORY, directory.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
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
        copied_at_kills.push(copied);
    }
    assert!(
        copied_at_kills.iter().all(|&copied| copied >= 3_000),
        "every child was killed mid-stream: {copied_at_kills:?}"
    );

    // The last run, in this process: the input is bounded, so it drains the rest and ends.
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    runnel_runtime::run(
        plan(0),
        Arc::new(backend.clone()),
        except_numbers(),
        console(),
        CancellationToken::new(),
    )
    .await
    .unwrap();

    let copies = by_partition(&backend, "copies").await;
    for (partition, expected) in &inputs {
        let outputs = copies.get(partition).cloned().unwrap_or_default();
        let first_difference = expected
            .iter()
            .zip(&outputs)
            .position(|(input, output)| input != output);
        assert!(
            outputs.len() == expected.len() && first_difference.is_none(),
            "partition {partition}: {} inputs, {} copies, first difference at position {:?}",
            expected.len(),
            outputs.len(),
            first_difference
        );
    }

    let expected = batch();
    let panes = by_partition(&backend, "panes").await;
    let mut counted = BTreeMap::new();
    for bytes in panes.values().flatten() {
        let pane: Pane<String, i64> = decode(bytes);
        let window = (pane.key.clone(), pane.window_start);
        let earlier = counted.insert(window.clone(), pane.value);
        assert!(
            earlier.is_none(),
            "the pane of window {window:?} was read twice: {earlier:?} and {}",
            pane.value
        );
    }
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(window, count)| counted.get(*window) != Some(count))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && counted.len() == expected.len(),
        "{} windows read, {} expected; the first wrong ones (window, expected count): {wrong:?}",
        counted.len(),
        expected.len()
    );
}
