//! The Python variant (`python/blueprint.toml`): generator -> Python map (`to_metrics`) ->
//! Python stateful counter (`DeviceCounts`). Its Python processes and the app itself are
//! killed with -9 again and again while a backlog drains; afterwards every reading has its
//! three metrics downstream, and, exactly once, each exactly once with every device's counts
//! running 1, 2, 3... without a gap or a repeat.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runnel::prelude::*;
use sensor_data::model::{Metric, SensorData};

use crate::support::{Running, open, read_values, run_to_end, stderr_of};
use runnel_app_test::{kill_python_worker, kill_python_worker_if_running};

/// What `DeviceCounts` writes (`python/sensor_streamlets.py`).
#[record]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricCount {
    pub(crate) device_id: String,
    pub(crate) sequence: i64,
    pub(crate) name: String,
    pub(crate) seen: i64,
}

const READINGS: i64 = 60_000;

/// The Python variant's directory copied to `into`, each Python streamlet declared with
/// `delivery` when given.
fn python_variant(into: &Path, delivery: Option<&str>) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    for file in ["blueprint.toml", "sensor_streamlets.py", "local.toml"] {
        std::fs::copy(source.join(file), into.join(file)).unwrap();
    }
    let blueprint = into.join("blueprint.toml");
    if let Some(delivery) = delivery {
        let text = std::fs::read_to_string(&blueprint).unwrap();
        let text = text.replace(
            "sensor_streamlets:to_metrics\"\n",
            &format!("sensor_streamlets:to_metrics\"\ndelivery = \"{delivery}\"\n"),
        );
        let text = text.replace(
            "sensor_streamlets:DeviceCounts\"\n",
            &format!("sensor_streamlets:DeviceCounts\"\ndelivery = \"{delivery}\"\n"),
        );
        assert_eq!(text.matches("delivery =").count(), 2, "{text}");
        std::fs::write(&blueprint, text).unwrap();
    }
    blueprint
}

/// The app binary running the Python variant's `blueprint` on `data_dir`, with plain status
/// lines every second.
fn app(blueprint: &str, data_dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(["run", blueprint, "--data-dir"])
        .arg(data_dir)
        .args(["--view", "plain", "--status-every", "1s"])
        .env("RUST_LOG", "info");
    command
}

/// Waits until a status line says `streamlet` read `records` in this run: a few seconds
/// alone, far longer beside CI's other heavy tests (a real API server's among them), so the
/// deadline is generous.
fn wait_for_more(running: &Running, streamlet: &str, records: u64) {
    running.wait_until_read(streamlet, records, Duration::from_secs(300));
}

/// Waits until `py-counts` read `records` in this run, or the app ended, every record
/// drained (returns `true` then).
fn drained(running: &mut Running, records: u64) -> bool {
    !running.read_unless_drained("py-counts", records, Duration::from_secs(300))
}

fn killed_again_and_again(
    delivery: Option<&str>,
) -> (Vec<SensorData>, Vec<Metric>, Vec<MetricCount>) {
    let directory = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let blueprint = python_variant(directory.path(), delivery);
    let blueprint = blueprint.to_str().unwrap();

    // The generator writes every reading at once; the Python streamlets work through the
    // backlog while their processes are killed, then the app is.
    let mut first = app(blueprint, data.path());
    first.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=0",
    ]);
    let mut running = Running::start(first);
    // Every reading is in the log before anything is killed.
    running.wait_for(
        "streamlet=generator state=finished",
        Duration::from_secs(120),
    );
    wait_for_more(&running, "py-counts", 10_000);
    kill_python_worker(running.child.id(), "DeviceCounts");
    wait_for_more(&running, "py-metrics", 20_000);
    kill_python_worker(running.child.id(), "to_metrics");
    wait_for_more(&running, "py-counts", 30_000);
    running.child.kill().unwrap(); // SIGKILL: no drain, no final commit
    running.child.wait().unwrap();

    // Then only draining, killed twice more: once its Python processes, once all of it.
    for round in 0..2 {
        let mut again = app(blueprint, data.path());
        again.args(["--set", "generator.count=0"]);
        let mut running = Running::start(again);
        // The streamlets may have read far past the counts waited for before each kill (a
        // status line comes every second), and then drain what is left before this round
        // reads as much: the app ends by itself, and there is nothing more to kill.
        if !drained(&mut running, 5_000) {
            if round == 0 {
                kill_python_worker(running.child.id(), "DeviceCounts");
                // `to_metrics` may have read every reading in the first run already, and
                // then finishes at once here (the generator writes none): its process is
                // killed if it still runs. `DeviceCounts`, with a backlog, runs here.
                kill_python_worker_if_running(running.child.id(), "to_metrics");
                if drained(&mut running, 10_000) {
                    continue;
                }
            }
            running.child.kill().unwrap();
            running.child.wait().unwrap();
        }
    }

    let mut last = app(blueprint, data.path());
    last.args(["--set", "generator.count=0"]);
    let output = run_to_end(last, Duration::from_secs(240));
    assert!(output.status.success(), "stderr:\n{}", stderr_of(&output));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let backend = open(data.path());
        (
            read_values(&backend, "sensor-data").await,
            read_values(&backend, "metrics").await,
            read_values(&backend, "metric-counts").await,
        )
    })
}

/// Every reading's three metrics, by (device, sequence, name), with how often each arrived.
fn arrivals<'a>(
    readings: &[SensorData],
    arrived: impl Iterator<Item = (&'a str, i64, &'a str)>,
    what: &str,
) -> BTreeMap<(String, i64, String), usize> {
    let mut counted: BTreeMap<(String, i64, String), usize> = BTreeMap::new();
    for (device, sequence, name) in arrived {
        *counted
            .entry((device.to_owned(), sequence, name.to_owned()))
            .or_default() += 1;
    }
    for reading in readings {
        for name in ["power", "rotor-speed", "wind-speed"] {
            let key = (reading.device_id.clone(), reading.sequence, name.to_owned());
            assert!(
                counted.contains_key(&key),
                "{what}: metric {name} of reading {} of device {} was lost",
                reading.sequence,
                reading.device_id
            );
        }
    }
    assert_eq!(
        counted.len(),
        readings.len() * 3,
        "{what}: only the readings' metrics"
    );
    counted
}

/// The topics after the kills: how often each reading's metrics arrived in `metrics` and
/// in `metric-counts` (every one at least once: checked), and the counts in order.
struct Survived {
    metrics: BTreeMap<(String, i64, String), usize>,
    counted: BTreeMap<(String, i64, String), usize>,
    counts: Vec<MetricCount>,
}

fn survived(delivery: Option<&str>) -> Survived {
    let (readings, metrics, counts) = killed_again_and_again(delivery);
    assert_eq!(readings.len() as i64, READINGS);
    let metrics = arrivals(
        &readings,
        metrics
            .iter()
            .map(|m| (m.device_id.as_str(), m.sequence, m.name.as_str())),
        "metrics",
    );
    let counted = arrivals(
        &readings,
        counts
            .iter()
            .map(|c| (c.device_id.as_str(), c.sequence, c.name.as_str())),
        "counts",
    );
    Survived {
        metrics,
        counted,
        counts,
    }
}

/// How many arrivals were repeats.
fn duplicates(arrived: &BTreeMap<(String, i64, String), usize>) -> usize {
    arrived.values().map(|n| n - 1).sum()
}

#[test]
fn python_streamlets_killed_again_and_again_lose_nothing() {
    let survived = survived(None);
    println!(
        "python, at least once: {} metrics ({} duplicates), {} counts ({} duplicates)",
        survived.metrics.len(),
        duplicates(&survived.metrics),
        survived.counts.len(),
        duplicates(&survived.counted)
    );
}

#[test]
fn exactly_once_python_streamlets_killed_again_and_again_write_everything_once() {
    let Survived {
        metrics,
        counted,
        counts,
    } = survived(Some("exactly-once"));
    for (what, arrived) in [("metric", &metrics), ("count", &counted)] {
        let repeated: Vec<_> = arrived.iter().filter(|(_, n)| **n > 1).take(5).collect();
        assert!(repeated.is_empty(), "every {what} once: {repeated:?}");
    }
    // The state came back exactly: each device's counts run 1, 2, 3... in the order its
    // metrics were counted.
    let mut by_device: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for count in &counts {
        by_device
            .entry(&count.device_id)
            .or_default()
            .push(count.seen);
    }
    for (device, seen) in by_device {
        let broken = seen
            .iter()
            .zip(1..)
            .position(|(seen, expected)| *seen != expected);
        if let Some(at) = broken {
            panic!(
                "device {device}: its count number {} is {}, after {:?}",
                at + 1,
                seen[at],
                &seen[at.saturating_sub(3)..at]
            );
        }
    }
    println!(
        "python, exactly once: {} metrics, {} counts, each once",
        metrics.len(),
        counts.len()
    );
}
