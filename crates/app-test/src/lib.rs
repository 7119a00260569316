//! Helpers for end-to-end tests of Runnel app binaries, shared by the examples' test suites.
//!
//! An end-to-end test drives the app binary through its command line as a user would:
//! [`run_to_end`] for a bounded run, [`Running`] for one that is stopped by a signal or a
//! `kill -9` after some output line appeared; then it opens the app's data directory with
//! [`open`] and reads the topics back with [`read_topic`] or [`read_values`]. On Kafka,
//! [`GroupMember`] follows a process's partition assignments, and the `kafka` feature's
//! `kafka::read_topic` reads a topic as a plain client. [`kill_python_worker`] crashes the
//! process of one of the app's Python streamlets.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use runnel_app_test::{Running, run_to_end};
//!
//! let output = run_to_end(Command::new("my-app"), Duration::from_secs(60));
//! assert!(output.status.success());
//!
//! let running = Running::start(Command::new("my-app"));
//! running.wait_for("ready", Duration::from_secs(10));
//! ```

pub mod chromium;
mod group_member;
#[cfg(feature = "kafka")]
pub mod kafka;
mod python;

pub use group_member::GroupMember;
pub use python::{kill_python_worker, kill_python_worker_if_running, python_workers};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, ConsumedRecord, ReaderConfig};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_streamlet::Data;

/// Runs `command` to completion with its output captured; panics (killing it, and showing
/// what it printed) if it takes longer than `limit`.
pub fn run_to_end(mut command: Command, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the app binary starts");
    let started = Instant::now();
    while child
        .try_wait()
        .expect("the app can be waited for")
        .is_none()
    {
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the killed app is reaped");
            panic!(
                "the app did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                stdout_of(&output),
                stderr_of(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("the app's output is read")
}

/// A running app whose standard output arrives line by line (its standard error goes to
/// the test's). Dropped while the app still runs (a test failed before stopping it), it
/// kills the app, so that no process outlives the test.
#[derive(Debug)]
pub struct Running {
    /// The app's process, to signal or kill.
    pub child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line the app printed so far, whether waited for or not.
    printed: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Running {
    /// Starts `command` and reads its standard output on a thread.
    pub fn start(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the app binary starts");
        let stdout = child.stdout.take().expect("standard output is piped");
        let (sender, lines) = mpsc::channel();
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        std::thread::spawn({
            let printed = printed.clone();
            move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    printed
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(line.clone());
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            }
        });
        Running {
            child,
            lines,
            printed,
        }
    }

    /// Everything the app printed on standard output so far, a line each.
    pub fn printed(&self) -> String {
        let printed = self
            .printed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        printed.iter().map(|line| format!("{line}\n")).collect()
    }

    /// Waits for an output line for which `wanted` holds and returns it; panics after
    /// `limit`, saying it waited for `what`.
    pub fn wait_for_line(
        &self,
        what: &str,
        limit: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => {}
                Err(_) => panic!("no output line showed {what} within {limit:?}"),
            }
        }
    }

    /// Waits until a plain status line (`--view plain`) says `streamlet` has read at least
    /// `records` (its `total_in`); panics after `limit`.
    pub fn wait_until_read(&self, streamlet: &str, records: u64, limit: Duration) {
        let name = format!("streamlet={streamlet} ");
        self.wait_for_line(
            &format!("{streamlet} reading {records} records"),
            limit,
            |line| line.contains(&name) && total_in(line) >= Some(records),
        );
    }

    /// As [`wait_until_read`](Running::wait_until_read), but an app that ends first (its
    /// streamlets drained everything there was, before `streamlet` read `records` in this
    /// run) is not a failure: returns `false` once it exited, and successfully (panics if
    /// not).
    pub fn read_unless_drained(&mut self, streamlet: &str, records: u64, limit: Duration) -> bool {
        let name = format!("streamlet={streamlet} ");
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(&name) && total_in(&line) >= Some(records) => {
                    return true;
                }
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().expect("the app is waited for");
                    assert!(
                        status.success(),
                        "the app ended with {status} before {streamlet} read {records} records"
                    );
                    return false;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!(
                        "no output line showed {streamlet} reading {records} records within {limit:?}"
                    )
                }
            }
        }
    }

    /// Waits for an output line containing `text` and returns it; panics after `limit`.
    pub fn wait_for(&self, text: &str, limit: Duration) -> String {
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

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `condition` every 50 ms until it holds, failing the test with `what` after `limit`.
///
/// ```
/// use std::time::Duration;
/// let mut polls = 0;
/// runnel_app_test::wait_until(Duration::from_secs(5), "the third poll", || {
///     polls += 1;
///     polls == 3
/// });
/// ```
pub fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The embedded log of an app's data directory (after the app stopped, or beside it).
pub fn open(data_dir: &Path) -> EmbeddedBackend {
    EmbeddedBackend::open(data_dir, LogConfig::default()).expect("the data directory opens")
}

/// Every record of `topic` up to its current end, read committed by a partition reader of
/// every partition from its start.
pub async fn read_topic(backend: &EmbeddedBackend, topic: &str) -> Vec<ConsumedRecord> {
    let offsets = backend.offsets(topic).await.expect("the topic exists");
    let mut config = ReaderConfig::new(topic, 0, offsets[0].start);
    for (partition, bounds) in offsets.iter().enumerate().skip(1) {
        config = config.partition(topic, partition as u32, bounds.start);
    }
    let reader = backend
        .partition_reader(&config)
        .await
        .expect("a reader of the topic");
    let mut records = Vec::new();
    // Read until every partition's position reaches its end: counting records would not
    // do, as transaction markers take offsets and are never returned.
    loop {
        let at_end = reader
            .positions()
            .iter()
            .all(|(partition, at)| *at >= offsets[partition.partition as usize].end);
        if at_end {
            break;
        }
        records.extend(reader.poll(10_000).await.expect("the topic reads"));
    }
    records
}

/// The values of `topic`, decoded from Avro with `T`'s schema.
pub async fn read_values<T: Data>(backend: &EmbeddedBackend, topic: &str) -> Vec<T> {
    read_topic(backend, topic)
        .await
        .iter()
        .map(|record| decode(record.record.value.as_deref().expect("a non-null value")))
        .collect()
}

/// One Avro-encoded value of type `T`, as Runnel writes it (no schema header).
pub fn decode<T: Data>(bytes: &[u8]) -> T {
    let schema = T::get_schema();
    let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None)
        .expect("the bytes are an Avro datum of the schema");
    apache_avro::from_value(&value).expect("the datum fits the type")
}

/// What the app printed on standard output.
pub fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the app printed on standard error.
pub fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `total_in` a plain status line (`--view plain`) gives, if it gives one.
fn total_in(line: &str) -> Option<u64> {
    line.split("total_in=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|total| total.parse().ok())
}
