use std::time::Duration;

use runnel_blueprint::parameter::ParameterValue;

use crate::fixtures::{linear, logarithm, record, two_outputs};
use crate::support::{Log, expected, points, until};

const V1: ([[f32; 2]; 2], [f32; 2]) = ([[1.0, -1.0], [0.5, 2.0]], [0.1, -0.1]);
const V2: ([[f32; 2]; 2], [f32; 2]) = ([[-3.0, 3.0], [2.0, -2.0]], [0.0, 0.5]);

fn v1() -> Vec<u8> {
    linear(&V1.0, V1.1)
}

fn v2() -> Vec<u8> {
    linear(&V2.0, V2.1)
}

fn assert_scored_by(
    log: &Log,
    ids: std::ops::Range<i64>,
    model: &str,
    weights: ([[f32; 2]; 2], [f32; 2]),
) {
    let scored = log.scored();
    for point in points(ids) {
        let got = scored
            .iter()
            .find(|scored| scored.id == point.id)
            .unwrap_or_else(|| panic!("point {} was scored", point.id));
        assert_eq!(got.model, model, "point {}", point.id);
        let want = expected(&point, &weights.0, weights.1);
        for (got, want) in got.values.iter().zip(want) {
            assert!(
                (got - want).abs() < 1e-6,
                "point {}: {got} vs {want}",
                point.id
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_record_is_scored_by_the_serving_model_and_carries_its_name_and_version() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_points(points(0..200)).await;
    log.end_inputs();
    log.start(&[]).finished().await;
    assert_eq!(log.scored().len(), 200);
    assert_scored_by(&log, 0..200, "points@1", V1);
    let events = log.events();
    assert_eq!(events.len(), 1);
    assert!(events[0].serving && events[0].reason.is_empty() && events[0].load_millis > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_wait_for_the_first_model() {
    let log = Log::new().await;
    log.publish_points(points(0..20)).await;
    let run = log.start(&[]);
    // Nothing is scored (or rejected) without a model; the model then scores them all.
    log.publish_model(&record("1", v1())).await;
    until("every point is scored", || log.scored().len() == 20).await;
    run.stop().await;
    assert_scored_by(&log, 0..20, "points@1", V1);
    assert!(log.records("dead-letters").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_model_is_swapped_in_between_records() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_points(points(0..50)).await;
    let run = log.start(&[("batch-size", ParameterValue::Int(8))]);
    until("the first points are scored", || log.scored().len() == 50).await;
    log.publish_model(&record("2", v2())).await;
    until("version 2 serves", || log.events().len() == 2).await;
    log.publish_points(points(50..100)).await;
    until("every point is scored", || log.scored().len() == 100).await;
    run.stop().await;
    assert_scored_by(&log, 0..50, "points@1", V1);
    assert_scored_by(&log, 50..100, "points@2", V2);
    let event = &log.events()[1];
    assert_eq!((event.version.as_str(), event.serving), ("2", true));
    assert_eq!(event.previous, "points@1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_models_are_rejected_with_the_reason_and_the_previous_one_goes_on_serving() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_model(&record("corrupt", b"these are not ONNX bytes".to_vec()))
        .await;
    let mut three_features = record(
        "wide",
        linear(&[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0.0, 0.0]),
    );
    log.publish_model(&three_features).await;
    three_features.version = "claims-three".to_owned();
    three_features.input_shape = vec![-1, 3];
    log.publish_model(&three_features).await;
    log.publish_model(&record("infinite", logarithm(2))).await;
    let mut narrow = record("narrow", v2());
    narrow.output_shape = vec![-1, 3];
    log.publish_model(&narrow).await;
    let run = log.start(&[]);
    until("every model is handled", || log.events().len() == 6).await;
    log.publish_points(points(0..30)).await;
    until("every point is scored", || log.scored().len() == 30).await;
    let details = run.details();
    run.stop().await;

    assert_scored_by(&log, 0..30, "points@1", V1);
    assert_eq!(details["model"], "points@1");
    assert_eq!(details["models rejected"], "5");
    assert!(
        details["last rejected model"]
            .starts_with("points@narrow: the record's output shape [-1, 3] does not fit"),
        "{details:?}"
    );
    let events = log.events();
    let outcomes: Vec<(&str, bool)> = events
        .iter()
        .map(|event| (event.version.as_str(), event.serving))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("1", true),
            ("corrupt", false),
            ("wide", false),
            ("claims-three", false),
            ("infinite", false),
            ("narrow", false)
        ]
    );
    let reasons: Vec<&str> = events[1..]
        .iter()
        .map(|event| event.reason.as_str())
        .collect();
    assert!(
        reasons[0].starts_with("the bytes are not an ONNX model the scorer can run"),
        "{}",
        reasons[0]
    );
    assert_eq!(
        reasons[1],
        "the model's input has shape [?, 3], but the record says [-1, 2]"
    );
    assert!(
        reasons[2].starts_with(
            "the record's input shape [-1, 3] does not fit the scorer, which feeds 2 features"
        ),
        "{}",
        reasons[2]
    );
    assert_eq!(
        reasons[3],
        "the model failed on a probe input: it scored a probe input of zeros to -inf"
    );
    assert!(
        reasons[4].starts_with("the record's output shape [-1, 3] does not fit"),
        "{}",
        reasons[4]
    );
    assert!(events[1..].iter().all(|event| event.previous == "points@1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_of_another_name_or_older_versions_are_rejected_and_counted() {
    let log = Log::new().await;
    log.publish_model(&record("1.9", v1())).await;
    let mut other = record("2", v2());
    other.name = "spam".to_owned();
    log.publish_model(&other).await;
    log.publish_model(&record("1.10", v2())).await;
    log.publish_model(&record("1.2", v1())).await;
    log.publish_model(&record("2024-06-01", v1())).await;
    let run = log.start(&[("refuse-older-versions", ParameterValue::Bool(true))]);
    until("every model is handled", || log.events().len() == 5).await;
    log.publish_points(points(0..10)).await;
    until("every point is scored", || log.scored().len() == 10).await;
    let models = run.metrics().models().clone();
    run.stop().await;

    assert_scored_by(&log, 0..10, "points@1.10", V2);
    let events = log.events();
    let reasons: Vec<(&str, bool, &str)> = events
        .iter()
        .map(|event| (event.version.as_str(), event.serving, event.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("1.9", true, ""),
            (
                "2",
                false,
                "the model is named 'spam', but this scorer serves 'points'"
            ),
            ("1.10", true, ""),
            (
                "1.2",
                false,
                "version 1.2 is older than 1.10, which serves now, and this scorer refuses older versions"
            ),
            (
                "2024-06-01",
                false,
                "version '2024-06-01' is not dotted numbers (such as 2 or 1.10.3), so it cannot be ordered, and this scorer refuses older versions"
            ),
        ]
    );
    assert_eq!(
        models.serving_model(),
        Some(("points".to_owned(), "1.10".to_owned()))
    );
    assert_eq!((models.loaded_count(), models.rejected_count()), (2, 3));
    assert!(models.scoring_time().count() >= 1);

    // Given a name, the scorer refuses other names even as its first model.
    let log = Log::new().await;
    log.publish_model(&other).await;
    log.publish_model(&record("1", v1())).await;
    let run = log.start(&[("model-name", ParameterValue::String("points".into()))]);
    until("both models are handled", || log.events().len() == 2).await;
    run.stop().await;
    let serving: Vec<(String, bool)> = log
        .events()
        .into_iter()
        .map(|event| (event.name, event.serving))
        .collect();
    assert_eq!(serving, [("spam".into(), false), ("points".into(), true)]);
}

#[test]
fn the_first_float_output_of_the_right_shape_is_scored_with() {
    let mut model = record("1", two_outputs());
    model.input_shape = vec![-1, 3];
    let loaded = runnel_onnx::Model::load(&model, 3, 2).unwrap();
    let scores = loaded.score(&[1.0, 0.0, 0.0]).unwrap();
    let (first, second) = (1.0_f32.exp(), (-1.0_f32).exp());
    assert!(
        (scores[0] - first / (first + second)).abs() < 1e-6,
        "{scores:?}"
    );
    let four = runnel_onnx::ModelRecord {
        output_shape: vec![-1, 4],
        ..model
    };
    let error = runnel_onnx::Model::load(&four, 3, 4).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no float output of the model has shape [-1, 4]; its outputs: echo F32 [?, 3], probabilities F32 [?, 2]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_model_survives_a_restart() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_model(&record("2", v2())).await;
    log.publish_model(&record("broken", b"nope".to_vec())).await;
    log.publish_points(points(0..10)).await;
    let run = log.start(&[]);
    until("the points are scored", || log.scored().len() == 10).await;
    until("every model is handled", || log.events().len() == 3).await;
    run.stop().await;

    // The second run gets no new model, yet scores with version 2 at once.
    log.publish_points(points(10..20)).await;
    let run = log.start(&[]);
    until("the new points are scored", || log.scored().len() == 20).await;
    until("every model is handled again", || log.events().len() == 5).await;
    run.stop().await;
    assert_scored_by(&log, 10..20, "points@2", V2);
    let versions: Vec<(String, bool)> = log
        .events()
        .into_iter()
        .map(|event| (event.version, event.serving))
        .collect();
    assert_eq!(
        versions,
        [
            ("1".to_owned(), true),
            ("2".to_owned(), true),
            ("broken".to_owned(), false),
            // The restart: the serving model first, then the one rejected after it, again.
            ("2".to_owned(), true),
            ("broken".to_owned(), false),
        ]
    );
}

/// A backlog that takes seconds to score is committed batch by batch as it goes, so the
/// lag moves and a crash scores again only what was not committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_backlog_is_committed_as_it_is_scored() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_points(points(0..3_000)).await;
    // 3,000 records at 1 ms each: three seconds of scoring without a pause.
    let run = log.start_scoring(&[], Duration::from_millis(1));
    let mut seen = Vec::new();
    while log.scored().len() < 2_000 {
        seen.push((log.scored().len(), log.committed_points().await));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let committed = log.committed_points().await;
    run.stop().await;
    assert!(
        committed >= 1_000,
        "2,000 records were scored, yet only {committed} committed; (scored, committed) every 100 ms: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_nothing_can_score_are_rejected() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    let mut odd = points(10..16);
    odd[3].id = -1; // one feature only
    log.publish_points(odd).await;
    log.end_inputs();
    log.start(&[]).finished().await;
    assert_eq!(log.scored().len(), 5);
    let dead = log.records("dead-letters");
    assert_eq!(dead.len(), 1);
    let reasons: Vec<String> = dead[0]
        .record
        .headers
        .iter()
        .map(|header| String::from_utf8_lossy(&header.value).into_owned())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("it has 1 features; the model takes 2")),
        "{reasons:?}"
    );

    // Without any valid model, the records are rejected once the models input ends.
    let log = Log::new().await;
    log.publish_model(&record("bad", b"nope".to_vec())).await;
    log.publish_points(points(0..4)).await;
    log.end_inputs();
    log.start(&[]).finished().await;
    assert!(log.scored().is_empty());
    assert_eq!(log.records("dead-letters").len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batching_with_a_linger_scores_the_same() {
    let log = Log::new().await;
    log.publish_model(&record("1", v1())).await;
    log.publish_points(points(0..300)).await;
    log.end_inputs();
    log.start(&[
        ("batch-size", ParameterValue::Int(32)),
        (
            "batch-linger",
            ParameterValue::Duration(std::time::Duration::from_millis(5)),
        ),
    ])
    .finished()
    .await;
    assert_eq!(log.scored().len(), 300);
    assert_scored_by(&log, 0..300, "points@1", V1);
}
