use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use runnel_host::testkit::{TestError, TestRun};
use runnel_http::HttpEgress;
use runnel_streamlet::ErrorKind;
use runnel_streamlet::prelude::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Alert {
    card: String,
    score: f64,
}

const IN: Inlet<Alert> = Inlet::new("in");

fn alert(card: &str) -> Alert {
    Alert {
        card: card.to_owned(),
        score: 0.9,
    }
}

/// A target that answers requests with scripted statuses (200 once the script is used
/// up) and remembers every body it was sent.
#[derive(Clone, Default)]
struct Target {
    script: Arc<Mutex<VecDeque<u16>>>,
    received: Arc<Mutex<Vec<(u16, Alert)>>>,
}

impl Target {
    async fn start(script: impl IntoIterator<Item = u16>) -> (Target, String) {
        let target = Target::default();
        target.script.lock().unwrap().extend(script);
        let router = Router::new()
            .route("/alerts", post(answer))
            .with_state(target.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/alerts", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        (target, url)
    }

    fn received(&self) -> Vec<(u16, Alert)> {
        self.received.lock().unwrap().clone()
    }
}

async fn answer(State(target): State<Target>, body: axum::Json<Alert>) -> (StatusCode, String) {
    let status = target.script.lock().unwrap().pop_front().unwrap_or(200);
    target.received.lock().unwrap().push((status, body.0));
    let text = if status == 422 { "unknown card" } else { "" };
    (StatusCode::from_u16(status).unwrap(), text.to_owned())
}

fn egress(url: &str) -> TestRun {
    TestRun::new(HttpEgress::new(IN))
        .parameter("url", url)
        .parameter("retry-backoff", "10ms")
        .parameter("max-retries", "3")
        .timeout(Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_is_posted_in_order_as_json() {
    let (target, url) = Target::start([]).await;
    let alerts: Vec<Alert> = (0..20).map(|n| alert(&format!("c-{n}"))).collect();
    let run = egress(&url).input(IN, alerts.clone()).run().await.unwrap();
    let received: Vec<Alert> = target.received().into_iter().map(|(_, a)| a).collect();
    assert_eq!(received, alerts);
    assert!(run.dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_that_may_pass_are_retried_until_the_target_takes_the_record() {
    let (target, url) = Target::start([503, 500, 429]).await;
    let run = egress(&url)
        .input(IN, [alert("a"), alert("b")])
        .run()
        .await
        .unwrap();
    let statuses: Vec<(u16, String)> = target
        .received()
        .into_iter()
        .map(|(status, alert)| (status, alert.card))
        .collect();
    assert_eq!(
        statuses,
        [
            (503, "a".to_owned()),
            (500, "a".to_owned()),
            (429, "a".to_owned()),
            (200, "a".to_owned()),
            (200, "b".to_owned())
        ]
    );
    assert!(run.dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_target_refuses_goes_to_the_dead_letter_topic_and_the_rest_go_on() {
    let (target, url) = Target::start([200, 422]).await;
    let run = egress(&url)
        .input(IN, [alert("a"), alert("b"), alert("c")])
        .run()
        .await
        .unwrap();
    assert_eq!(target.received().len(), 3, "a refusal is not retried");
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let rejected: Alert = apache_avro::from_avro_datum(
        &Alert::get_schema(),
        &mut dead[0].record.value.as_deref().unwrap(),
        None,
    )
    .map(|value| apache_avro::from_value(&value).unwrap())
    .unwrap();
    assert_eq!(rejected.card, "b");
    let reason = dead[0]
        .record
        .headers
        .iter()
        .map(|header| String::from_utf8_lossy(&header.value).into_owned())
        .find(|value| value.contains("answered 422"))
        .expect("a header gives the reason");
    assert!(reason.contains("unknown card"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_stays_down_fails_the_egress_with_an_external_error() {
    let (target, url) = Target::start([503; 10]).await;
    let failed = egress(&url)
        .input(IN, [alert("a")])
        .run()
        .await
        .unwrap_err();
    match failed {
        TestError::Streamlet { kind, message } => {
            assert_eq!(kind, ErrorKind::External);
            assert!(
                message.contains("failed 4 times in a row; the last time: the target answered 503"),
                "{message}"
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(
        target.received().len(),
        4,
        "the first attempt and three retries"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_that_is_not_http_is_refused_at_start() {
    let failed = egress("ftp://example.com/x")
        .input(IN, [alert("a")])
        .run()
        .await
        .unwrap_err();
    assert!(
        failed
            .to_string()
            .contains("url 'ftp://example.com/x' is not an http:// URL"),
        "{failed}"
    );
}
