//! A query whose join state is checkpointed (q9, winning bids) and its generator survive
//! `kill -9`: restarted on the same log, the generator resumes from its checkpoint and the
//! join from its state and input offsets, and every auction's winner is the one computed
//! over the generated events, however often a replayed winner is sent again.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel::testkit::TestRun;
use runnel_app_test::{Running, open, read_values, run_to_end, stderr_of, stdout_of};
use runnel_nexmark::generator::{Generator, GeneratorConfig};
use runnel_nexmark::model::Bid;
use runnel_nexmark::queries::q9;

const EVENTS: u64 = 40_000;
const RATE: i64 = 500;

fn command(data: &Path) -> Command {
    let blueprint = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprints/q9.toml");
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["run", blueprint, "--data-dir"])
        .arg(data)
        .args(["--view", "plain", "--status-every", "1s", "--admin", "off"])
        .args(["--set", &format!("generator.count={EVENTS}")])
        .args(["--set", &format!("generator.events-per-second={RATE}")])
        .args(["--set", "generator.records-per-second=4000"])
        .env("RUST_LOG", "info");
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn winning_bids_survive_kill_9_of_the_whole_app() {
    let data = tempfile::tempdir().unwrap();
    let mut first = Running::start(command(data.path()));
    first.wait_until_read("q9", 12_000, Duration::from_secs(60));
    first.child.kill().expect("the app is killed");
    first.child.wait().expect("the killed app is reaped");

    let output = run_to_end(command(data.path()), Duration::from_secs(120));
    let printed = format!("{}{}", stdout_of(&output), stderr_of(&output));
    assert!(output.status.success(), "the restart failed:\n{printed}");
    let resumed_at: u64 = printed
        .split("resumed_at=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("the generator says where it resumed:\n{printed}"));
    assert!(
        (1..EVENTS).contains(&resumed_at),
        "the generator resumed mid-stream, at {resumed_at}"
    );

    let config = GeneratorConfig {
        events_per_second: RATE,
        ..GeneratorConfig::default()
    };
    let streams = Generator::new(config).unwrap().streams(EVENTS);
    let backend = open(data.path());
    // Every event is on the log, some twice (sent after the last checkpoint before the kill).
    let bids: Vec<Bid> = read_values(&backend, "bids").await;
    let mut distinct: Vec<String> = bids.iter().map(|bid| format!("{bid:?}")).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), streams.bids.len());
    assert!(bids.len() >= streams.bids.len());

    let expected = TestRun::new(q9::streamlet())
        .input(q9::AUCTIONS, streams.auctions)
        .input(q9::BIDS, streams.bids)
        .run()
        .await
        .unwrap()
        .output(q9::OUT);
    let expected: BTreeMap<i64, q9::WinningBid> = expected
        .into_iter()
        .map(|winner| (winner.auction.id, winner))
        .collect();
    let mut streamed: BTreeMap<i64, q9::WinningBid> = BTreeMap::new();
    for winner in read_values::<q9::WinningBid>(&backend, "q9-results").await {
        if let Some(earlier) = streamed.insert(winner.auction.id, winner.clone()) {
            assert_eq!(earlier, winner, "a winner sent again is the same");
        }
    }
    assert!(expected.len() > 200);
    assert_eq!(streamed, expected);
}
