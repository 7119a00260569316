use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use runnel::prelude::*;
use runnel_backend::{Backend, ConsumedRecord, ConsumerConfig};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

pub(crate) const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// The app binary with `args`, its data in `data_dir`, plain output and quiet loggers.
pub(crate) fn app(args: &[&str], data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .args([
            "--view",
            "plain",
            "--status-every",
            "1s",
            "--set",
            "valid-logger.log-every=1000",
        ])
        .args(["--set", "invalid-logger.log-every=1000"])
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
                "the app did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
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

/// Every record of a topic in the data directory, read with a fresh consumer group.
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
    read_topic(backend, topic)
        .await
        .iter()
        .map(|record| decode(&record.record.value))
        .collect()
}

pub(crate) fn decode<T: Data>(bytes: &[u8]) -> T {
    let schema = T::get_schema();
    let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
    apache_avro::from_value(&value).unwrap()
}

pub(crate) fn open(data_dir: &Path) -> EmbeddedBackend {
    EmbeddedBackend::open(data_dir, LogConfig::default()).unwrap()
}

pub(crate) fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
