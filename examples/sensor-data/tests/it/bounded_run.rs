use std::collections::BTreeSet;
use std::time::Duration;

use sensor_data::model::{InvalidMetric, Metric, SensorData};

use crate::support::{BLUEPRINT, app, open, read_values, run_to_end, stderr_of, stdout_of};

const READINGS: i64 = 700;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_run_routes_every_metric_and_exits_on_its_own() {
    let data = tempfile::tempdir().unwrap();
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        stdout_of(&output),
        stderr_of(&output)
    );
    assert!(stdout_of(&output).contains("sensor-data: 5 streamlets finished, 0 stopped"));

    let backend = open(data.path());
    let readings: Vec<SensorData> = read_values(&backend, "sensor-data").await;
    assert_eq!(readings.len() as i64, READINGS);
    let metrics: Vec<Metric> = read_values(&backend, "metrics").await;
    assert_eq!(metrics.len() as i64, 3 * READINGS);
    let valid: Vec<Metric> = read_values(&backend, "valid-metrics").await;
    let invalid: Vec<InvalidMetric> = read_values(&backend, "invalid-metrics").await;

    // Every 7th reading has a negative rotor speed: exactly those metrics are invalid.
    let faulty = (0..READINGS).filter(|sequence| sequence % 7 == 6).count();
    assert_eq!(invalid.len(), faulty);
    assert!(
        invalid
            .iter()
            .all(|i| i.metric.name == "rotor-speed" && i.metric.value < 0.0)
    );
    assert!(valid.iter().all(|metric| metric.value >= 0.0));
    assert_eq!(
        valid.len() + invalid.len(),
        3 * READINGS as usize,
        "the counts add up"
    );

    let routed: BTreeSet<(i64, String)> = valid
        .iter()
        .map(|m| (m.sequence, m.name.clone()))
        .chain(
            invalid
                .iter()
                .map(|i| (i.metric.sequence, i.metric.name.clone())),
        )
        .collect();
    assert_eq!(
        routed.len(),
        3 * READINGS as usize,
        "every metric of every reading arrived once"
    );
}
