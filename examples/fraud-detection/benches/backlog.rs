//! How often the score streamlet commits its input while it works off a backlog: 30,000
//! transactions queued at once, scored by the tree ensemble, the committed offset of the
//! score streamlet's group sampled every 20 ms. Prints the scoring time, how many times the
//! committed offset moved, the median and longest time it stood still while records were
//! being scored, and how much was committed when half the backlog was scored.
//!
//! ```text
//! cargo bench -p fraud-detection --bench backlog
//! ```

use std::time::{Duration, Instant};

use runnel_embedded_log::LogInspector;

// The binary on free ports and its ingresses, as the end-to-end tests drive it; the bench
// uses a part of it.
#[allow(dead_code)]
#[path = "../tests/it/support.rs"]
mod support;

use support::{App, backlog, committed_by_scorer, model_body, post, post_lines, records_in, stop};

/// Transactions queued before the score streamlet works them off (the size of the backlog
/// in the user trial that found the scorer holding its offsets).
const BACKLOG: usize = 30_000;

fn main() {
    let data = tempfile::tempdir().unwrap();
    let app = App::start(data.path());
    assert_eq!(post(&app.models, &model_body("1", "gbt.onnx")).0, 200);
    let inspector = LogInspector::new(data.path()).unwrap();
    let committed = || committed_by_scorer(&inspector);
    let deadline = Instant::now() + Duration::from_secs(60);
    while records_in(&inspector, "model-events") < 1 {
        assert!(Instant::now() < deadline, "the model was not published");
        std::thread::sleep(Duration::from_millis(50));
    }

    let (status, answer) = post_lines(&app.lines, &backlog(BACKLOG));
    assert_eq!(status, 200, "{answer}");

    // (seconds since the backlog was accepted, records scored, input offsets committed)
    let started = Instant::now();
    let mut samples: Vec<(f64, u64, u64)> = Vec::new();
    loop {
        let sample = (
            started.elapsed().as_secs_f64(),
            records_in(&inspector, "scored"),
            committed(),
        );
        samples.push(sample);
        if sample.2 >= BACKLOG as u64 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the backlog was not worked off within 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop(app);

    let backlog = BACKLOG as u64;
    let scored_at = samples
        .iter()
        .find(|(_, scored, _)| *scored >= backlog)
        .map_or(f64::NAN, |(at, _, _)| *at);
    // The stretches between moves of the committed offset that began while records were
    // still being scored.
    let mut still = Vec::new();
    let mut since = 0.0;
    let mut last = 0;
    for &(at, scored, committed) in &samples {
        if committed != last {
            if scored < backlog || since < scored_at {
                still.push(at - since);
            }
            since = at;
            last = committed;
        }
    }
    still.sort_by(f64::total_cmp);
    let median = still.get(still.len() / 2).copied().unwrap_or(f64::NAN);
    let longest = still.last().copied().unwrap_or(f64::NAN);
    let halfway = samples
        .iter()
        .find(|(_, scored, _)| *scored >= backlog / 2)
        .map_or(0, |(_, _, committed)| *committed);
    println!(
        "backlog {BACKLOG}: scored in {scored_at:.2} s, all committed at {:.2} s; the committed \
         offset moved {} times, standing still {:.0} ms at the median and {:.0} ms at the longest; \
         {halfway} committed when half was scored",
        samples.last().map_or(f64::NAN, |(at, _, _)| *at),
        still.len(),
        median * 1000.0,
        longest * 1000.0,
    );
}
