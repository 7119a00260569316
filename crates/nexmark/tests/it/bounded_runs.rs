//! Each query's blueprint, run by the app binary on the embedded log with a bounded
//! generator, writes exactly what the query's streamlet computes over the same events in
//! the test kit (whose results the unit tests check against batch computations): so the
//! blueprint wires the right topics, records survive the codecs and the log, and the end
//! of the input reaches every stage and fires every window.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel::prelude::*;
use runnel::testkit::TestRun;
use runnel_app_test::{open, read_topic, read_values, run_to_end, stderr_of};
use runnel_backend::Backend;
use runnel_nexmark::generator::{Generator, GeneratorConfig, Streams};
use runnel_nexmark::model::{Auction, Bid, Person};
use runnel_nexmark::queries::{q0, q1, q2, q3, q4, q5, q7, q8, q9, q11};

/// Events per run: 40 s of event time at the rate below.
pub(crate) const EVENTS: u64 = 20_000;
/// Events per second of event time.
pub(crate) const RATE: i64 = 500;

/// Runs `query`'s blueprint to its end in `data`; with its query streamlet registered as
/// `<query>-exactly-once` when `exactly_once` says so.
fn run_query(query: &str, data: &Path, exactly_once: bool) {
    let mut blueprint = format!("{}/blueprints/{query}.toml", env!("CARGO_MANIFEST_DIR"));
    if exactly_once {
        let text = std::fs::read_to_string(&blueprint).unwrap();
        let instance = format!("{query} = \"{query}\"");
        assert!(text.contains(&instance), "{blueprint} has {instance}");
        let changed = text.replace(&instance, &format!("{query} = \"{query}-exactly-once\""));
        blueprint = data.join(format!("{query}.toml")).display().to_string();
        std::fs::write(&blueprint, changed).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["run", &blueprint, "--data-dir"])
        .arg(data)
        .args(["--view", "plain"])
        .args(["--set", &format!("generator.count={EVENTS}")])
        .args(["--set", &format!("generator.events-per-second={RATE}")])
        .env("RUST_LOG", "warn");
    let output = run_to_end(command, Duration::from_secs(120));
    assert!(
        output.status.success(),
        "{query} failed:\n{}",
        stderr_of(&output)
    );
}

pub(crate) fn streams() -> Streams {
    let config = GeneratorConfig {
        events_per_second: RATE,
        ..GeneratorConfig::default()
    };
    Generator::new(config)
        .expect("a valid config")
        .streams(EVENTS)
}

/// `values` in a canonical order, to compare runs that may interleave differently.
pub(crate) fn sorted<T: Debug>(values: Vec<T>) -> Vec<String> {
    let mut lines: Vec<String> = values.iter().map(|value| format!("{value:?}")).collect();
    lines.sort_unstable();
    lines
}

/// Runs `query` in the app and reads its results topic, after checking the generator's
/// topics hold the generated events.
async fn app_results<T: Data>(query: &str) -> Vec<T> {
    app_results_with(query, false).await
}

/// As [`app_results`], with the query streamlet exactly once when `exactly_once` says so.
async fn app_results_with<T: Data>(query: &str, exactly_once: bool) -> Vec<T> {
    let data = tempfile::tempdir().unwrap();
    run_query(query, data.path(), exactly_once);
    let backend = open(data.path());
    let expected = streams();
    let persons: Vec<Person> = read_values(&backend, "persons").await;
    let auctions: Vec<Auction> = read_values(&backend, "auctions").await;
    let bids: Vec<Bid> = read_values(&backend, "bids").await;
    assert_eq!(
        (persons.len(), auctions.len(), bids.len()),
        (400, 1_200, 18_400)
    );
    assert_eq!(sorted(persons), sorted(expected.persons));
    assert_eq!(sorted(auctions), sorted(expected.auctions));
    assert_eq!(sorted(bids), sorted(expected.bids));
    let topic = format!("{query}-results");
    let results = read_values(&backend, &topic).await;
    // Transaction markers take offsets of their own: the results were written exactly
    // once when the topic's offsets outnumber its records.
    let offsets: u64 = (backend.offsets(&topic).await.unwrap().iter())
        .map(|partition| partition.end)
        .sum();
    assert_eq!(offsets > results.len() as u64, exactly_once, "{topic}");
    results
}

async fn on_bids<T: Data>(
    streamlet: impl Streamlet,
    inlet: Inlet<Bid>,
    outlet: Outlet<T>,
) -> Vec<T> {
    TestRun::new(streamlet)
        .input(inlet, streams().bids)
        .run()
        .await
        .expect("the test run completes")
        .output(outlet)
}

/// The hand-written q9's winning bids over the generated events.
async fn winners_by_the_streamlet() -> Vec<q9::WinningBid> {
    let streams = streams();
    TestRun::new(q9::streamlet())
        .input(q9::AUCTIONS, streams.auctions)
        .input(q9::BIDS, streams.bids)
        .run()
        .await
        .expect("the test run completes")
        .output(q9::OUT)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q0_passes_every_bid() {
    let results: Vec<Bid> = app_results("q0").await;
    let expected = on_bids(q0::streamlet(), q0::IN, q0::OUT).await;
    assert_eq!(expected, streams().bids);
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q1_converts_every_bid() {
    let results: Vec<Bid> = app_results("q1").await;
    let expected = on_bids(q1::streamlet(), q1::IN, q1::OUT).await;
    assert_eq!(results.len(), 18_400);
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q2_selects_the_same_bids() {
    let results: Vec<q2::AuctionPrice> = app_results("q2").await;
    let expected = on_bids(q2::streamlet(), q2::IN, q2::OUT).await;
    assert!(!expected.is_empty());
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q0_in_sql_passes_every_bid() {
    let results: Vec<Bid> = app_results("q0-sql").await;
    assert_eq!(sorted(results), sorted(streams().bids));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q1_in_sql_converts_every_bid_as_the_streamlet_does() {
    let results: Vec<Bid> = app_results("q1-sql").await;
    let expected = on_bids(q1::streamlet(), q1::IN, q1::OUT).await;
    assert_eq!(results.len(), 18_400);
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q2_in_sql_selects_the_same_bids_as_the_streamlet() {
    let results: Vec<q2::AuctionPrice> = app_results("q2-sql").await;
    let expected = on_bids(q2::streamlet(), q2::IN, q2::OUT).await;
    assert!(!expected.is_empty());
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q3_finds_the_same_sellers() {
    let results: Vec<q3::NameCityStateId> = app_results("q3").await;
    let streams = streams();
    let expected = TestRun::new(q3::streamlet())
        .input(q3::PERSONS, streams.persons)
        .input(q3::AUCTIONS, streams.auctions)
        .run()
        .await
        .unwrap()
        .output(q3::OUT);
    assert!(!expected.is_empty());
    assert_eq!(sorted(results), sorted(expected));
}

/// The result of Flink's q3 in SQL (`blueprints/q3-sql.toml`).
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct NameCityStateId {
    name: String,
    city: String,
    state: String,
    id: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q3_in_sql_finds_the_same_sellers_as_the_streamlet() {
    let results: Vec<NameCityStateId> = app_results("q3-sql").await;
    let streams = streams();
    let expected = TestRun::new(q3::streamlet())
        .input(q3::PERSONS, streams.persons)
        .input(q3::AUCTIONS, streams.auctions)
        .run()
        .await
        .unwrap()
        .output(q3::OUT);
    assert!(!expected.is_empty());
    let expected: Vec<(String, String, String, i64)> = expected
        .into_iter()
        .map(|seller| (seller.name, seller.city, seller.state, seller.id))
        .collect();
    let results: Vec<(String, String, String, i64)> = results
        .into_iter()
        .map(|seller| (seller.name, seller.city, seller.state, seller.id))
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q4_averages_the_same_winning_prices_through_two_stages() {
    let results: Vec<runnel::window::Pane<i64, i64>> = app_results("q4").await;
    let winners = winners_by_the_streamlet().await;
    let expected = TestRun::new(q4::streamlet())
        .input(q4::IN, winners)
        .run()
        .await
        .unwrap()
        .output(q4::OUT);
    assert!(expected.len() > 20);
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q5_finds_the_same_hot_items() {
    let results: Vec<runnel::window::Pane<String, q5::HotItems>> = app_results("q5").await;
    let expected = on_bids(q5::streamlet(), q5::IN, q5::OUT).await;
    assert_eq!(expected.len(), 9);
    assert_eq!(sorted(results), sorted(expected));
}

/// The result of Flink's q4 in SQL (`blueprints/q4-sql.toml`): a category's average
/// winning price, as a change to the result table.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct CategoryAverage {
    category: i64,
    average: Option<f64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q4_in_sql_averages_the_winning_bids_of_the_streamlet_per_category() {
    let data = tempfile::tempdir().unwrap();
    run_query("q4-sql", data.path(), false);
    let backend = open(data.path());
    // The changes, folded into the result table: each takes back the row before it.
    let mut table: BTreeMap<i64, f64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for record in read_topic(&backend, "q4-sql-results").await {
        let kind = record.record.headers.get_str(runnel::sql::RowKind::HEADER);
        let kind = runnel::sql::RowKind::parse(kind.expect("every result says its kind"))
            .expect("a known kind");
        *kinds.entry(kind.as_str().to_owned()).or_default() += 1;
        let row: CategoryAverage = runnel_app_test::decode(record.record.value.as_deref().unwrap());
        let average = row.average.expect("categories with a winning bid");
        if kind.is_retraction() {
            assert_eq!(
                table.remove(&row.category),
                Some(average),
                "{kind:?} of {row:?}"
            );
        } else {
            assert_eq!(
                table.insert(row.category, average),
                None,
                "{kind:?} of {row:?}"
            );
        }
    }
    // Categories' averages update as bids come: most results replace one.
    assert!(kinds["-U"] > 20 && kinds["-U"] == kinds["+U"], "{kinds:?}");

    let winners = winners_by_the_streamlet().await;
    let mut prices: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for winner in winners {
        prices
            .entry(winner.auction.category)
            .or_default()
            .push(winner.bid.price);
    }
    let expected: BTreeMap<i64, f64> = prices
        .into_iter()
        .map(|(category, prices)| {
            (
                category,
                prices.iter().sum::<i64>() as f64 / prices.len() as f64,
            )
        })
        .collect();
    assert!(expected.len() >= 5, "{expected:?}");
    assert_eq!(
        table.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (category, average) in &expected {
        let streamed = table[category];
        assert!(
            (streamed - average).abs() < 1e-6 * average.abs(),
            "category {category}: {streamed} against {average}"
        );
    }
}

/// The result of Flink's q5 in SQL (`blueprints/q5-sql.toml`): one per hot auction and
/// window.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct HotItem {
    auction: i64,
    num: i64,
    starttime: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q5_in_sql_finds_the_same_hot_items_as_the_streamlet() {
    let results: Vec<HotItem> = app_results("q5-sql").await;
    let expected = hot_items_by_the_streamlet().await;
    assert!(expected.len() >= 8, "{expected:?}");
    let results: Vec<(i64, i64, i64)> = results
        .into_iter()
        .map(|item| (item.starttime, item.auction, item.num))
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}

/// The hand-written q5's results over the generated bids, as (window start, auction,
/// bids), one per hot auction and window.
async fn hot_items_by_the_streamlet() -> Vec<(i64, i64, i64)> {
    on_bids(q5::streamlet(), q5::IN, q5::OUT)
        .await
        .into_iter()
        .flat_map(|pane| {
            let (start, bids) = (pane.window_start, pane.value.bids);
            pane.value
                .auctions
                .into_iter()
                .map(move |auction| (start, auction, bids))
        })
        .collect()
}

/// Runs q5 in SQL through the app on `broker` (with `settings` for its Kafka clients) and
/// reads its results back with a plain Kafka consumer: each value as written, with the
/// expected results.
async fn q5_in_sql_on(
    broker: &runnel_kafka::test_broker::ApacheKafka,
    settings: &[String],
) -> (Vec<Vec<u8>>, Vec<(i64, i64, i64)>) {
    let blueprint = format!("{}/blueprints/q5-sql.toml", env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["run", &blueprint, "--data-dir"])
        .arg(data.path())
        .args(["--view", "plain"])
        .args(["--set", &format!("generator.count={EVENTS}")])
        .args(["--set", &format!("generator.events-per-second={RATE}")])
        .args(broker.app_arguments())
        .env("RUST_LOG", "warn");
    for setting in settings {
        command.args(["--kafka-setting", setting]);
    }
    let output = run_to_end(command, Duration::from_secs(240));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let expected = hot_items_by_the_streamlet().await;
    assert!(expected.len() >= 8, "{expected:?}");
    let seen = runnel_app_test::kafka::read_topic(
        broker,
        "q5-sql-results",
        Duration::from_secs(60),
        runnel_app_test::kafka::at_least(expected.len()),
    );
    (
        seen.into_iter().map(|record| record.value).collect(),
        expected,
    )
}

fn hot_item(value: &[u8]) -> (i64, i64, i64) {
    let item: HotItem = runnel_app_test::decode(value);
    (item.starttime, item.auction, item.num)
}

/// q5 in SQL (windows, a window over their results, a join and checkpoints) run by the app
/// on Apache Kafka, from the generator to the results topic, read back by a plain Kafka
/// consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q5_in_sql_on_apache_kafka_finds_the_same_hot_items_as_the_streamlet() {
    let broker = runnel_kafka::test_broker::ApacheKafka::start();
    let (values, expected) = q5_in_sql_on(&broker, &[]).await;
    let results: Vec<(i64, i64, i64)> = values.iter().map(|value| hot_item(value)).collect();
    assert_eq!(sorted(results), sorted(expected));
}

/// The same with a schema registry (Apicurio Registry): the generator's bids reach the SQL
/// streamlet in the Confluent wire format, and its results leave in it, under the schema it
/// inferred from its query, registered for the results topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q5_in_sql_reads_and_writes_through_a_schema_registry() {
    let broker = runnel_kafka::test_broker::ApacheKafka::start();
    let registry = runnel_kafka::test_registry::ApicurioRegistry::start();
    let setting = format!("schema.registry.url={}", registry.url());
    let (values, expected) = q5_in_sql_on(&broker, &[setting]).await;
    let (_, subjects) = registry.request("GET", "/subjects", None).unwrap();
    assert!(
        subjects.contains("\"bids-value\""),
        "the generator wrote the bids through the registry: {subjects}"
    );
    let (status, latest) = registry
        .request(
            "GET",
            "/subjects/q5-sql-results-value/versions/latest",
            None,
        )
        .unwrap();
    assert_eq!(status, 200, "{latest}");
    let latest: serde_json::Value = serde_json::from_str(&latest).unwrap();
    let id = latest["id"].as_u64().unwrap() as u32;
    assert!(
        latest["schema"].as_str().unwrap().contains("HotItem"),
        "the query's inferred schema: {latest}"
    );
    let results: Vec<(i64, i64, i64)> = values
        .iter()
        .map(|value| {
            // Magic byte 0, the schema's id, then the Avro body.
            assert_eq!(value[0], 0, "the Confluent wire format");
            assert_eq!(u32::from_be_bytes(value[1..5].try_into().unwrap()), id);
            hot_item(&value[5..])
        })
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q7_finds_the_same_highest_bids() {
    let results: Vec<runnel::window::Pane<String, q7::HighestBids>> = app_results("q7").await;
    let expected = on_bids(q7::streamlet(), q7::IN, q7::OUT).await;
    assert_eq!(expected.len(), 4, "40 s of event time");
    assert_eq!(sorted(results), sorted(expected));
}

/// The result of Flink's q7 in SQL (`blueprints/q7-sql.toml`): a bid, its columns in the
/// order Flink's query selects them.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct HighestBid {
    auction: i64,
    price: i64,
    bidder: i64,
    date_time: i64,
    extra: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q7_in_sql_finds_the_same_highest_bids_as_the_streamlet() {
    let results: Vec<HighestBid> = app_results("q7-sql").await;
    let results: Vec<Bid> = results
        .into_iter()
        .map(|bid| Bid {
            auction: bid.auction,
            bidder: bid.bidder,
            price: bid.price,
            date_time: bid.date_time,
            extra: bid.extra,
        })
        .collect();
    let expected: Vec<Bid> = on_bids(q7::streamlet(), q7::IN, q7::OUT)
        .await
        .into_iter()
        .flat_map(|pane| pane.value.bids)
        .collect();
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q8_finds_the_same_new_sellers() {
    let results: Vec<q8::NewSeller> = app_results("q8").await;
    let streams = streams();
    let expected = TestRun::new(q8::streamlet())
        .input(q8::PERSONS, streams.persons)
        .input(q8::AUCTIONS, streams.auctions)
        .run()
        .await
        .unwrap()
        .output(q8::OUT);
    assert_eq!(sorted(results), sorted(expected));
}

/// The result of Flink's q8 in SQL (`blueprints/q8-sql.toml`): one per person and window,
/// where the streamlet gives one per auction.
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct NewSeller {
    id: i64,
    name: String,
    starttime: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q8_in_sql_finds_the_same_new_sellers_as_the_streamlet() {
    let results: Vec<NewSeller> = app_results("q8-sql").await;
    let streams = streams();
    let expected = TestRun::new(q8::streamlet())
        .input(q8::PERSONS, streams.persons)
        .input(q8::AUCTIONS, streams.auctions)
        .run()
        .await
        .unwrap()
        .output(q8::OUT);
    let mut expected: Vec<(i64, String, i64)> = expected
        .into_iter()
        .map(|seller| (seller.id, seller.name, seller.window_start))
        .collect();
    expected.sort();
    expected.dedup();
    assert!(expected.len() > 20, "{}", expected.len());
    let results: Vec<(i64, String, i64)> = results
        .into_iter()
        .map(|seller| (seller.id, seller.name, seller.starttime))
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q9_finds_the_same_winners() {
    let results: Vec<q9::WinningBid> = app_results("q9").await;
    let expected = winners_by_the_streamlet().await;
    assert!(expected.len() > 100);
    assert_eq!(sorted(results), sorted(expected));
}

/// The joins and the windows give the same results with exactly-once delivery: their
/// outputs, state and input offsets then commit in one transaction per checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q9_and_q11_exactly_once_find_the_same_results() {
    let results: Vec<q9::WinningBid> = app_results_with("q9", true).await;
    assert_eq!(sorted(results), sorted(winners_by_the_streamlet().await));
    let results: Vec<runnel::window::Pane<i64, i64>> = app_results_with("q11", true).await;
    let expected = on_bids(q11::streamlet(), q11::IN, q11::OUT).await;
    assert_eq!(sorted(results), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q11_finds_the_same_sessions() {
    let results: Vec<runnel::window::Pane<i64, i64>> = app_results("q11").await;
    let expected = on_bids(q11::streamlet(), q11::IN, q11::OUT).await;
    assert!(expected.len() > 100);
    assert_eq!(sorted(results), sorted(expected));
}

/// The result of Flink's q11 in SQL (`blueprints/q11-sql.toml`).
#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
struct BidderSession {
    bidder: i64,
    bid_count: i64,
    starttime: i64,
    endtime: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q11_in_sql_finds_the_same_sessions_as_the_streamlet() {
    let results: Vec<BidderSession> = app_results("q11-sql").await;
    let expected = on_bids(q11::streamlet(), q11::IN, q11::OUT).await;
    assert!(expected.len() > 100);
    let results: Vec<(i64, i64, i64, i64)> = results
        .into_iter()
        .map(|session| {
            (
                session.bidder,
                session.starttime,
                session.endtime,
                session.bid_count,
            )
        })
        .collect();
    let expected: Vec<(i64, i64, i64, i64)> = expected
        .into_iter()
        .map(|pane| (pane.key, pane.window_start, pane.window_end, pane.value))
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}

/// Processing-time panes depend on when bids arrive, so the run is checked by what does
/// not: every bid is counted once, per bidder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q12_counts_every_bid_once() {
    let results: Vec<runnel::window::Pane<i64, i64>> = app_results("q12").await;
    let mut streamed: BTreeMap<i64, i64> = BTreeMap::new();
    for pane in results {
        *streamed.entry(pane.key).or_default() += pane.value;
    }
    let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
    for bid in streams().bids {
        *expected.entry(bid.bidder).or_default() += 1;
    }
    assert_eq!(streamed, expected);
}
