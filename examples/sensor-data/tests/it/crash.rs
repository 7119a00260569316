use std::collections::BTreeMap;
use std::time::Duration;

use sensor_data::model::{InvalidMetric, Metric, SensorData};

use crate::support::{BLUEPRINT, Running, app, open, read_values, run_to_end, stderr_of};

/// `kill -9` mid-stream, then a second run that only drains: every reading that reached the
/// log in the first run has all its metrics downstream, and the second run resumed from the
/// committed offsets rather than from the beginning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loses_nothing_that_was_acknowledged() {
    let data = tempfile::tempdir().unwrap();
    let mut first = app(&["run", BLUEPRINT], data.path());
    first.args(["--set", "generator.records-per-second=20000"]);
    let mut running = Running::start(first);
    // Well into the stream: thousands of metrics through, many commit intervals behind.
    running.wait_until_read("valid-logger", 20_000, Duration::from_secs(60));
    running.child.kill().unwrap(); // SIGKILL: no drain, no final commit
    running.child.wait().unwrap();

    let mut second = app(&["run", BLUEPRINT], data.path());
    second.args(["--set", "generator.count=0"]);
    let output = run_to_end(second, Duration::from_secs(120));
    assert!(output.status.success(), "stderr:\n{}", stderr_of(&output));

    let backend = open(data.path());
    let readings: Vec<SensorData> = read_values(&backend, "sensor-data").await;
    assert!(
        readings.len() > 100,
        "the first run got going ({} readings)",
        readings.len()
    );
    let valid: Vec<Metric> = read_values(&backend, "valid-metrics").await;
    let invalid: Vec<InvalidMetric> = read_values(&backend, "invalid-metrics").await;
    let mut arrivals: BTreeMap<(i64, String), usize> = BTreeMap::new();
    for metric in valid.iter().chain(invalid.iter().map(|i| &i.metric)) {
        *arrivals
            .entry((metric.sequence, metric.name.clone()))
            .or_default() += 1;
    }
    for reading in &readings {
        for name in ["power", "rotor-speed", "wind-speed"] {
            assert!(
                arrivals.contains_key(&(reading.sequence, name.to_owned())),
                "metric {name} of reading {} was lost",
                reading.sequence
            );
        }
    }
    let duplicates: usize = arrivals.values().map(|count| count - 1).sum();
    let distinct = arrivals.len();
    println!(
        "crash test: {} readings, {distinct} metrics, {duplicates} duplicates",
        readings.len()
    );
    assert!(
        duplicates < distinct,
        "the restart resumed from committed offsets, not from the start"
    );
}
