use std::time::Duration;

use device_stats::model::Reading;
use runnel::window::Pane;

use crate::support::{
    BLUEPRINT, app, assert_same, batch, by_minute, open, read_values, run_to_end, stderr_of,
};

/// 6,000 readings (10 minutes of event time, a third of them up to 2 s out of order): the
/// run exits by itself, every device-minute has one on-time result equal to the batch
/// computation, and nothing was late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_run_computes_every_minute_exactly() {
    let data = tempfile::tempdir().unwrap();
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args([
        "--set",
        "generator.count=6000",
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(120));
    assert!(output.status.success(), "stderr:\n{}", stderr_of(&output));

    let backend = open(data.path());
    let readings: Vec<Reading> = read_values(&backend, "readings").await;
    assert_eq!(readings.len(), 6_000);
    let panes: Vec<Pane<String, device_stats::model::PowerStats>> =
        read_values(&backend, "device-stats").await;
    let (streamed, sent) = by_minute(&panes);
    let expected = batch(&readings);
    assert_same(&streamed, &expected);
    assert_eq!(sent, expected.len(), "one pane per device-minute");
    let late: Vec<Reading> = read_values(&backend, "late-readings").await;
    assert!(late.is_empty(), "readings within the bound are never late");
}
