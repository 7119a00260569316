use std::sync::Arc;
use std::time::Duration;

use runnel_app_test::chromium::{attribute_values, rendered};
use runnel_backend::PausableBackend;

use crate::support::{get, serve_on, until_ok};

/// Waits (at most 30 s) until `/api/history` satisfies `condition`.
async fn history_until(address: &str, what: &str, condition: impl Fn(&serde_json::Value) -> bool) {
    for _ in 0..300 {
        let (_, body) = get(address, "/api/history").await;
        let history: serde_json::Value = serde_json::from_str(&body).unwrap();
        if condition(&history) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the history never showed {what}");
}

fn stalled_points(history: &serde_json::Value) -> usize {
    history["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|point| point["streamlets"][0]["stalled"] == true)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_charts_each_streamlet_with_the_outage_marked() {
    let backend = PausableBackend::default();
    let served = serve_on(Arc::new(backend.clone())).await;
    until_ok(&served.address, "/health/ready").await;
    history_until(&served.address, "a few samples", |h| {
        h["points"].as_array().unwrap().len() >= 2
    })
    .await;
    backend.pause();
    history_until(&served.address, "the outage", |h| stalled_points(h) >= 1).await;
    backend.resume();
    until_ok(&served.address, "/health/ready").await;
    history_until(&served.address, "a sample after the outage", |h| {
        let points = h["points"].as_array().unwrap();
        points
            .last()
            .is_some_and(|p| p["streamlets"][0]["stalled"] == false)
            && stalled_points(h) >= 1
    })
    .await;

    let profile = tempfile::tempdir().unwrap();
    let address = served.address.clone();
    let dom = tokio::task::spawn_blocking(move || {
        rendered(profile.path(), &format!("http://{address}/"))
    })
    .await
    .unwrap();
    let mut charts = attribute_values(&dom, "data-chart");
    charts.sort();
    assert_eq!(charts, ["sink", "source"], "a chart per streamlet");
    let counts = |attribute: &str| -> Vec<usize> {
        attribute_values(&dom, attribute)
            .iter()
            .map(|value| value.parse().unwrap())
            .collect()
    };
    assert!(
        counts("data-points").iter().all(|points| *points >= 3),
        "{dom}"
    );
    assert!(
        counts("data-outages").iter().all(|outages| *outages >= 1),
        "the outage is marked: {dom}"
    );
    assert!(dom.contains("class=\"outage\""), "{dom}");
    let lines = attribute_values(&dom, "data-series");
    assert_eq!(lines.iter().filter(|series| *series == "rate").count(), 2);
    served.shutdown.cancel();
}
