//! The webhook's verdicts on the reconcile's three-streamlet app.

use serde_json::{Value, json};

use super::*;
use crate::reconcile::tests::application;

fn context() -> AdmissionContext {
    AdmissionContext {
        operator_version: "0.1.0".to_owned(),
        default_bootstrap_servers: None,
    }
}

/// The verdict on `operation` of `object` (and `old` on updates): allowed, and the message.
fn verdict(operation: &str, object: Value, old: Option<Value>) -> (bool, Option<String>) {
    let asked = AdmissionReview {
        api_version: "admission.k8s.io/v1".to_owned(),
        kind: "AdmissionReview".to_owned(),
        request: Some(AdmissionRequest {
            uid: "uid-1".to_owned(),
            operation: operation.to_owned(),
            object: Some(object),
            old_object: old,
        }),
        response: None,
    };
    let answer = review(asked, &context());
    assert_eq!(answer.api_version, "admission.k8s.io/v1");
    assert_eq!(answer.kind, "AdmissionReview");
    let response = answer.response.unwrap();
    assert_eq!(response.uid, "uid-1");
    let message = response
        .status
        .map(|status| status["message"].as_str().unwrap().to_owned());
    (response.allowed, message)
}

fn good() -> Value {
    serde_json::to_value(application()).unwrap()
}

/// The good app with a blueprint that names an inlet the streamlet does not have.
fn bad() -> Value {
    let mut app = application();
    app.spec.blueprint = app
        .spec
        .blueprint
        .replace("consumers = [\"log.in\"]", "consumers = [\"log.inn\"]");
    serde_json::to_value(app).unwrap()
}

#[test]
fn a_good_application_is_allowed() {
    assert_eq!(verdict("CREATE", good(), None), (true, None));
}

#[test]
fn a_bad_blueprint_is_refused_with_the_verifiers_message() {
    let (allowed, message) = verdict("CREATE", bad(), None);
    assert!(!allowed);
    let message = message.unwrap();
    assert!(
        message.starts_with(
            "application 'demo' cannot run (InvalidBlueprint): the blueprint of application 'demo' has errors:"
        ),
        "{message}"
    );
    assert!(message.contains("log.inn"), "{message}");
    // An update to the bad spec is refused too.
    assert!(!verdict("UPDATE", bad(), Some(good())).0);
}

#[test]
fn bad_configuration_and_another_protocol_are_refused() {
    let mut app = application();
    app.spec.configuration.assign("gen.rate=fast").unwrap();
    let (allowed, message) = verdict("CREATE", serde_json::to_value(&app).unwrap(), None);
    assert!(!allowed);
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("(InvalidConfiguration)") && m.contains("gen.rate")),
        "{message:?}"
    );

    let mut app = application();
    app.spec.protocol_version += 1;
    let (allowed, message) = verdict("CREATE", serde_json::to_value(&app).unwrap(), None);
    assert!(!allowed);
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("(ProtocolMismatch)") && m.contains("upgrade the operator")),
        "{message:?}"
    );
}

#[test]
fn no_kafka_cluster_is_refused_unless_the_operator_has_one() {
    let mut app = application();
    app.spec.kafka.bootstrap_servers = None;
    let object = serde_json::to_value(&app).unwrap();
    let (allowed, message) = verdict("CREATE", object.clone(), None);
    assert!(!allowed);
    assert!(message.unwrap().contains("(NoKafkaCluster)"));
    let with_default = AdmissionContext {
        default_bootstrap_servers: Some("kafka:9092".to_owned()),
        ..context()
    };
    let asked = AdmissionReview {
        request: Some(AdmissionRequest {
            uid: "uid-2".to_owned(),
            operation: "CREATE".to_owned(),
            object: Some(object),
            old_object: None,
        }),
        ..AdmissionReview::default()
    };
    assert!(review(asked, &with_default).response.unwrap().allowed);
}

/// The operator must always be able to finish with an Application, even one stored before
/// the webhook: updates that leave the spec alone and deletions pass.
#[test]
fn updates_that_keep_the_spec_and_deletions_pass() {
    let mut labelled = bad();
    labelled["metadata"]["labels"] = json!({"team": "sensors"});
    assert_eq!(verdict("UPDATE", labelled, Some(bad())), (true, None));
    let mut deleting = bad();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-12-04T12:00:00Z");
    assert_eq!(verdict("UPDATE", deleting, Some(bad())), (true, None));
    assert_eq!(verdict("DELETE", bad(), None), (true, None));
}

#[test]
fn an_object_that_is_no_application_is_refused() {
    let (allowed, message) = verdict("CREATE", json!({"spec": "none"}), None);
    assert!(!allowed);
    assert!(
        message
            .unwrap()
            .starts_with("the object is not an Application runnel can read:")
    );
}
