//! The Confluent wire format with a real schema registry (Apicurio Registry) on Apache Kafka:
//! a plain Python client with Confluent's `AvroSerializer` writes readings with an evolved
//! schema after readings written before the registry (plain Avro), then, while the app
//! runs, readings with a schema it registers only then; the app reads them all (resolving
//! each schema to its own, looking the last one up by its id), and the same client's
//! `AvroDeserializer` reads what the app wrote; `tail` shows everything.

use std::process::{Command, Stdio};
use std::time::Duration;

use runnel::apache_avro::AvroSchema as _;
use runnel_backend::{Backend, TopicSpec};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::ApacheKafka;
use runnel_kafka::test_registry::ApicurioRegistry;
use sensor_data::model::SensorData;

use crate::kafka_support::app_on;
use crate::support::{BLUEPRINT, Running, stderr_of, stdout_of};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/registry_interop.py");
/// Writes plain Avro, as before a registry kept the topic's schemas.
const PLAIN_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop.py");
/// Readings written before the registry, then with it.
const PLAIN_READINGS: usize = 10;
const READINGS: usize = 40;
/// Readings written while the app runs, with another field and so another schema id.
const LATE_READINGS: usize = 10;

fn python(args: &[&str]) -> std::process::Output {
    python_script(SCRIPT, args)
}

fn python_script(script: &str, args: &[&str]) -> std::process::Output {
    let output = Command::new("python3")
        .arg(script)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("running python3");
    assert!(output.status.success(), "{script} {args:?} failed");
    output
}

#[derive(runnel::serde::Deserialize)]
#[serde(crate = "runnel::serde")]
struct Consumed {
    valid: Vec<serde_json::Value>,
    invalid: Vec<serde_json::Value>,
    /// The schema ids the app's records start with.
    ids: Vec<u32>,
    /// Every subject, with the id of its latest version.
    subjects: std::collections::BTreeMap<String, u32>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_avro_clients_and_the_app_read_each_other_through_the_registry() {
    let broker = ApacheKafka::start();
    let registry = ApicurioRegistry::start();
    let backend = KafkaBackend::connect(broker.config()).await.unwrap();
    backend
        .create_topic(&TopicSpec::new("sensor-data", 2))
        .await
        .unwrap();
    python_script(
        PLAIN_SCRIPT,
        &[
            "produce",
            &broker.bootstrap_servers(),
            &PLAIN_READINGS.to_string(),
        ],
    );
    let schema = SensorData::get_schema().canonical_form();
    python(&[
        "produce",
        &broker.bootstrap_servers(),
        &registry.url(),
        &schema,
        &PLAIN_READINGS.to_string(),
        &(READINGS - PLAIN_READINGS).to_string(),
    ]);

    let registry_setting = format!("schema.registry.url={}", registry.url());
    let streamlet = |name: &str| {
        let mut command = app_on(&broker, &["run-streamlet", name, BLUEPRINT]);
        command.args(["--kafka-setting", &registry_setting]);
        Running::start(command)
    };
    let to_metrics = streamlet("to-metrics");
    let validation = streamlet("validation");
    to_metrics.wait_for("partitions assigned: sensor-data", Duration::from_secs(60));
    python(&[
        "produce",
        &broker.bootstrap_servers(),
        &registry.url(),
        &schema,
        &READINGS.to_string(),
        &LATE_READINGS.to_string(),
        "region",
    ]);
    let all = READINGS + LATE_READINGS;
    let consumed = tokio::task::spawn_blocking({
        let (bootstrap, url) = (broker.bootstrap_servers(), registry.url());
        move || python(&["consume", &bootstrap, &url, &(3 * all).to_string()])
    })
    .await
    .unwrap();
    for mut running in [to_metrics, validation] {
        running.child.kill().unwrap();
        running.child.wait().unwrap();
    }

    let consumed: Consumed = serde_json::from_slice(&consumed.stdout).unwrap();
    assert_eq!(consumed.valid.len() + consumed.invalid.len(), 3 * all);
    let mut faulty: Vec<i64> = consumed
        .invalid
        .iter()
        .map(|invalid| invalid["metric"]["sequence"].as_i64().unwrap())
        .collect();
    faulty.sort_unstable();
    let expected: Vec<i64> = (0..all as i64).filter(|s| s % 5 == 4).collect();
    assert_eq!(
        faulty, expected,
        "exactly the readings with a negative rotor speed"
    );
    let power_of_7 = consumed
        .valid
        .iter()
        .find(|metric| metric["sequence"] == 7 && metric["name"] == "power")
        .expect("the power metric of reading 7");
    assert_eq!(power_of_7["value"], 1007.0);
    assert_eq!(power_of_7["device_id"], "device-1");
    let power_of_17 = consumed
        .valid
        .iter()
        .find(|metric| metric["sequence"] == 17 && metric["name"] == "power")
        .expect("the power metric of reading 17, written through the registry");
    assert_eq!(power_of_17["value"], 1017.0);
    // The app registered each schema it writes under its topic's subject, and its records
    // name those ids.
    let subjects: Vec<&str> = consumed.subjects.keys().map(String::as_str).collect();
    assert_eq!(
        subjects,
        [
            "invalid-metrics-value",
            "metrics-value",
            "sensor-data-value",
            "valid-metrics-value"
        ]
    );
    let mut written = vec![
        consumed.subjects["valid-metrics-value"],
        consumed.subjects["invalid-metrics-value"],
    ];
    written.sort_unstable();
    written.dedup();
    assert_eq!(consumed.ids, written);

    // `tail` shows every record: the outside producer's with the schema that wrote them,
    // field `site` included, those from before the registry with the blueprint's, and the
    // app's with theirs.
    let tail = |topic: &str| -> Vec<serde_json::Value> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
        command
            .args(["tail", topic, "--values", "--blueprint", BLUEPRINT])
            .args(broker.app_arguments())
            .args(["--kafka-setting", &registry_setting]);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", stderr_of(&output));
        stdout_of(&output)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let readings = tail("sensor-data");
    let mut added: Vec<(i64, &str)> = readings
        .iter()
        .map(|reading| {
            let field = ["site", "region"]
                .into_iter()
                .find(|field| reading[field] == "north-sea")
                .unwrap_or("(none)");
            (reading["sequence"].as_i64().unwrap(), field)
        })
        .collect();
    added.sort_unstable();
    let expected: Vec<(i64, &str)> = (0..all as i64)
        .map(|sequence| match sequence {
            s if s < PLAIN_READINGS as i64 => (s, "(none)"),
            s if s < READINGS as i64 => (s, "site"),
            s => (s, "region"),
        })
        .collect();
    assert_eq!(added, expected);
    let metrics = tail("valid-metrics");
    assert!(
        metrics
            .iter()
            .all(|metric| metric["name"].is_string() && metric["value"].is_number()),
        "{metrics:?}"
    );
}
