//! The committed models, loaded by the scorer's code, score the scenario's features as
//! onnxruntime did in `model/train.py`, within 1e-5.

use runnel::onnx::{Model, ModelRecord};

use crate::support::{Reference, model_record, scenario};

fn check(model: &Model, expected: &[Vec<f64>], features: &[Vec<f64>]) {
    let rows: Vec<f32> = features
        .iter()
        .flatten()
        .map(|value| *value as f32)
        .collect();
    // One batch of every record, and each record alone: the same scores.
    let batched = model.score(&rows).unwrap();
    for (index, (row, expected)) in features.iter().zip(expected).enumerate() {
        let single: Vec<f32> = row.iter().map(|value| *value as f32).collect();
        let alone = model.score(&single).unwrap();
        for (column, expected) in expected.iter().enumerate() {
            let got = f64::from(batched[index * 2 + column]);
            assert!(
                (got - expected).abs() <= 1e-5,
                "{}: record {index}, column {column}: {got} vs {expected}",
                model.label()
            );
            assert_eq!(
                alone[column],
                batched[index * 2 + column],
                "batching changes nothing"
            );
        }
    }
}

#[test]
fn both_models_score_the_scenario_as_onnxruntime_did() {
    let reference = Reference::load();
    let lr = Model::load(&model_record("lr.onnx", "1"), 7, 2).unwrap();
    check(&lr, &reference.lr, &reference.features);
    let gbt = Model::load(&model_record("gbt.onnx", "2"), 7, 2).unwrap();
    check(&gbt, &reference.gbt, &reference.features);
}

#[test]
fn a_model_taking_other_features_is_rejected() {
    let mut record: ModelRecord = model_record("five-features.onnx", "x");
    let error = Model::load(&record, 7, 2).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the model's input has shape [?, 5], but the record says [-1, 7]"
    );
    record.input_shape = vec![-1, 5];
    let error = Model::load(&record, 7, 2).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the record's input shape [-1, 5] does not fit")
    );
}

#[test]
fn the_app_enriches_the_scenario_as_train_py_did() {
    let reference = Reference::load();
    let mut cards: std::collections::BTreeMap<String, fraud_detection::history::CardHistory> =
        Default::default();
    for (index, transaction) in scenario().iter().enumerate() {
        assert_eq!(transaction.id, reference.ids[index]);
        let history = cards.entry(transaction.card.clone()).or_default();
        let features = history.features(transaction).values();
        history.update(transaction);
        for (got, want) in features.iter().zip(&reference.features[index]) {
            assert!(
                (f64::from(*got) - want).abs() <= 1e-6,
                "{}: {got} vs {want}",
                transaction.id
            );
        }
    }
}
