use std::time::Duration;

use runnel_kafka::test_broker::ApacheKafka;
use sensor_data::model::{InvalidMetric, Metric};

use crate::kafka_support::{app_on, arrivals, at_least, read_topic};
use crate::support::{BLUEPRINT, decode, run_to_end, stderr_of, stdout_of};

const READINGS: i64 = 700;

/// `run --kafka`: the whole graph in one process on Apache Kafka; a plain
/// Kafka consumer then finds every metric routed exactly where the app says.
#[test]
fn a_bounded_run_on_kafka_routes_every_metric() {
    let broker = ApacheKafka::start();
    let mut command = app_on(&broker, &["run", BLUEPRINT]);
    command.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(120));
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        stdout_of(&output),
        stderr_of(&output)
    );
    let stdout = stdout_of(&output);
    assert!(
        stdout.contains("sensor-data: 5 streamlets finished, 0 stopped"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the kafka cluster at 127.0.0.1:"),
        "{stdout}"
    );

    let faulty = (0..READINGS).filter(|sequence| sequence % 7 == 6).count();
    let total = 3 * READINGS as usize;
    let valid: Vec<Metric> = read_topic(
        &broker,
        "valid-metrics",
        Duration::from_secs(30),
        at_least(total - faulty),
    )
    .iter()
    .map(|seen| decode(&seen.value))
    .collect();
    let invalid: Vec<InvalidMetric> = read_topic(
        &broker,
        "invalid-metrics",
        Duration::from_secs(30),
        at_least(faulty),
    )
    .iter()
    .map(|seen| decode(&seen.value))
    .collect();
    assert_eq!(invalid.len(), faulty);
    assert!(
        invalid
            .iter()
            .all(|i| i.metric.name == "rotor-speed" && i.metric.value < 0.0)
    );
    assert!(valid.iter().all(|metric| metric.value >= 0.0));
    let counts = arrivals(valid.iter().chain(invalid.iter().map(|i| &i.metric)));
    assert_eq!(counts.len(), total, "every metric of every reading arrived");
    assert!(
        counts.values().all(|count| *count == 1),
        "no metric arrived twice in a run without failures"
    );
}
