use std::sync::Arc;

use runnel_runtime::{InstanceSnapshot, InstanceState, Metric, Problem, Snapshot};

use crate::support::{get, serve, status_until, until_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_metrics_status_and_the_page() {
    let served = serve().await;
    let address = &served.address;

    assert_eq!(
        get(address, "/health/live").await,
        (200, "live\n".to_owned())
    );
    assert_eq!(until_ok(address, "/health/ready").await, "ready\n");

    // The sampler has seen records flow, and measured a rate.
    let status: Snapshot = status_until(address, "records flowing", |status| {
        status.streamlets.len() == 2 && status.streamlets[0].rate_out > 0.0
    })
    .await;
    assert_eq!(status.app, "clock");
    assert!(status.ready);
    let names: Vec<&str> = status.streamlets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["source", "sink"]);
    assert!(
        status
            .streamlets
            .iter()
            .all(|s| s.state == InstanceState::Running)
    );
    assert!(status.streamlets[0].records_out > 0);
    let topic = &status.topics[0];
    assert_eq!((topic.name.as_str(), topic.partitions.len()), ("ticks", 2));
    assert_eq!(topic.producers, ["source.out"]);
    assert_eq!(topic.consumers, ["sink.in"]);

    let (code, metrics) = get(address, "/metrics").await;
    assert_eq!(code, 200);
    for metric in Metric::ALL {
        assert!(
            metrics.contains(&format!("# TYPE {} {}\n", metric.name(), metric.kind())),
            "{}",
            metric.name()
        );
    }
    let records_out = metrics
        .lines()
        .find(|line| {
            line.starts_with(
                "runnel_records_out_total{streamlet=\"source\",outlet=\"out\",topic=\"ticks\"}",
            )
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse::<u64>().ok())
        .expect("a records-out sample for the source");
    assert!(records_out > 0);
    assert!(metrics.contains("runnel_streamlet_state{streamlet=\"sink\",state=\"running\"} 1\n"));
    assert!(
        metrics
            .contains("runnel_processing_latency_seconds_bucket{streamlet=\"sink\",le=\"+Inf\"}")
    );
    assert!(metrics.contains("runnel_consumer_lag_records{streamlet=\"sink\",inlet=\"in\",topic=\"ticks\",partition=\"1\"}"));

    let watermark_lag = metrics
        .lines()
        .find(|line| line.starts_with("runnel_watermark_lag_seconds{streamlet=\"source\"}"))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse::<f64>().ok())
        .expect("the source reports a watermark");
    assert!(
        (0.9..60.0).contains(&watermark_lag),
        "watermark lag {watermark_lag}"
    );
    assert!(
        !metrics.contains("runnel_watermark_seconds{streamlet=\"sink\"}"),
        "the sink has none"
    );
    assert!(status.streamlets[0].watermark.is_some() && status.streamlets[1].watermark.is_none());

    let (code, page) = get(address, "/").await;
    assert_eq!(code, 200);
    assert!(page.contains("<script src=\"/app.js\">"));
    let (code, script) = get(address, "/app.js").await;
    assert_eq!(code, 200);
    assert!(
        script.contains("/api/status"),
        "the page reads the status API"
    );
    assert_eq!(get(address, "/app.css").await.0, 200);
    assert_eq!(get(address, "/no-such-page").await.0, 404);

    served.shutdown.cancel();
    served.running.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_is_503_until_every_streamlet_has_connected() {
    // A board whose instances never started: nothing marks it ready.
    let (_board, address, shutdown) = served_board("idle").await;
    assert_eq!(
        get(&address, "/health/ready").await,
        (503, "not ready\nstreamlets are still starting\n".to_owned())
    );
    assert_eq!(get(&address, "/health/live").await.0, 200);
    let (_, metrics) = get(&address, "/metrics").await;
    assert!(metrics.contains("\nrunnel_ready 0\n"));
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_fails_once_an_inlet_is_stuck_without_partitions_past_the_bound() {
    let (board, address, shutdown) = served_board("stuck").await;
    let unassigned_for = |for_seconds| {
        let mut instance: InstanceSnapshot = serde_json::from_value(serde_json::json!({
            "name": "count", "type": "counter", "state": "stalled", "restarts": 0,
            "records_in": 0, "records_out": 0, "rate_in": 0.0, "rate_out": 0.0, "lag": 9,
            "dead_lettered": 0, "last_error": null, "inlets": [], "outlets": []
        }))
        .unwrap();
        instance.problems = vec![
            Problem::BackplaneUnreachable {
                error: "timed out".to_owned(),
                for_seconds: 3_600,
            },
            Problem::NoPartitionsAssigned {
                inlet: "in".to_owned(),
                topic: "words".to_owned(),
                partitions: 2,
                for_seconds,
            },
        ];
        Snapshot {
            app: "stuck".to_owned(),
            streamlets: vec![instance],
            ..Snapshot::default()
        }
    };
    let bound = runnel_runtime::STUCK_WITHOUT_PARTITIONS.as_secs();

    // Not ready at once, but live until the bound: an outage is not fixed by a restart.
    board.publish(unassigned_for(bound - 1));
    assert_eq!(
        get(&address, "/health/live").await,
        (200, "live\n".to_owned())
    );
    assert_eq!(get(&address, "/health/ready").await.0, 503);

    board.publish(unassigned_for(bound));
    assert_eq!(
        get(&address, "/health/live").await,
        (
            503,
            format!(
                "not live\ncount: inlet 'in' has held none of the 2 partitions of topic 'words' for {bound} s while records on some wait uncommitted\n"
            )
        )
    );
    shutdown.cancel();
}

/// A board with no instances for `app`, served on a free port: the board, the address and
/// what stops the server.
async fn served_board(
    app: &str,
) -> (
    Arc<runnel_runtime::StatusBoard>,
    String,
    tokio_util::sync::CancellationToken,
) {
    let backend = Arc::new(runnel_backend::MemoryBackend::new());
    let board = Arc::new(runnel_runtime::StatusBoard::new(
        app,
        Vec::new(),
        Vec::new(),
        backend,
    ));
    let listener = runnel_web::bind("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(runnel_web::serve(listener, board.clone(), shutdown.clone()));
    (board, address, shutdown)
}
