//! A two-inlet event-time join started over a backlog on Apache Kafka: persons and auctions
//! already in their topics, each inlet in a consumer group of its own, assigned its
//! partitions a moment after the streamlet starts.
//!
//! The join declares its partitions to its watermark so that none can race ahead of the
//! others. It used to declare them before the groups assigned any: then whichever inlet's
//! backlog came first moved the watermark past the other's records, which were all dropped
//! as late. Over 20 million events q8 found no new seller in two runs of three.

use std::process::Command;
use std::time::Duration;

use runnel::prelude::*;
use runnel::testkit::TestRun;
use runnel_app_test::kafka::read_topic;
use runnel_app_test::{Running, decode, run_to_end, stderr_of};
use runnel_kafka::test_broker::ApacheKafka;
use runnel_nexmark::model::{Auction, Person};
use runnel_nexmark::queries::{WINDOW_SIZE, q8};

use crate::bounded_runs::{EVENTS, RATE, sorted, streams};

/// Fills the topics `persons`, `auctions` and `bids` on `broker` with the generated events:
/// the app with the generator alone, run to its end.
fn fill(broker: &ApacheKafka, directory: &std::path::Path) {
    let blueprint = directory.join("fill.toml");
    std::fs::write(
        &blueprint,
        r#"name = "fill"

[streamlets]
generator = "generator"

[topics.persons]
producers = ["generator.persons"]

[topics.auctions]
producers = ["generator.auctions"]

[topics.bids]
producers = ["generator.bids"]
"#,
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .arg("run")
        .arg(&blueprint)
        .arg("--data-dir")
        .arg(directory.join("fill"))
        .args(["--view", "off", "--admin", "off"])
        .args(["--set", &format!("generator.count={EVENTS}")])
        .args(["--set", &format!("generator.events-per-second={RATE}")])
        .args(broker.app_arguments())
        .env("RUST_LOG", "warn");
    let output = run_to_end(command, Duration::from_secs(120));
    assert!(output.status.success(), "{}", stderr_of(&output));
}

/// q8 alone, reading the topics the generator filled (declared with their schemas, as
/// topics written outside the app are).
fn q8_blueprint() -> String {
    let schema = |json: String| serde_json::to_string(&json).unwrap();
    format!(
        r#"name = "q8-backlog"

[streamlets]
q8 = "q8"

[topics.persons]
schema = {persons}
consumers = ["q8.persons"]

[topics.auctions]
schema = {auctions}
consumers = ["q8.auctions"]

[topics.q8-results]
producers = ["q8.out"]
"#,
        persons = schema(serde_json::to_string(&Person::get_schema()).unwrap()),
        auctions = schema(serde_json::to_string(&Auction::get_schema()).unwrap()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q8_started_over_a_backlog_on_apache_kafka_finds_every_new_seller() {
    let broker = ApacheKafka::start();
    let directory = tempfile::tempdir().unwrap();
    fill(&broker, directory.path());

    let blueprint = directory.path().join("q8.toml");
    std::fs::write(&blueprint, q8_blueprint()).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .arg("run")
        .arg(&blueprint)
        .arg("--data-dir")
        .arg(directory.path().join("q8"))
        .args(["--view", "plain", "--status-every", "1s", "--admin", "off"])
        .args(broker.app_arguments())
        .env("RUST_LOG", "info");
    let mut app = Running::start(command);
    let streams = streams();
    let inputs = (streams.persons.len() + streams.auctions.len()) as u64;
    app.wait_until_read("q8", inputs, Duration::from_secs(120));

    // The topics never end, so the last windows stay open: the watermark stops a second
    // behind the latest event of the partition furthest behind. Every window that ends 10 s
    // (a window) before the latest event is complete.
    let latest = (streams.persons.iter().map(|person| person.date_time))
        .chain(streams.auctions.iter().map(|auction| auction.date_time))
        .max()
        .unwrap();
    let complete =
        |seller: &q8::NewSeller| seller.window_start + 2 * WINDOW_SIZE.as_millis() as i64 <= latest;
    let expected: Vec<q8::NewSeller> = TestRun::new(q8::streamlet())
        .input(q8::PERSONS, streams.persons)
        .input(q8::AUCTIONS, streams.auctions)
        .run()
        .await
        .unwrap()
        .output(q8::OUT)
        .into_iter()
        .filter(complete)
        .collect();
    assert!(expected.len() >= 10, "{expected:?}");
    // Results of a window after the complete ones may come in between: count only these.
    let mut complete_seen = 0;
    let seen = read_topic(&broker, "q8-results", Duration::from_secs(60), |record| {
        if complete(&decode::<q8::NewSeller>(&record.value)) {
            complete_seen += 1;
        }
        complete_seen >= expected.len()
    });
    app.child.kill().unwrap();
    let _ = app.child.wait();
    let results: Vec<q8::NewSeller> = seen
        .iter()
        .map(|record| decode::<q8::NewSeller>(&record.value))
        .filter(complete)
        .collect();
    assert_eq!(sorted(results), sorted(expected));
}
