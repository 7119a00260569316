//! A backlog scored with the slow model (the tree ensemble) is committed batch by batch as
//! it goes, so the score streamlet's lag moves and a crash would score again only what was
//! not committed (issue: committed offsets held for the whole backlog).

use std::time::{Duration, Instant};

use runnel_embedded_log::LogInspector;

use crate::support::{
    App, backlog, committed_by_scorer, model_body, post, post_lines, records_in, stop,
};
use runnel_app_test::wait_until;

/// Transactions queued before the score streamlet works them off.
const BACKLOG: usize = 6_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scored_backlog_commits_as_it_goes_and_its_lag_moves() {
    let data = tempfile::tempdir().unwrap();
    let app = App::start(data.path());
    assert_eq!(post(&app.models, &model_body("1", "gbt.onnx")).0, 200);
    let inspector = LogInspector::new(data.path()).unwrap();
    let scored = || records_in(&inspector, "scored");
    let committed = || committed_by_scorer(&inspector);
    wait_until(Duration::from_secs(60), "the model serves", || {
        records_in(&inspector, "model-events") == 1
    });

    let (status, answer) = post_lines(&app.lines, &backlog(BACKLOG));
    assert_eq!(status, 200, "{answer}");

    // (seconds since the backlog arrived, records scored, input offsets committed)
    let started = Instant::now();
    let mut samples = Vec::new();
    loop {
        let sample = (started.elapsed().as_secs_f64(), scored(), committed());
        samples.push(sample);
        if sample.2 as usize >= BACKLOG {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the backlog was not worked off within 5 minutes: {samples:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    stop(app);

    let scoring_took = samples
        .iter()
        .find(|(_, scored, _)| *scored as usize >= BACKLOG)
        .map_or(f64::MAX, |(at, _, _)| *at);
    // Commits trail scoring by about a commit interval (200 ms) and a batch; the longest a
    // committed offset stood still while records were scored says how often it moved.
    let mut longest_still = 0.0_f64;
    let mut since = (0.0, 0);
    for &(at, scored, committed) in &samples {
        if committed != since.1 {
            since = (at, committed);
        } else if (scored as usize) < BACKLOG {
            longest_still = longest_still.max(at - since.0);
        }
    }
    println!(
        "scored {BACKLOG} in {scoring_took:.1} s; the committed offset stood still for at most {longest_still:.1} s while scoring"
    );
    assert!(
        longest_still < 3.0,
        "the committed offset stood still for {longest_still:.1} s while the backlog was scored; (s, scored, committed): {samples:?}"
    );
    let halfway = samples
        .iter()
        .find(|(_, scored, _)| *scored as usize >= BACKLOG / 2)
        .expect("a sample past half the backlog");
    assert!(
        halfway.2 > 0,
        "half the backlog was scored with nothing committed: {samples:?}"
    );
}
