//! The acceptance run: the app binary with `run`, transactions and models POSTed over HTTP,
//! model v2 published mid-run, invalid models rejected while v1 keeps serving, every score
//! equal to onnxruntime's for its model, every known fraud flagged; then a restart that
//! scores with v2 without being sent a model again.

use std::collections::BTreeMap;
use std::time::Duration;

use fraud_detection::model::{MerchantReport, ScoredTransaction};
use runnel::onnx::ModelEvent;
use runnel::window::Pane;

use crate::support::{
    App, Reference, model_body, post, post_json, post_lines, read_running, scenario, stop,
};
use runnel_app_test::wait_until;

/// Transactions scored with v1 before invalid models arrive, and after.
const BEFORE_INVALID: usize = 150;
const BEFORE_V2: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_swap_mid_run_invalid_ones_are_rejected_and_frauds_are_flagged() {
    let data = tempfile::tempdir().unwrap();
    let reference = Reference::load();
    let transactions = scenario();
    let app = App::start(data.path());

    let answer = post(&app.models, &model_body("1", "lr.onnx"));
    assert_eq!(answer.0, 200, "{answer:?}");
    wait_until(Duration::from_secs(60), "v1 serves", || {
        events(&app).len() == 1
    });
    for transaction in &transactions[..BEFORE_INVALID] {
        let (status, answer) = post_json(&app.transactions, transaction);
        assert_eq!(status, 200, "{answer}");
    }

    // Invalid models: v1 goes on serving.
    let (status, _) = post(
        &app.models,
        &model_body("wrong-input", "five-features.onnx"),
    );
    assert_eq!(status, 200);
    let corrupt = r#"{"name": "fraud", "version": "corrupt", "onnx": "bm90IGEgbW9kZWw=",
                      "input_shape": [-1, 7], "output_shape": [-1, 2]}"#;
    assert_eq!(post(&app.models, corrupt).0, 200);
    wait_until(Duration::from_secs(60), "both are rejected", || {
        events(&app).len() == 3
    });
    for transaction in &transactions[BEFORE_INVALID..BEFORE_V2] {
        assert_eq!(post_json(&app.transactions, transaction).0, 200);
    }
    wait_until(Duration::from_secs(60), "the first part is scored", || {
        scored(&app).len() == BEFORE_V2
    });

    // Model v2 mid-run; the rest arrive as newline-delimited JSON.
    assert_eq!(post(&app.models, &model_body("2", "gbt.onnx")).0, 200);
    wait_until(Duration::from_secs(60), "v2 serves", || {
        events(&app).len() == 4
    });
    let (status, answer) = post_lines(&app.lines, &transactions[BEFORE_V2..]);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["accepted"], transactions.len() - BEFORE_V2);
    wait_until(
        Duration::from_secs(60),
        "every transaction is scored",
        || scored(&app).len() == transactions.len(),
    );
    let reports: Vec<Pane<String, MerchantReport>> = read_running(&app.data, "merchant-reports");
    let events = events(&app);
    stop(app);

    let outcomes: Vec<(&str, bool)> = events
        .iter()
        .map(|event| (event.version.as_str(), event.serving))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("1", true),
            ("wrong-input", false),
            ("corrupt", false),
            ("2", true)
        ]
    );
    assert_eq!(
        events[1].reason,
        "the model's input has shape [?, 5], but the record says [-1, 7]"
    );
    assert!(
        events[2]
            .reason
            .starts_with("the bytes are not an ONNX model")
    );
    assert!(events[1..3].iter().all(|event| event.previous == "fraud@1"));

    let data_dir = data.path();
    let all = scored_in(data_dir);
    assert_eq!(
        all.len(),
        transactions.len(),
        "no transaction was scored twice"
    );
    let by_id: BTreeMap<String, ScoredTransaction> = all
        .into_iter()
        .map(|scored| (scored.transaction.id.clone(), scored))
        .collect();
    assert_eq!(
        by_id.len(),
        transactions.len(),
        "each transaction scored once"
    );
    for (index, id) in reference.ids.iter().enumerate() {
        let scored = &by_id[id];
        let (version, expected) = if index < BEFORE_V2 {
            ("1", &reference.lr[index])
        } else {
            ("2", &reference.gbt[index])
        };
        assert_eq!(scored.model_version, version, "{id}");
        assert_eq!(scored.model, "fraud");
        // Enriched as train.py enriches, scored as onnxruntime scores.
        for (got, want) in scored
            .features
            .values()
            .iter()
            .zip(&reference.features[index])
        {
            assert!(
                (f64::from(*got) - want).abs() <= 1e-6,
                "{id}: feature {got} vs {want}"
            );
        }
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

    // Every report that fired counts what was scored for its merchant and hour.
    assert!(reports.iter().any(|pane| pane.value.flagged > 0));
    for pane in &reports {
        let in_window: Vec<&ScoredTransaction> = by_id
            .values()
            .filter(|s| {
                s.transaction.merchant == pane.key
                    && (pane.window_start..pane.window_end).contains(&s.transaction.timestamp)
            })
            .collect();
        assert_eq!(pane.value.transactions, in_window.len() as i64, "{pane:?}");
        let flagged = in_window.iter().filter(|s| s.flagged).count();
        assert_eq!(pane.value.flagged, flagged as i64, "{pane:?}");
    }

    // A restart serves v2 again without being sent a model.
    let app = App::start(data_dir);
    let mut late = transactions[0].clone();
    late.id = "after-restart".to_owned();
    late.timestamp = transactions.last().unwrap().timestamp + 60_000;
    assert_eq!(post_json(&app.transactions, &late).0, 200);
    wait_until(
        Duration::from_secs(60),
        "the new transaction is scored",
        || {
            scored(&app)
                .iter()
                .any(|s| s.transaction.id == "after-restart")
        },
    );
    let rescored = scored(&app)
        .into_iter()
        .find(|s| s.transaction.id == "after-restart")
        .unwrap();
    stop(app);
    assert_eq!(rescored.model_version, "2");
    assert!(
        read_dead_letters(data_dir).is_empty(),
        "nothing went to the dead-letter topic"
    );
}

fn events(app: &App) -> Vec<ModelEvent> {
    read_running(&app.data, "model-events")
}

fn scored(app: &App) -> Vec<ScoredTransaction> {
    read_running(&app.data, "scored")
}

fn scored_in(data: &std::path::Path) -> Vec<ScoredTransaction> {
    read_running(data, "scored")
}

fn read_dead_letters(data: &std::path::Path) -> Vec<runnel_backend::ConsumedRecord> {
    let inspector = runnel_embedded_log::LogInspector::new(data).unwrap();
    let Ok(Some(topic)) = inspector.topic("fraud-detection.dead-letter") else {
        return Vec::new();
    };
    (0..topic.partitions)
        .flat_map(|partition| {
            inspector
                .read("fraud-detection.dead-letter", partition, 0, usize::MAX)
                .unwrap()
        })
        .collect()
}
