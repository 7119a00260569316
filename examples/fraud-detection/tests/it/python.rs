//! The Python variant (`python/blueprint.toml`): the Rust `enrich` feeds `score`, a Python
//! streamlet scoring with scikit-learn itself (`python/fraud_scoring.py`, the pickled model
//! `python/gbt.joblib`). Its worker is killed with -9 mid-run; every transaction of the
//! scenario is scored as scikit-learn scored it in `model/train.py` (onnxruntime's scores
//! within 1e-5), every known fraud is flagged, and the Rust streamlets read its records.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use fraud_detection::model::{MerchantReport, ScoredTransaction};
use runnel::window::Pane;
use runnel_app_test::{kill_python_worker, wait_until};

use crate::support::{
    Reference, post_lines, read_running, scenario, start_blueprint, stop_running,
    wait_until_every_transaction_is_scored,
};

const PYTHON_BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/python/blueprint.toml");

#[test]
fn the_python_scorer_scores_as_scikit_learn_did_through_a_crash() {
    let data = tempfile::tempdir().unwrap();
    let reference = Reference::load();
    let transactions = scenario();
    let ingresses = ["transactions-http", "transactions-lines"];
    let (running, urls) = start_blueprint(Path::new(PYTHON_BLUEPRINT), data.path(), &ingresses);
    let lines = &urls[1];
    let scored = || read_running::<ScoredTransaction>(data.path(), "scored");

    let half = transactions.len() / 2;
    let (status, answer) = post_lines(lines, &transactions[..half]);
    assert_eq!(status, 200, "{answer}");
    wait_until(Duration::from_secs(120), "the first half is scored", || {
        scored().len() >= half
    });
    kill_python_worker(running.child.id(), "fraud_scoring:Score");
    let (status, answer) = post_lines(lines, &transactions[half..]);
    assert_eq!(status, 200, "{answer}");
    wait_until_every_transaction_is_scored(transactions.len(), scored);
    wait_until(Duration::from_secs(60), "the merchant reports fire", || {
        !read_running::<Pane<String, MerchantReport>>(data.path(), "merchant-reports").is_empty()
    });
    let printed = running.printed();
    stop_running(running);

    // At least once: a record may be scored twice across the crash, always alike.
    let expected: BTreeMap<&str, f64> = reference
        .ids
        .iter()
        .map(String::as_str)
        .zip(reference.gbt.iter().map(|scores| scores[1]))
        .collect();
    let all = scored();
    for scored in &all {
        let want = expected[scored.transaction.id.as_str()];
        assert!(
            (scored.fraud_probability - want).abs() <= 1e-5,
            "{}: {} vs {want}",
            scored.transaction.id,
            scored.fraud_probability
        );
        assert_eq!(scored.flagged, scored.fraud_probability >= 0.5);
        assert_eq!(
            (scored.model.as_str(), scored.model_version.as_str()),
            ("fraud", "2")
        );
    }
    let mut flagged: Vec<&str> = all
        .iter()
        .filter(|scored| scored.flagged)
        .map(|scored| scored.transaction.id.as_str())
        .collect();
    flagged.sort_unstable();
    flagged.dedup();
    let mut frauds: Vec<&str> = reference.fraud.iter().map(String::as_str).collect();
    frauds.sort_unstable();
    assert_eq!(flagged, frauds, "every fraud and nothing else is flagged");
    assert!(
        printed.contains("fraud suspected"),
        "the Rust alert logger read the Python scores:\n{printed}"
    );
}
