use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use device_stats::model::{PowerStats, Reading};
use runnel::prelude::*;
use runnel::window::{Pane, Timing};
use runnel_backend::{Backend, ConsumedRecord, ConsumerConfig};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

pub(crate) const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// The app binary with `args`, its data in `data_dir`, plain output and quiet loggers.
pub(crate) fn app(args: &[&str], data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_device-stats"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--view", "plain", "--status-every", "1s"])
        .args(["--set", "stats-logger.log-every=100"])
        .env("RUST_LOG", "info");
    command
}

/// Runs to completion, failing the test if it takes longer than `limit`.
pub(crate) fn run_to_end(mut command: Command, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "the app did not finish within {limit:?}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A running app whose output lines arrive on a channel.
pub(crate) struct Running {
    pub(crate) child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    pub(crate) fn start(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child, lines }
    }

    /// Waits for an output line containing `text`.
    pub(crate) fn wait_for(&self, text: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(_) => panic!("no output line containing '{text}' within {limit:?}"),
            }
        }
    }
}

pub(crate) fn open(data_dir: &Path) -> EmbeddedBackend {
    EmbeddedBackend::open(data_dir, LogConfig::default()).unwrap()
}

/// Every record of a topic, read with a fresh consumer group.
pub(crate) async fn read_topic(backend: &EmbeddedBackend, topic: &str) -> Vec<ConsumedRecord> {
    let offsets = backend.offsets(topic).await.unwrap();
    let total: u64 = offsets.iter().map(|o| o.end - o.start).sum();
    let consumer = backend
        .consumer(&ConsumerConfig::new(
            format!("test-reader-{topic}"),
            [topic],
        ))
        .await
        .unwrap();
    let mut records = Vec::new();
    while (records.len() as u64) < total {
        records.extend(consumer.poll(10_000).await.unwrap());
    }
    consumer.close().await.unwrap();
    records
}

/// The values of a topic, decoded from Avro.
pub(crate) async fn read_values<T: Data>(backend: &EmbeddedBackend, topic: &str) -> Vec<T> {
    let schema = T::get_schema();
    read_topic(backend, topic)
        .await
        .iter()
        .map(|record| {
            let value =
                apache_avro::from_avro_datum(&schema, &mut &record.record.value[..], None).unwrap();
            apache_avro::from_value(&value).unwrap()
        })
        .collect()
}

/// A device and the start of its minute.
pub(crate) type Minute = (String, i64);

/// The statistics of `readings` per device and minute, computed directly.
pub(crate) fn batch(readings: &[Reading]) -> BTreeMap<Minute, PowerStats> {
    let mut sums: BTreeMap<Minute, (i64, f64, f64, f64)> = BTreeMap::new();
    for reading in readings {
        let start = reading.time - reading.time.rem_euclid(60_000);
        let entry =
            sums.entry((reading.device.clone(), start))
                .or_insert((0, 0.0, f64::MAX, f64::MIN));
        entry.0 += 1;
        entry.1 += reading.power;
        entry.2 = entry.2.min(reading.power);
        entry.3 = entry.3.max(reading.power);
    }
    sums.into_iter()
        .map(|(minute, (readings, sum, min, max))| {
            let mean = sum / readings as f64;
            (
                minute,
                PowerStats {
                    readings,
                    mean,
                    min,
                    max,
                },
            )
        })
        .collect()
}

/// The panes per device and minute; fails if one (device, minute, index) was sent twice
/// with different contents. Returns them and how many were sent in all.
pub(crate) fn by_minute(
    panes: &[Pane<String, PowerStats>],
) -> (BTreeMap<Minute, PowerStats>, usize) {
    let mut seen: BTreeMap<(String, i64, u32), &Pane<String, PowerStats>> = BTreeMap::new();
    for pane in panes {
        assert_eq!(pane.timing, Timing::OnTime, "{pane:?}");
        assert_eq!(pane.window_end - pane.window_start, 60_000);
        let identity = (pane.key.clone(), pane.window_start, pane.index);
        if let Some(earlier) = seen.insert(identity.clone(), pane) {
            assert_eq!(
                earlier.value.readings, pane.value.readings,
                "{identity:?} sent twice, differently"
            );
            assert_eq!(earlier.value.min, pane.value.min);
            assert_eq!(earlier.value.max, pane.value.max);
            assert!((earlier.value.mean - pane.value.mean).abs() < 1e-9);
        }
    }
    let results = seen
        .into_iter()
        .map(|((device, start, _), pane)| ((device, start), pane.value.clone()))
        .collect();
    (results, panes.len())
}

/// Asserts that the streamed statistics are the batch ones (means up to rounding: the
/// order of additions may differ across partitions).
pub(crate) fn assert_same(
    streamed: &BTreeMap<Minute, PowerStats>,
    batch: &BTreeMap<Minute, PowerStats>,
) {
    assert_eq!(
        streamed.keys().collect::<Vec<_>>(),
        batch.keys().collect::<Vec<_>>(),
        "every device-minute has exactly one result"
    );
    for (minute, expected) in batch {
        let got = &streamed[minute];
        assert_eq!(got.readings, expected.readings, "readings of {minute:?}");
        assert_eq!(
            (got.min, got.max),
            (expected.min, expected.max),
            "{minute:?}"
        );
        assert!(
            (got.mean - expected.mean).abs() < 1e-6,
            "mean of {minute:?}"
        );
    }
}

pub(crate) fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
