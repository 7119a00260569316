use std::time::Duration;

use runnel_backend::TopicSpec;
use runnel_blueprint::parameter::ParameterValue;
use runnel_http::{HttpIngress, Invalid};
use runnel_streamlet::ErrorKind;
use runnel_streamlet::prelude::*;

use crate::support::{Served, TOPIC, post, post_text, until};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Payment {
    card: String,
    amount: f64,
}

const OUT: Outlet<Payment> = Outlet::new("out").json().keyed_by(|p| p.card.clone());

fn positive(payment: &Payment) -> Result<(), Invalid> {
    if payment.amount > 0.0 {
        Ok(())
    } else {
        Err(Invalid::field("amount", "must be positive"))
    }
}

fn ingress() -> HttpIngress<Payment> {
    HttpIngress::new(OUT).validate(positive)
}

fn payment(card: &str, amount: f64) -> String {
    format!(r#"{{"card": "{card}", "amount": {amount}}}"#)
}

async fn serve(streamlet: HttpIngress<Payment>, parameters: &[(&str, ParameterValue)]) -> Served {
    Served::start(streamlet, parameters, TopicSpec::new(TOPIC, 2)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_answered_only_once_its_record_is_durable() {
    let served = serve(ingress(), &[]).await;
    served.backend.acknowledge(false);
    let url = served.url.clone();
    let answer = tokio::spawn(async move { post_text(&url, &payment("c-1", 12.5)).await });
    until("the record is appended", || served.records().len() == 1).await;
    // The log holds the record but has not acknowledged it: no answer can have come.
    assert!(
        !answer.is_finished(),
        "answered before the log acknowledged"
    );
    served.backend.acknowledge(true);
    let answer = answer.await.unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    let record = &served.records()[0];
    assert_eq!(answer.body["accepted"], 1);
    assert_eq!(answer.body["partition"], record.partition);
    assert_eq!(answer.body["offset"], record.offset);
    assert_eq!(record.record.key.as_deref(), Some(&b"c-1"[..]));
    assert_eq!(
        served.written::<Payment>(),
        [Payment {
            card: "c-1".into(),
            amount: 12.5
        }]
    );
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_decode_or_validate_gets_400_naming_the_field_and_writes_nothing() {
    let served = serve(ingress(), &[]).await;
    let wrong_type = post_text(&served.url, r#"{"card": "c-1", "amount": "lots"}"#).await;
    assert_eq!(wrong_type.status, 400);
    assert_eq!(wrong_type.body["field"], "amount");
    assert_eq!(wrong_type.body["accepted"], 0);
    let error = wrong_type.body["error"].as_str().unwrap();
    assert!(
        error.starts_with("field 'amount': invalid type: string \"lots\", expected f64"),
        "{error}"
    );

    let missing = post_text(&served.url, r#"{"amount": 3.0}"#).await;
    assert_eq!(
        (missing.status, &missing.body["field"]),
        (400, &"card".into())
    );

    let not_json = post_text(&served.url, "card=c-1&amount=3").await;
    assert_eq!(not_json.status, 400);
    assert!(not_json.body.get("field").is_none());
    assert!(
        not_json.body["error"]
            .as_str()
            .unwrap()
            .starts_with("the body is not valid JSON")
    );

    let invalid = post_text(&served.url, &payment("c-1", -4.0)).await;
    assert_eq!(invalid.status, 400);
    assert_eq!(invalid.body["field"], "amount");
    assert_eq!(invalid.body["error"], "field 'amount': must be positive");

    assert!(served.records().is_empty(), "nothing was written");
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_gets_413_whether_or_not_it_declares_its_length() {
    // max-body-size is 1 KiB in these tests.
    let served = serve(ingress(), &[]).await;
    let big = payment(&"x".repeat(2_000), 1.0);
    let declared = post_text(&served.url, &big).await;
    assert_eq!(declared.status, 413, "{declared:?}");
    let streamed = post(&served.url, std::io::Cursor::new(big.into_bytes())).await;
    assert_eq!(streamed.status, 413, "{streamed:?}");
    assert!(
        streamed.body["error"]
            .as_str()
            .unwrap()
            .contains("larger than the limit of 1024 bytes")
    );
    assert!(served.records().is_empty());
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_larger_than_its_topic_accepts_gets_413() {
    let topic = TopicSpec::new(TOPIC, 1).with_config("max.message.bytes", "64");
    let served = Served::start(ingress(), &[], topic).await;
    let answer = post_text(&served.url, &payment(&"y".repeat(100), 1.0)).await;
    assert_eq!(answer.status, 413, "{answer:?}");
    assert!(
        answer.body["error"]
            .as_str()
            .unwrap()
            .starts_with("the log refused the record")
    );
    let small = post_text(&served.url, &payment("c-2", 1.0)).await;
    assert_eq!(small.status, 200, "the ingress goes on: {small:?}");
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_ingress_answers_503_with_retry_after_and_holds_no_more_records() {
    let served = serve(ingress(), &[("max-in-flight", ParameterValue::Int(2))]).await;
    served.backend.acknowledge(false);
    let waiting: Vec<_> = (0..2)
        .map(|n| {
            let url = served.url.clone();
            tokio::spawn(async move { post_text(&url, &payment(&format!("c-{n}"), 1.0)).await })
        })
        .collect();
    until("both records are appended", || served.records().len() == 2).await;
    for n in 0..20 {
        let refused = post_text(&served.url, &payment(&format!("d-{n}"), 1.0)).await;
        assert_eq!(refused.status, 503, "{refused:?}");
        assert_eq!(refused.retry_after.as_deref(), Some("2"));
        assert!(
            refused.body["error"]
                .as_str()
                .unwrap()
                .contains("max-in-flight")
        );
    }
    assert_eq!(served.records().len(), 2, "refused requests wrote nothing");
    served.backend.acknowledge(true);
    for answer in waiting {
        assert_eq!(answer.await.unwrap().status, 200);
    }
    let after = post_text(&served.url, &payment("e", 1.0)).await;
    assert_eq!(after.status, 200, "room again once acknowledged");
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_fails_the_streamlet_with_an_external_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let streamlet = ingress();
    let run = runnel_host::testkit::TestRun::new(streamlet)
        .parameter("port", &port.to_string())
        .parameter("bind-address", "127.0.0.1")
        .timeout(Duration::from_secs(10))
        .run()
        .await;
    let error = run.expect_err("the port is taken").to_string();
    assert!(
        error.contains(&format!("could not listen on 127.0.0.1:{port}")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_that_cannot_bind_its_port_never_reports_itself_ready() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (served, readiness) = Served::launch(ingress(), &[], TopicSpec::new(TOPIC, 2), port).await;
    let error = served.outcome().await.expect_err("the port is taken");
    assert_eq!(error.kind(), ErrorKind::External, "{error}");
    assert!(
        readiness.await.is_err(),
        "an ingress that never listened said it was ready"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_answers_the_requests_in_progress() {
    let served = serve(ingress(), &[]).await;
    served.backend.acknowledge(false);
    let url = served.url.clone();
    let answer = tokio::spawn(async move { post_text(&url, &payment("c-9", 2.0)).await });
    until("the record is appended", || served.records().len() == 1).await;
    let backend = served.backend.clone();
    let stopped = tokio::spawn(served.stop());
    backend.acknowledge(true);
    assert_eq!(answer.await.unwrap().status, 200);
    stopped.await.unwrap().unwrap();
}
