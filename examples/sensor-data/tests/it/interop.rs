use std::process::{Command, Stdio};
use std::time::Duration;

use runnel_backend::{Backend, TopicSpec};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::Tansu;

use crate::kafka_support::app_on;
use crate::support::Running;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop.py");
const READINGS: usize = 60;

#[runnel::serializable]
struct Metric {
    sequence: i64,
    name: String,
    value: f64,
}

#[runnel::serializable]
struct Invalid {
    metric: Metric,
    error: String,
}

#[runnel::serializable]
struct Summary {
    valid: Vec<Metric>,
    invalid: Vec<Invalid>,
    misplaced: usize,
}

fn python(args: &[&str]) -> std::process::Output {
    let output = Command::new("python3")
        .arg(SCRIPT)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("running python3");
    assert!(output.status.success(), "interop.py {args:?} failed");
    output
}

/// The Python `confluent-kafka` client writes readings (Avro by hand, keys, murmur2
/// partitions) to the app's input topic; the app's `to-metrics` and `validation` run as
/// their own processes; the same client reads the outputs, decodes them and checks that
/// each valid metric sits in the partition murmur2 of its key names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_kafka_client_feeds_the_app_and_reads_its_outputs() {
    let broker = Tansu::start();
    let backend = KafkaBackend::connect(broker.config()).await.unwrap();
    backend
        .create_topic(&TopicSpec::new("sensor-data", 2))
        .await
        .unwrap();
    python(&[
        "produce",
        &broker.bootstrap_servers(),
        &READINGS.to_string(),
    ]);

    let to_metrics = Running::start(app_on(
        &broker,
        &["run-streamlet", "to-metrics", BLUEPRINT_PATH],
    ));
    let validation = Running::start(app_on(
        &broker,
        &["run-streamlet", "validation", BLUEPRINT_PATH],
    ));
    to_metrics.wait_for("partitions assigned: sensor-data", Duration::from_secs(60));
    let output = tokio::task::spawn_blocking({
        let bootstrap = broker.bootstrap_servers();
        move || python(&["consume", &bootstrap, &(3 * READINGS).to_string()])
    })
    .await
    .unwrap();
    for mut running in [to_metrics, validation] {
        running.child.kill().unwrap();
        running.child.wait().unwrap();
    }

    let summary: Summary = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary.valid.len() + summary.invalid.len(), 3 * READINGS);
    assert_eq!(
        summary.misplaced, 0,
        "every valid metric is in its key's murmur2 partition"
    );
    let faulty: Vec<i64> = (0..READINGS as i64).filter(|s| s % 5 == 4).collect();
    let mut invalid: Vec<i64> = summary.invalid.iter().map(|i| i.metric.sequence).collect();
    invalid.sort_unstable();
    assert_eq!(
        invalid, faulty,
        "exactly the readings with a negative rotor speed"
    );
    assert!(
        summary
            .invalid
            .iter()
            .all(|i| i.metric.name == "rotor-speed"
                && i.error == "rotor-speed must not be negative, got -1")
    );
    let mut routed: Vec<(i64, String)> = summary
        .valid
        .iter()
        .map(|m| (m.sequence, m.name.clone()))
        .chain(
            summary
                .invalid
                .iter()
                .map(|i| (i.metric.sequence, i.metric.name.clone())),
        )
        .collect();
    routed.sort();
    routed.dedup();
    assert_eq!(
        routed.len(),
        3 * READINGS,
        "every metric of every reading, once"
    );
    let power_of_7 = summary
        .valid
        .iter()
        .find(|m| m.sequence == 7 && m.name == "power")
        .expect("the power metric of reading 7");
    assert_eq!(power_of_7.value, 1007.0, "values survive the round trip");
}

const BLUEPRINT_PATH: &str = crate::support::BLUEPRINT;
