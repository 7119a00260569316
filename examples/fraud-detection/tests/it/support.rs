//! Running the app binary on free ports, talking to its ingresses, reading its topics
//! while it runs, and the committed model files with their reference scores.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fraud_detection::model::Transaction;
use runnel::Data;
use runnel::onnx::ModelRecord;
use runnel::serde::Serialize;
use runnel::serde_json;
use runnel_app_test::{Running, decode};
use runnel_embedded_log::LogInspector;

pub(crate) const MODEL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/model");
pub(crate) const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// `model/reference.json`, written by `model/train.py`: the scenario's ids, features, the
/// scores of both models from onnxruntime, and the ids of its frauds.
#[runnel::serializable]
#[derive(Debug)]
pub(crate) struct Reference {
    pub(crate) ids: Vec<String>,
    pub(crate) features: Vec<Vec<f64>>,
    pub(crate) lr: Vec<Vec<f64>>,
    pub(crate) gbt: Vec<Vec<f64>>,
    pub(crate) fraud: Vec<String>,
}

impl Reference {
    pub(crate) fn load() -> Reference {
        let text = std::fs::read_to_string(format!("{MODEL_DIR}/reference.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// `model/scenario.jsonl`: the fixed input set, in time order.
pub(crate) fn scenario() -> Vec<Transaction> {
    std::fs::read_to_string(format!("{MODEL_DIR}/scenario.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// `count` transactions for a backlog: the scenario's, repeated, each id made unique.
pub(crate) fn backlog(count: usize) -> Vec<Transaction> {
    scenario()
        .into_iter()
        .cycle()
        .take(count)
        .enumerate()
        .map(|(number, mut transaction)| {
            transaction.id = format!("{}-{number}", transaction.id);
            transaction
        })
        .collect()
}

/// How many records `topic` holds in the log, over its partitions.
pub(crate) fn records_in(inspector: &LogInspector, topic: &str) -> u64 {
    inspector
        .offsets(topic)
        .unwrap_or_default()
        .iter()
        .map(|partition| partition.end - partition.start)
        .sum()
}

/// The input offsets the score streamlet has committed, over its partitions.
pub(crate) fn committed_by_scorer(inspector: &LogInspector) -> u64 {
    inspector
        .committed("fraud-detection.score.in", "enriched")
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .sum()
}

/// A model record of a committed model file.
pub(crate) fn model_record(file: &str, version: &str) -> ModelRecord {
    ModelRecord {
        name: "fraud".to_owned(),
        version: version.to_owned(),
        onnx: std::fs::read(format!("{MODEL_DIR}/{file}")).unwrap().into(),
        input_shape: vec![-1, 7],
        output_shape: vec![-1, 2],
    }
}

/// The JSON a model ingress takes for a committed model file.
pub(crate) fn model_body(version: &str, file: &str) -> String {
    serde_json::to_string(&model_record(file, version)).unwrap()
}

/// The app running with `run` on free ports of 127.0.0.1, without the generator.
pub(crate) struct App {
    pub(crate) running: Running,
    pub(crate) data: PathBuf,
    /// The JSON transaction ingress.
    pub(crate) transactions: String,
    /// The newline-delimited transaction ingress.
    pub(crate) lines: String,
    /// The model ingress.
    pub(crate) models: String,
}

impl App {
    pub(crate) fn start(data: &Path) -> App {
        let ingresses = ["transactions-http", "transactions-lines", "model-ingress"];
        let (running, urls) = start_blueprint(Path::new(BLUEPRINT), data, &ingresses);
        let [transactions, lines, models] = urls.try_into().unwrap();
        App {
            running,
            data: data.to_owned(),
            transactions,
            lines,
            models,
        }
    }
}

/// The app binary running `blueprint` with `run` on `data`, without the generator, its
/// `ingresses` on free ports of 127.0.0.1; their URLs, in the order given.
pub(crate) fn start_blueprint(
    blueprint: &Path,
    data: &Path,
    ingresses: &[&str],
) -> (Running, Vec<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fraud-detection"));
    command
        .arg("run")
        .arg(blueprint)
        .arg("--data-dir")
        .arg(data)
        .args(["--view", "plain", "--status-every", "5s"])
        .args(["--set", "generator.records-per-second=0"])
        .env("RUST_LOG", "info");
    for instance in ingresses {
        command.args(["--set", &format!("{instance}.port=0")]);
        command.args(["--set", &format!("{instance}.bind-address=127.0.0.1")]);
    }
    let running = Running::start(command);
    let mut urls = vec![None; ingresses.len()];
    while urls.iter().any(Option::is_none) {
        let line = running.wait_for("listening on", Duration::from_secs(60));
        let address = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap();
        let instance = ingresses
            .iter()
            .position(|instance| line.contains(&format!("name={instance}}}")))
            .unwrap_or_else(|| panic!("which ingress logged {line}?"));
        urls[instance] = Some(format!("http://{address}/"));
    }
    (running, urls.into_iter().map(Option::unwrap).collect())
}

/// Stops the app with SIGTERM and checks that it drained and exited 0.
pub(crate) fn stop(app: App) {
    stop_running(app.running);
}

/// Stops the app `running` with SIGTERM and checks that it drained and exited 0.
pub(crate) fn stop_running(mut running: Running) {
    let pid = running.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = running.child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// POSTs `body`; returns the status and the answer as JSON.
pub(crate) fn post(url: &str, body: &str) -> (u16, serde_json::Value) {
    let mut response = agent().post(url).send(body).expect("the ingress answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

/// POSTs `value` as JSON.
pub(crate) fn post_json(url: &str, value: &impl Serialize) -> (u16, serde_json::Value) {
    post(url, &serde_json::to_string(value).unwrap())
}

/// POSTs `values` as newline-delimited JSON.
pub(crate) fn post_lines(url: &str, values: &[impl Serialize]) -> (u16, serde_json::Value) {
    let body: String = values
        .iter()
        .map(|value| serde_json::to_string(value).unwrap() + "\n")
        .collect();
    post(url, &body)
}

/// Every value of `topic` of the embedded log in `data`, read while the app may run.
pub(crate) fn read_running<T: Data>(data: &Path, topic: &str) -> Vec<T> {
    let inspector = LogInspector::new(data).unwrap();
    let Ok(Some(description)) = inspector.topic(topic) else {
        return Vec::new();
    };
    (0..description.partitions)
        .flat_map(|partition| inspector.read(topic, partition, 0, usize::MAX).unwrap())
        .map(|record| decode(record.record.value.as_deref().expect("a non-null value")))
        .collect()
}

/// Waits (up to two minutes) until `scored` holds every one of `transactions` distinct
/// transactions, some perhaps more than once.
pub(crate) fn wait_until_every_transaction_is_scored(
    transactions: usize,
    scored: impl Fn() -> Vec<fraud_detection::model::ScoredTransaction>,
) {
    runnel_app_test::wait_until(
        Duration::from_secs(120),
        "every transaction is scored",
        || {
            let ids: std::collections::BTreeSet<String> =
                scored().into_iter().map(|s| s.transaction.id).collect();
            ids.len() == transactions
        },
    );
}
