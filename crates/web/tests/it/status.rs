use runnel_status::{StatusFormat, fetch_status, format_status, status_url};

use crate::support::{serve, status_until, until_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reads_a_running_app_and_prints_table_json_and_yaml() {
    let served = serve().await;
    until_ok(&served.address, "/health/ready").await;
    status_until(&served.address, "a sample with a rate", |status| {
        status.streamlets.first().is_some_and(|s| s.rate_out > 0.0)
    })
    .await;
    let url = status_url(&served.address);
    let snapshot = tokio::task::spawn_blocking(move || fetch_status(&url))
        .await
        .unwrap()
        .unwrap();

    let table = format_status(&snapshot, StatusFormat::Table).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "app clock (ready)");
    assert!(
        lines[2].starts_with("streamlet")
            && lines[2].contains("in/s")
            && lines[2].ends_with("restarts")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("source") && l.contains("running")),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ticks") && l.split_whitespace().nth(1) == Some("2")),
        "{table}"
    );

    let json = format_status(&snapshot, StatusFormat::Json).unwrap();
    let back: runnel_runtime::Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(back, snapshot);
    let yaml = format_status(&snapshot, StatusFormat::Yaml).unwrap();
    assert!(yaml.starts_with("app: clock\nready: true\n"), "{yaml}");

    let error = fetch_status("http://127.0.0.1:1/api/status").unwrap_err();
    assert_eq!(
        error.to_string(),
        "no runnel process answered at http://127.0.0.1:1/api/status"
    );
    assert_eq!(status_url("http://host:9/"), "http://host:9/api/status");

    served.shutdown.cancel();
    served.running.wait().await.unwrap();
}
