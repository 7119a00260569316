use std::time::Duration;

use device_stats::model::{PowerStats, Reading};
use runnel::window::Pane;

use crate::support::{
    BLUEPRINT, Running, app, assert_same, batch, by_minute, open, read_topic, read_values,
    run_to_end, stderr_of,
};

/// `kill -9` while the windowed streamlet is busy, then a second run that only drains: every
/// device-minute of the readings that reached the log has exactly one result, equal to the
/// batch computation, so no input was lost or counted twice. Panes sent after the last
/// checkpoint before the kill were sent again, identical.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loses_no_window_result_and_counts_nothing_twice() {
    let data = tempfile::tempdir().unwrap();
    let mut first = app(&["run", BLUEPRINT], data.path());
    first.args(["--set", "generator.records-per-second=20000"]);
    let mut running = Running::start(first);
    // Well into the stream, past several checkpoints (one a second).
    running.wait_until_read("per-minute", 30_000, Duration::from_secs(60));
    running.child.kill().unwrap(); // SIGKILL: no final checkpoint, no drain
    running.child.wait().unwrap();

    let backend = open(data.path());
    let checkpoints = read_topic(&backend, "device-stats.per-minute.checkpoints").await;
    assert!(!checkpoints.is_empty(), "the first run checkpointed");
    let panes_before = read_topic(&backend, "device-stats").await.len();
    drop(backend);

    let mut second = app(&["run", BLUEPRINT], data.path());
    second.args(["--set", "generator.count=0"]);
    let output = run_to_end(second, Duration::from_secs(120));
    assert!(output.status.success(), "stderr:\n{}", stderr_of(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("resuming from the last checkpoint"),
        "the second run resumed from the checkpoint"
    );

    let backend = open(data.path());
    let readings: Vec<Reading> = read_values(&backend, "readings").await;
    assert!(
        readings.len() > 1_000,
        "the first run got going ({} readings)",
        readings.len()
    );
    let panes: Vec<Pane<String, PowerStats>> = read_values(&backend, "device-stats").await;
    let (streamed, sent) = by_minute(&panes);
    let expected = batch(&readings);
    assert_same(&streamed, &expected);
    let late: Vec<Reading> = read_values(&backend, "late-readings").await;
    assert!(
        late.is_empty(),
        "no reading became late through the restart"
    );
    println!(
        "crash test: {} readings, {} device-minutes, {panes_before} panes before the kill, \
         {} panes sent again after it",
        readings.len(),
        expected.len(),
        sent - expected.len()
    );
    assert!(
        sent - expected.len() <= panes_before,
        "only panes sent before the kill can be sent again"
    );
}
