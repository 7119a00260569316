//! The HTTP variant (`http/blueprint.toml`): readings POSTed to the binary are durable once
//! answered `200`, even through a `kill -9` right after the answer.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use runnel_embedded_log::LogInspector;
use sensor_data::model::{InvalidMetric, Metric, SensorData};
use sensor_data::streamlets::generator::reading;

use crate::support::{Running, app, decode, open, read_values};

const HTTP_BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/http/blueprint.toml");

/// The HTTP variant on free ports of 127.0.0.1.
fn http_app(data_dir: &Path) -> Command {
    let mut command = app(&["run", HTTP_BLUEPRINT], data_dir);
    for instance in ["ingress", "ingress-lines"] {
        command.args(["--set", &format!("{instance}.port=0")]);
        command.args(["--set", &format!("{instance}.bind-address=127.0.0.1")]);
    }
    command
}

/// Starts the app and returns it with the URLs of its JSON and its lines ingress.
fn start(data_dir: &Path) -> (Running, String, String) {
    let running = Running::start(http_app(data_dir));
    let (mut json, mut lines) = (None, None);
    while json.is_none() || lines.is_none() {
        let line = running.wait_for("listening on", Duration::from_secs(60));
        let after = line.split("listening on ").nth(1).unwrap();
        let address = after.split_whitespace().next().unwrap().to_owned();
        let url = format!("http://{address}/");
        if line.contains("ingress-lines") {
            lines = Some(url);
        } else {
            json = Some(url);
        }
    }
    (running, json.unwrap(), lines.unwrap())
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// POSTs `body`; returns the status and the answer as JSON.
fn post(url: &str, body: &str) -> (u16, serde_json::Value) {
    let mut response = agent().post(url).send(body).expect("the ingress answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reading_answered_200_survives_kill_9_and_flows_on_after_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let (mut running, json_url, lines_url) = start(data.path());

    // Refusals first: they must leave no trace.
    let (status, answer) = post(&json_url, "{\"device_id\": ");
    assert_eq!(status, 400, "{answer}");
    let mut bad = reading(0, 4, 0, 1_700_000_000_000);
    bad.device_id = "turbine-7".to_owned();
    let (status, answer) = post(&json_url, &serde_json::to_string(&bad).unwrap());
    assert_eq!((status, &answer["field"]), (400, &"device_id".into()));

    let readings: Vec<SensorData> = (0..50)
        .map(|sequence| reading(sequence, 4, 7, 1_700_000_000_000 + sequence))
        .collect();
    let mut answered = Vec::new();
    for sensor_data in &readings[..30] {
        let (status, answer) = post(&json_url, &serde_json::to_string(sensor_data).unwrap());
        assert_eq!(status, 200, "{answer}");
        answered.push((
            answer["partition"].as_u64().unwrap() as u32,
            answer["offset"].as_u64().unwrap(),
            sensor_data.clone(),
        ));
    }
    let body: String = readings[30..]
        .iter()
        .map(|data| serde_json::to_string(data).unwrap() + "\n")
        .collect();
    let (status, answer) = post(&lines_url, &body);
    assert_eq!((status, answer), (200, serde_json::json!({"accepted": 20})));
    running.child.kill().unwrap(); // SIGKILL right after the last 200: no drain
    running.child.wait().unwrap();

    let backend = open(data.path());
    let stored = runnel_app_test::read_topic(&backend, "sensor-data").await;
    for (partition, offset, sensor_data) in &answered {
        let record = stored
            .iter()
            .find(|record| record.partition == *partition && record.offset == *offset)
            .unwrap_or_else(|| {
                panic!(
                    "reading {} is not at {partition}/{offset}",
                    sensor_data.sequence
                )
            });
        assert_eq!(
            &decode::<SensorData>(record.record.value.as_deref().unwrap()),
            sensor_data
        );
    }
    let sequences: BTreeSet<i64> = stored
        .iter()
        .map(|record| decode::<SensorData>(record.record.value.as_deref().unwrap()).sequence)
        .collect();
    assert_eq!(
        sequences,
        (0..50).collect(),
        "every answered reading, nothing refused"
    );
    assert_eq!(stored.len(), 50);
    drop(backend);

    // The restarted app picks up what the killed one had not processed.
    let (mut running, _, _) = start(data.path());
    let inspector = LogInspector::new(data.path()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Counted as distinct metrics: those processed before the kill and not committed come
    // again, so a count of records can reach 150 while some metric is still to come.
    let routed = || -> BTreeSet<(i64, String)> {
        let mut routed = BTreeSet::new();
        for topic in ["valid-metrics", "invalid-metrics"] {
            let partitions = inspector.offsets(topic).map_or(0, |offsets| offsets.len());
            for partition in 0..partitions as u32 {
                let records = inspector
                    .read(topic, partition, 0, usize::MAX)
                    .unwrap_or_default();
                for record in records {
                    let value = record.record.value.as_deref().unwrap_or_default();
                    let metric = match topic {
                        "valid-metrics" => decode::<Metric>(value),
                        _ => decode::<InvalidMetric>(value).metric,
                    };
                    routed.insert((metric.sequence, metric.name));
                }
            }
        }
        routed
    };
    while routed().len() < 150 {
        assert!(
            Instant::now() < deadline,
            "the metrics of every reading arrive"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = running.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(running.child.wait().unwrap().success());

    let backend = open(data.path());
    let valid: Vec<Metric> = read_values(&backend, "valid-metrics").await;
    let invalid: Vec<InvalidMetric> = read_values(&backend, "invalid-metrics").await;
    let metrics: BTreeSet<(i64, String)> = valid
        .iter()
        .chain(invalid.iter().map(|i| &i.metric))
        .map(|metric| (metric.sequence, metric.name.clone()))
        .collect();
    for sequence in 0..50 {
        for name in ["power", "rotor-speed", "wind-speed"] {
            assert!(
                metrics.contains(&(sequence, name.to_owned())),
                "metric {name} of reading {sequence} arrived"
            );
        }
    }
    // Every 7th reading has a negative rotor speed (metrics processed before the kill and
    // not committed come again: at-least-once).
    let faulty: BTreeSet<i64> = invalid.iter().map(|i| i.metric.sequence).collect();
    assert_eq!(faulty, (0..50).filter(|s| s % 7 == 6).collect());
}
