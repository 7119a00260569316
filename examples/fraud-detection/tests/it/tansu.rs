//! The acceptance run again on a Kafka-protocol broker (tansu, started by the test), with
//! one process per streamlet (`run-streamlet`, as Kubernetes runs them): model v2 swapped in
//! mid-run, an invalid model rejected while v1 serves, scores equal to onnxruntime's, every
//! known fraud flagged.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use fraud_detection::model::ScoredTransaction;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel::Data;
use runnel::onnx::ModelEvent;
use runnel_app_test::{Running, decode};
use runnel_kafka::test_broker::Tansu;

use crate::support::{
    BLUEPRINT, Reference, model_body, post, post_json, post_lines, scenario,
    wait_until_every_transaction_is_scored,
};
use runnel_app_test::wait_until;

/// Every instance of the blueprint; the first three serve HTTP.
const INSTANCES: [&str; 10] = [
    "transactions-http",
    "transactions-lines",
    "model-ingress",
    "generator",
    "enrich",
    "score",
    "merchant-report",
    "alert-logger",
    "report-logger",
    "model-logger",
];

const BEFORE_V2: usize = 150;

/// `run-streamlet INSTANCE` on `broker`.
fn streamlet(broker: &Tansu, instance: &str) -> Running {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fraud-detection"));
    command
        .args(["run-streamlet", instance, BLUEPRINT])
        .args(broker.app_arguments())
        .args(["--view", "plain", "--status-every", "5s", "--admin", "off"])
        .args(["--set", "generator.records-per-second=0"])
        .env("RUST_LOG", "info");
    if INSTANCES[..3].contains(&instance) {
        command.args(["--set", &format!("{instance}.port=0")]);
        command.args(["--set", &format!("{instance}.bind-address=127.0.0.1")]);
    }
    Running::start(command)
}

/// The URL an ingress process listens on.
fn url(process: &Running) -> String {
    let line = process.wait_for("listening on", Duration::from_secs(120));
    let address = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap();
    format!("http://{address}/")
}

/// Every value of `topic` so far, read from the start with a plain Kafka consumer.
fn read<T: Data>(broker: &Tansu, topic: &str) -> Vec<T> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap_servers())
        .set("group.id", format!("plain-reader-{topic}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let Ok(metadata) = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
        return Vec::new();
    };
    let partitions = metadata.topics()[0].partitions().len();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions as i32 {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let (mut values, mut ended) = (Vec::new(), 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while ended < partitions && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => values.push(decode(message.payload().unwrap_or_default())),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => ended += 1,
            _ => {}
        }
    }
    values
}

#[test]
fn on_kafka_with_one_process_per_streamlet_models_swap_and_frauds_are_flagged() {
    let broker = Tansu::start();
    let reference = Reference::load();
    let transactions = scenario();
    let processes: Vec<Running> = INSTANCES
        .iter()
        .map(|instance| streamlet(&broker, instance))
        .collect();
    let (json, lines, models) = (url(&processes[0]), url(&processes[1]), url(&processes[2]));
    let events = || read::<ModelEvent>(&broker, "model-events");
    let scored = || read::<ScoredTransaction>(&broker, "scored");

    assert_eq!(post(&models, &model_body("1", "lr.onnx")).0, 200);
    wait_until(Duration::from_secs(120), "v1 serves", || {
        events().len() == 1
    });
    assert_eq!(
        post(&models, &model_body("wrong-input", "five-features.onnx")).0,
        200
    );
    wait_until(
        Duration::from_secs(120),
        "the invalid model is rejected",
        || events().len() == 2,
    );
    for transaction in &transactions[..BEFORE_V2] {
        let (status, answer) = post_json(&json, transaction);
        assert_eq!(status, 200, "{answer}");
    }
    wait_until(Duration::from_secs(120), "the first part is scored", || {
        scored().len() >= BEFORE_V2
    });
    assert_eq!(post(&models, &model_body("2", "gbt.onnx")).0, 200);
    wait_until(Duration::from_secs(120), "v2 serves", || {
        events().len() == 3
    });
    let (status, answer) = post_lines(&lines, &transactions[BEFORE_V2..]);
    assert_eq!(status, 200, "{answer}");
    wait_until_every_transaction_is_scored(transactions.len(), scored);
    drop(processes); // kills every process

    let events = events();
    let outcomes: Vec<(&str, bool)> = events
        .iter()
        .map(|event| (event.version.as_str(), event.serving))
        .collect();
    assert_eq!(outcomes, [("1", true), ("wrong-input", false), ("2", true)]);
    let by_id: BTreeMap<String, ScoredTransaction> = scored()
        .into_iter()
        .map(|scored| (scored.transaction.id.clone(), scored))
        .collect();
    for (index, id) in reference.ids.iter().enumerate() {
        let scored = &by_id[id];
        let (version, expected) = if index < BEFORE_V2 {
            ("1", &reference.lr[index])
        } else {
            ("2", &reference.gbt[index])
        };
        assert_eq!(scored.model_version, version, "{id}");
        assert!(
            (scored.fraud_probability - expected[1]).abs() <= 1e-5,
            "{id}: {} vs {}",
            scored.fraud_probability,
            expected[1]
        );
    }
    for id in &reference.fraud {
        assert!(by_id[id].flagged, "known fraud {id} was flagged");
    }
}
