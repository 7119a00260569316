use std::io::Read;

use runnel_backend::TopicSpec;
use runnel_blueprint::parameter::ParameterValue;
use runnel_http::{HttpIngress, Invalid};
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

async fn serve(parameters: &[(&str, ParameterValue)]) -> Served {
    let ingress = HttpIngress::lines(OUT).validate(positive);
    Served::start(ingress, parameters, TopicSpec::new(TOPIC, 3)).await
}

fn lines(count: usize) -> String {
    (1..=count)
        .map(|n| format!("{{\"card\": \"c-{}\", \"amount\": {n}}}\n", n % 5))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_is_written_in_order_and_counted() {
    let served = serve(&[]).await;
    // Blank lines are ignored, CRLF is fine, and the last line needs no newline.
    let body = format!(
        "{}\r\n\n{}",
        lines(500),
        r#"{"card": "c-0", "amount": 501}"#
    );
    // Streamed in small pieces, without a length.
    let answer = post(&served.url, Trickle::new(body.into_bytes(), 37)).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.body, serde_json::json!({"accepted": 501}));
    let written: Vec<Payment> = served.written();
    assert_eq!(written.len(), 501);
    // Per card (per key, so per partition) the amounts arrive in the order posted.
    for card in 0..5 {
        let amounts: Vec<f64> = written
            .iter()
            .filter(|p| p.card == format!("c-{card}"))
            .map(|p| p.amount)
            .collect();
        assert!(
            amounts.windows(2).all(|pair| pair[0] < pair[1]),
            "card {card}: {amounts:?}"
        );
    }
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_stops_the_request_and_the_answer_says_how_many_were_accepted() {
    let served = serve(&[]).await;
    let body = format!(
        "{}{}\n{}",
        lines(3),
        r#"{"card": "c-1", "amount": -2}"#,
        lines(3)
    );
    let answer = post_text(&served.url, &body).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.body["accepted"], 3);
    assert_eq!(answer.body["line"], 4);
    assert_eq!(answer.body["field"], "amount");
    assert_eq!(
        answer.body["error"],
        "line 4: field 'amount': must be positive"
    );
    assert_eq!(served.written::<Payment>().len(), 3);

    let broken = post_text(&served.url, &format!("{}{{\"card\": \n", lines(2))).await;
    assert_eq!(broken.status, 400);
    assert_eq!(
        (
            broken.body["accepted"].as_u64(),
            broken.body["line"].as_u64()
        ),
        (Some(2), Some(3))
    );
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_longer_than_the_limit_gets_413() {
    let served = serve(&[]).await;
    let long = format!(r#"{{"card": "{}", "amount": 1}}"#, "z".repeat(3_000));
    let answer = post(
        &served.url,
        Trickle::new(
            format!("{}{long}\n{}", lines(2), lines(2)).into_bytes(),
            100,
        ),
    )
    .await;
    assert_eq!(answer.status, 413, "{answer:?}");
    assert_eq!(answer.body["accepted"], 2);
    assert_eq!(answer.body["line"], 3);
    served.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_holds_at_most_max_in_flight_records_while_the_log_is_slow() {
    let served = serve(&[("max-in-flight", ParameterValue::Int(4))]).await;
    served.backend.acknowledge(false);
    let url = served.url.clone();
    let streaming = tokio::spawn(async move { post_text(&url, &lines(50)).await });
    until("four records are appended", || served.records().len() == 4).await;
    // The stream waits for its own oldest record: every permit is taken.
    let refused = post_text(&served.url, &lines(1)).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.body["accepted"], 0);
    assert_eq!(refused.retry_after.as_deref(), Some("2"));
    assert_eq!(served.records().len(), 4, "the stream read no further");
    served.backend.acknowledge(true);
    let answer = streaming.await.unwrap();
    assert_eq!(answer.body, serde_json::json!({"accepted": 50}));
    served.stop().await.unwrap();
}

/// A body that arrives a few bytes at a time.
struct Trickle {
    bytes: Vec<u8>,
    at: usize,
    step: usize,
}

impl Trickle {
    fn new(bytes: Vec<u8>, step: usize) -> Self {
        Trickle { bytes, at: 0, step }
    }
}

impl Read for Trickle {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let end = (self.at + self.step)
            .min(self.bytes.len())
            .min(self.at + buffer.len());
        let count = end - self.at;
        buffer[..count].copy_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        Ok(count)
    }
}
