//! Queries whose join state is checkpointed (q9, winning bids, by hand; q4 in SQL, from its
//! changelog) and their generator survive `kill -9`: restarted on the same log, the
//! generator resumes from its checkpoint and the query from its state and input offsets,
//! and every auction's winner (every category's average) is the one computed over the
//! generated events, however often a replayed result is sent again. Their state is in
//! their changelogs, and their checkpoint records hold only what is not (watermarks), so
//! no record must hold a state that grows with the input.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel::checkpoint::changelog_entries;
use runnel::prelude::*;
use runnel::testkit::TestRun;
use runnel_app_test::{Running, open, read_topic, read_values, run_to_end, stderr_of, stdout_of};
use runnel_nexmark::generator::{Generator, GeneratorConfig, Streams};
use runnel_nexmark::model::Bid;
use runnel_nexmark::queries::{q3, q9};

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

/// The events the apps' generator writes.
fn generated() -> Streams {
    let config = GeneratorConfig {
        events_per_second: RATE,
        ..GeneratorConfig::default()
    };
    Generator::new(config).unwrap().streams(EVENTS)
}

/// The winning bid of every auction of the generated events, by q9's streamlet run over
/// them in the test kit.
async fn winners() -> BTreeMap<i64, q9::WinningBid> {
    let streams = generated();
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
    let streams = generated();
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

    let changelog = read_topic(&backend, "nexmark-q9.q9.changelog").await;
    assert!(
        !changelog.is_empty(),
        "the join's state is in its changelog"
    );
    assert_small_checkpoints(&backend, "nexmark-q9.q9.checkpoints").await;
}

/// Every checkpoint record on `topic` is small: the state is elsewhere.
async fn assert_small_checkpoints(backend: &runnel_embedded_log::EmbeddedBackend, topic: &str) {
    let checkpoints = read_topic(backend, topic).await;
    assert!(!checkpoints.is_empty());
    for checkpoint in &checkpoints {
        let bytes = checkpoint
            .record
            .value
            .as_ref()
            .map_or(0, |value| value.len());
        assert!(bytes < 1_024, "a checkpoint of {bytes} bytes on {topic}");
    }
}

/// q3 keeps every person it has seen. That state goes to its changelog, one entry per
/// person, and its checkpoint records stay small however many persons there are, so its
/// state can outgrow the largest record the log takes (1 MB on Kafka by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q3_keeps_every_person_in_its_changelog_not_in_its_checkpoints() {
    let data = tempfile::tempdir().unwrap();
    let output = run_to_end(command("q3", data.path()), Duration::from_secs(120));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let backend = open(data.path());

    let mut persons = std::collections::BTreeSet::new();
    for record in read_topic(&backend, "nexmark-q3.q3.changelog").await {
        let entries = changelog_entries(&record.record).expect("changelog entries");
        for (key, value) in entries {
            if key.first() == Some(&b'p') && value.is_some() {
                persons.insert(key);
            }
        }
    }
    let streams = generated();
    assert_eq!(persons.len(), streams.persons.len());
    assert_small_checkpoints(&backend, "nexmark-q3.q3.checkpoints").await;

    let streamed = read_values::<q3::NameCityStateId>(&backend, "q3-results").await;
    assert!(!streamed.is_empty());
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
