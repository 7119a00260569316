//! Queries whose join state is checkpointed (q9, winning bids, by hand; q4 in SQL, from its
//! changelog) and their generator survive `kill -9`: restarted on the same log, the
//! generator resumes from its checkpoint and the query from its state and input offsets,
//! and every auction's winner (every category's average) is the one computed over the
//! generated events, however often a replayed result is sent again.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel::prelude::*;
use runnel::testkit::TestRun;
use runnel_app_test::{Running, open, read_topic, read_values, run_to_end, stderr_of, stdout_of};
use runnel_nexmark::generator::{Generator, GeneratorConfig};
use runnel_nexmark::model::Bid;
use runnel_nexmark::queries::q9;

const EVENTS: u64 = 40_000;
const RATE: i64 = 500;

fn command(query: &str, data: &Path) -> Command {
    let blueprint = format!("{}/blueprints/{query}.toml", env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["run", &blueprint, "--data-dir"])
        .arg(data)
        .args(["--view", "plain", "--status-every", "1s", "--admin", "off"])
        .args(["--set", &format!("generator.count={EVENTS}")])
        .args(["--set", &format!("generator.events-per-second={RATE}")])
        .args(["--set", "generator.records-per-second=4000"])
        .env("RUST_LOG", "info");
    command
}

/// Runs `query`'s app until its streamlet `instance` has read 12,000 records, kills it with
/// `-9`, runs it again on the same log to the end, and checks that the generator resumed
/// mid-stream.
fn kill_9_and_run_to_end(query: &str, instance: &str, data: &Path) {
    let mut first = Running::start(command(query, data));
    first.wait_until_read(instance, 12_000, Duration::from_secs(60));
    first.child.kill().expect("the app is killed");
    first.child.wait().expect("the killed app is reaped");

    let output = run_to_end(command(query, data), Duration::from_secs(120));
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
}

/// The winning bid of every auction of the generated events, by q9's streamlet run over
/// them in the test kit.
async fn winners() -> BTreeMap<i64, q9::WinningBid> {
    let config = GeneratorConfig {
        events_per_second: RATE,
        ..GeneratorConfig::default()
    };
    let streams = Generator::new(config).unwrap().streams(EVENTS);
    let expected = TestRun::new(q9::streamlet())
        .input(q9::AUCTIONS, streams.auctions)
        .input(q9::BIDS, streams.bids)
        .run()
        .await
        .unwrap()
        .output(q9::OUT);
    expected
        .into_iter()
        .map(|winner| (winner.auction.id, winner))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn winning_bids_survive_kill_9_of_the_whole_app() {
    let data = tempfile::tempdir().unwrap();
    kill_9_and_run_to_end("q9", "q9", data.path());
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

    let expected = winners().await;
    let mut streamed: BTreeMap<i64, q9::WinningBid> = BTreeMap::new();
    for winner in read_values::<q9::WinningBid>(&backend, "q9-results").await {
        if let Some(earlier) = streamed.insert(winner.auction.id, winner.clone()) {
            assert_eq!(earlier, winner, "a winner sent again is the same");
        }
    }
    assert!(expected.len() > 200);
    assert_eq!(streamed, expected);
}

/// The result of q4 in SQL: a category's average winning price, as a change.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct CategoryAverage {
    category: i64,
    average: Option<f64>,
}

/// q4 in SQL keeps its state (each auction's highest bid, each category's average, the
/// join's auctions and bids) in its changelog: after `kill -9` it resumes from there, so
/// each category's last average is the one over all its auctions' winning bids (an
/// instance that lost its state would average only the auctions after the restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q4_in_sql_resumes_its_state_from_the_changelog_after_kill_9() {
    let data = tempfile::tempdir().unwrap();
    kill_9_and_run_to_end("q4-sql", "q4", data.path());
    let backend = open(data.path());
    let mut last: BTreeMap<i64, f64> = BTreeMap::new();
    for record in read_topic(&backend, "q4-sql-results").await {
        let kind = record.record.headers.get_str(runnel::sql::RowKind::HEADER);
        let kind = runnel::sql::RowKind::parse(kind.expect("every result says its kind"))
            .expect("a known kind");
        let row: CategoryAverage = runnel_app_test::decode(record.record.value.as_deref().unwrap());
        if !kind.is_retraction() {
            last.insert(
                row.category,
                row.average.expect("categories with a winning bid"),
            );
        }
    }
    let changelog = read_topic(&backend, "nexmark-q4-sql.q4.changelog").await;
    assert!(!changelog.is_empty(), "the state is in its changelog");

    let mut prices: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for winner in winners().await.into_values() {
        prices
            .entry(winner.auction.category)
            .or_default()
            .push(winner.bid.price);
    }
    assert!(prices.len() >= 5, "{prices:?}");
    assert_eq!(
        last.keys().collect::<Vec<_>>(),
        prices.keys().collect::<Vec<_>>()
    );
    for (category, prices) in &prices {
        let average = prices.iter().sum::<i64>() as f64 / prices.len() as f64;
        let streamed = last[category];
        assert!(
            (streamed - average).abs() < 1e-6 * average.abs(),
            "category {category}: {streamed} against {average}"
        );
    }
}
