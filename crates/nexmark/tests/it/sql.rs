//! SQL streamlets through the app binary: a mistake in a query is reported at its line and
//! column in the blueprint, by `verify` and by `run`, which then starts nothing; and a SQL
//! streamlet asked for exactly-once gives the hand-written streamlet's results.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel_app_test::{run_to_end, stderr_of, stdout_of};

/// The q1-sql blueprint with `from` replaced by `to`, written into `directory`.
fn blueprint_with(directory: &Path, from: &str, to: &str) -> String {
    query_blueprint_with("q1-sql", directory, from, to)
}

/// The blueprint of `query` with `from` replaced by `to`, written into `directory`.
fn query_blueprint_with(query: &str, directory: &Path, from: &str, to: &str) -> String {
    let original = format!("{}/blueprints/{query}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(original).unwrap();
    assert!(text.contains(from), "{from}");
    let path = directory.join("blueprint.toml");
    std::fs::write(&path, text.replace(from, to)).unwrap();
    path.to_str().unwrap().to_owned()
}

fn nexmark(args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command.args(args).env("RUST_LOG", "warn");
    run_to_end(command, Duration::from_secs(60))
}

/// Runs `blueprint` to its end on the embedded log in `data`, its generator writing `events`.
fn run_generated(blueprint: &str, data: &Path, events: u32) {
    let output = nexmark(&[
        "run",
        blueprint,
        "--data-dir",
        data.to_str().unwrap(),
        "--view",
        "plain",
        "--admin",
        "off",
        "--set",
        &format!("generator.count={events}"),
    ]);
    assert!(output.status.success(), "{}", stderr_of(&output));
}

#[test]
fn an_unknown_column_is_reported_at_its_place_with_the_closest_name() {
    let directory = tempfile::tempdir().unwrap();
    let blueprint = blueprint_with(
        directory.path(),
        "price * 89 / 100 AS price",
        "prices * 89 / 100 AS price",
    );
    let output = nexmark(&["verify", &blueprint]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(report.contains("error[InvalidSqlQuery]: SQL streamlet 'q1': no field named prices. Did you mean 'bids.price'?"), "{report}");
    // Line 11 of the file, column 25: where `prices` is written.
    assert!(report.contains("blueprint.toml:11:25"), "{report}");

    let output = nexmark(&["verify", &blueprint, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&output)).unwrap();
    let problem = &json[0];
    assert_eq!(problem["code"], "InvalidSqlQuery", "{json}");
    assert_eq!(
        (&problem["line"], &problem["column"]),
        (&11.into(), &25.into())
    );
    assert_eq!(problem["facts"]["streamlet"], "q1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_in_its_own_file_runs_and_its_mistakes_are_placed_in_that_file() {
    let directory = tempfile::tempdir().unwrap();
    let query = "SELECT auction, bidder, price * 89 / 100 AS price, date_time, extra\nFROM bids\n";
    let blueprint = query_blueprint_with(
        "q1-sql",
        directory.path(),
        &format!("sql = \"\"\"\n{query}\"\"\""),
        "sql-file = \"queries/q1.sql\"",
    );
    let queries = directory.path().join("queries");
    std::fs::create_dir(&queries).unwrap();

    let output = nexmark(&["verify", &blueprint]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(
        report.contains("error[InvalidSqlQuery]: SQL streamlet 'q1': cannot read its query file"),
        "{report}"
    );
    assert!(report.contains("blueprint.toml:10:12"), "{report}");

    std::fs::write(
        queries.join("q1.sql"),
        query.replace("price * 89", "prices * 89"),
    )
    .unwrap();
    let output = nexmark(&["verify", &blueprint]);
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(report.contains("no field named prices"), "{report}");
    // Line 1, column 25 of the query's file, quoted from it.
    assert!(report.contains("queries/q1.sql:1:25"), "{report}");
    assert!(
        report.contains("1 | SELECT auction, bidder, prices * 89 / 100 AS price"),
        "{report}"
    );

    std::fs::write(queries.join("q1.sql"), query).unwrap();
    let data = directory.path().join("data");
    run_generated(&blueprint, &data, 2_000);
    let backend = runnel_app_test::open(&data);
    let bids: Vec<runnel_nexmark::model::Bid> =
        runnel_app_test::read_values(&backend, "bids").await;
    let results: Vec<runnel_nexmark::model::Bid> =
        runnel_app_test::read_values(&backend, "q1-sql-results").await;
    assert!(!bids.is_empty());
    let converted: Vec<i64> = bids.iter().map(|bid| bid.price * 89 / 100).collect();
    let mut prices: Vec<i64> = results.iter().map(|bid| bid.price).collect();
    let mut expected = converted.clone();
    prices.sort_unstable();
    expected.sort_unstable();
    assert_eq!(prices, expected);
}

#[test]
fn late_results_need_an_allowed_lateness_which_the_blueprint_gives() {
    let directory = tempfile::tempdir().unwrap();
    let grouping = "GROUP BY B.bidder, SESSION(B.date_time, INTERVAL '10' SECOND)\n";
    let late = format!("{grouping}EMIT WITHOUT DELAY AFTER WATERMARK\n");
    let blueprint = query_blueprint_with("q11-sql", directory.path(), grouping, &late);
    let output = nexmark(&["verify", &blueprint]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(
        report.contains("EMIT ... AFTER WATERMARK sends results for rows that come after a window's end, and its windows are not kept past it: say how long in the streamlet's declaration, as allowed-lateness = \"10 minutes\""),
        "{report}"
    );
    // Line 18, where EMIT is written.
    assert!(report.contains("blueprint.toml:18:1"), "{report}");

    let kept = format!("{late}\"\"\"\nallowed-lateness = \"1 minute\"\n");
    let blueprint = query_blueprint_with(
        "q11-sql",
        directory.path(),
        &format!("{grouping}\"\"\"\n"),
        &kept,
    );
    let output = nexmark(&["verify", &blueprint]);
    assert!(output.status.success(), "{}", stderr_of(&output));

    let blueprint = query_blueprint_with(
        "q11-sql",
        directory.path(),
        "record-name",
        "allowed-lateness = \"soon\"\nrecord-name",
    );
    let output = nexmark(&["verify", &blueprint]);
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(
        report.contains("'allowed-lateness' of streamlet 'q11': 'soon' is not a duration"),
        "{report}"
    );
}

#[test]
fn run_refuses_a_query_it_cannot_run_and_starts_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let blueprint = blueprint_with(directory.path(), "FROM bids", "FROM bids\nORDER BY price");
    let data = directory.path().join("data");
    let output = nexmark(&["run", &blueprint, "--data-dir", data.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let report = stderr_of(&output);
    assert!(
        report.contains("ORDER BY is not supported: an unbounded stream has no end to sort at"),
        "{report}"
    );
    assert!(
        report.contains("has errors; nothing was started"),
        "{report}"
    );
    assert!(!data.exists(), "nothing was started, not even the log");
}

#[test]
fn a_table_no_topic_feeds_is_named() {
    let directory = tempfile::tempdir().unwrap();
    let blueprint = blueprint_with(directory.path(), "FROM bids", "FROM bid");
    let output = nexmark(&["verify", &blueprint]);
    let report = stdout_of(&output) + &stderr_of(&output);
    assert!(
        report.contains("table 'bid' is not an input of this query; its inputs are 'bids'"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_sql_streamlet_gives_the_streamlets_results() {
    use runnel::testkit::TestRun;
    use runnel_nexmark::generator::{Generator, GeneratorConfig};
    use runnel_nexmark::queries::q2;

    let directory = tempfile::tempdir().unwrap();
    let blueprint = query_blueprint_with(
        "q2-sql",
        directory.path(),
        "record-name = \"AuctionPrice\"",
        "record-name = \"AuctionPrice\"\ndelivery = \"exactly-once\"",
    );
    let data = directory.path().join("data");
    run_generated(&blueprint, &data, 20_000);
    // The tools decode the SQL streamlet's output with the schema its query gives it.
    let tail = nexmark(&[
        "tail",
        "q2-sql-results",
        "--values",
        "--blueprint",
        &blueprint,
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert!(tail.status.success(), "{}", stderr_of(&tail));
    let tailed: Vec<serde_json::Value> = stdout_of(&tail)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let backend = runnel_app_test::open(&data);
    let mut results: Vec<q2::AuctionPrice> =
        runnel_app_test::read_values(&backend, "q2-sql-results").await;
    assert_eq!(tailed.len(), results.len());
    assert_eq!(tailed[0]["auction"], results[0].auction);
    assert_eq!(tailed[0]["price"], results[0].price);
    let bids = Generator::new(GeneratorConfig::default())
        .unwrap()
        .streams(20_000)
        .bids;
    let mut expected = TestRun::new(q2::streamlet())
        .input(q2::IN, bids)
        .run()
        .await
        .unwrap()
        .output(q2::OUT);
    assert!(!expected.is_empty());
    let key = |price: &q2::AuctionPrice| (price.auction, price.price);
    results.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(results, expected);
}

/// Runs the q11-sql blueprint over `count` generated events in `data`.
fn generate(blueprint: &str, data: &Path, count: u64) {
    let output = nexmark(&[
        "run",
        blueprint,
        "--data-dir",
        data.to_str().unwrap(),
        "--view",
        "off",
        "--admin",
        "off",
        "--set",
        &format!("generator.count={count}"),
    ]);
    assert!(output.status.success(), "{}", stderr_of(&output));
}

#[test]
fn an_ad_hoc_query_reads_the_topics_as_tables() {
    use runnel_nexmark::generator::{Generator, GeneratorConfig};
    use std::collections::BTreeMap;

    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data");
    let blueprint = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprints/q11-sql.toml");
    generate(blueprint, &data, 5_000);
    let source = [
        "--blueprint",
        blueprint,
        "--data-dir",
        data.to_str().unwrap(),
    ];

    // A group window over the bids topic, as JSON lines.
    let query = "SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, \
                 TUMBLE_START(date_time, INTERVAL '10' SECOND) AS starts \
                 FROM bids WHERE price > 1000 \
                 GROUP BY bidder, TUMBLE(date_time, INTERVAL '10' SECOND)";
    let output = nexmark(&[&["sql", query, "--format", "json"][..], &source].concat());
    assert!(output.status.success(), "{}", stderr_of(&output));
    let mut printed: Vec<(i64, i64, i64, i64)> = stdout_of(&output)
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                line.starts_with("{\"bidder\":"),
                "members in column order: {line}"
            );
            let get = |name: &str| row[name].as_i64().unwrap();
            (get("bidder"), get("starts"), get("bids"), get("total"))
        })
        .collect();
    printed.sort_unstable();
    let mut expected: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    let bids = Generator::new(GeneratorConfig::default())
        .unwrap()
        .streams(5_000)
        .bids;
    for bid in bids.iter().filter(|bid| bid.price > 1000) {
        let entry = expected
            .entry((bid.bidder, bid.date_time - bid.date_time.rem_euclid(10_000)))
            .or_default();
        *entry = (entry.0 + 1, entry.1 + bid.price);
    }
    let expected: Vec<(i64, i64, i64, i64)> = expected
        .into_iter()
        .map(|((bidder, starts), (count, total))| (bidder, starts, count, total))
        .collect();
    assert!(expected.len() > 50, "{}", expected.len());
    assert_eq!(printed, expected);

    // A table, over a topic whose name is quoted, the output of the SQL streamlet.
    let output = nexmark(
        &[&["sql", "SELECT COUNT(*) AS sessions FROM \"q11-sql-results\" GROUP BY TUMBLE(starttime, INTERVAL '1' HOUR)"][..], &source].concat(),
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    let table = stdout_of(&output);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "sessions");
    assert_eq!(lines[1], "--------");
    let sessions: usize = lines[2].trim().parse().unwrap();
    assert!(sessions > 50, "{table}");
    assert_eq!(lines[3], "(1 row)");

    // An aggregate without a window: with --changelog, its changes, each with its kind,
    // fold into the table.
    let highest_by_remainder =
        "SELECT auction % 3 AS remainder, MAX(price) AS highest FROM bids GROUP BY auction % 3";
    let output = nexmark(
        &[
            &[
                "sql",
                highest_by_remainder,
                "--format",
                "json",
                "--changelog",
            ][..],
            &source,
        ]
        .concat(),
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    let mut folded: BTreeMap<i64, i64> = BTreeMap::new();
    for line in stdout_of(&output).lines() {
        assert!(line.starts_with("{\"op\":"), "the kind first: {line}");
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let (remainder, highest) = (
            row["remainder"].as_i64().unwrap(),
            row["highest"].as_i64().unwrap(),
        );
        match row["op"].as_str().unwrap() {
            "+I" | "+U" => assert_eq!(folded.insert(remainder, highest), None),
            "-U" | "-D" => assert_eq!(folded.remove(&remainder), Some(highest)),
            other => panic!("unknown kind {other}"),
        }
    }
    let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
    for bid in &bids {
        let highest = expected.entry(bid.auction % 3).or_insert(bid.price);
        *highest = (*highest).max(bid.price);
    }
    assert_eq!(folded, expected);

    // Without it, the rows those changes leave: one per group, no kind.
    let output = nexmark(&[&["sql", highest_by_remainder][..], &source].concat());
    assert!(output.status.success(), "{}", stderr_of(&output));
    let table = stdout_of(&output);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "remainder | highest", "{table}");
    let rows: BTreeMap<i64, i64> = lines[2..lines.len() - 1]
        .iter()
        .map(|line| {
            let (remainder, highest) = line.split_once(" | ").unwrap();
            (remainder.trim().parse().unwrap(), highest.parse().unwrap())
        })
        .collect();
    assert_eq!(rows, expected, "{table}");
    assert_eq!(lines.last(), Some(&"(3 rows)"), "{table}");

    // A mistake, shown where it is.
    let output = nexmark(&[&["sql", "SELECT bidder, pricee FROM bids"][..], &source].concat());
    assert_eq!(output.status.code(), Some(1));
    let report = stderr_of(&output);
    assert!(
        report.contains("the query, at 1:16: no field named pricee. Did you mean 'bids.price'?"),
        "{report}"
    );
    assert!(
        report.contains("  SELECT bidder, pricee FROM bids\n                 ^"),
        "{report}"
    );
}

#[test]
fn a_followed_ad_hoc_query_prints_new_results_as_they_come() {
    use runnel_app_test::Running;

    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data");
    let blueprint = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprints/q11-sql.toml");
    generate(blueprint, &data, 2_000);
    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["sql", "SELECT auction, price FROM bids WHERE price > 100"])
        .args([
            "--follow",
            "--format",
            "json",
            "--blueprint",
            blueprint,
            "--data-dir",
        ])
        .arg(&data)
        .env("RUST_LOG", "warn");
    let mut following = Running::start(command);
    let first = following.wait_for_line("a bid", Duration::from_secs(30), |line| {
        line.starts_with("{\"auction\":")
    });
    assert!(first.contains("\"price\":"), "{first}");
    // A bid appended while the query follows shows up.
    let mut produce = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    produce
        .args(["produce", "bids", "--blueprint", blueprint, "--data-dir"])
        .arg(&data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut producing = produce.spawn().unwrap();
    use std::io::Write as _;
    let bid = r#"{"auction": 424242, "bidder": 7, "price": 5000, "date_time": 1704067300000, "extra": ""}"#;
    producing
        .stdin
        .take()
        .unwrap()
        .write_all(bid.as_bytes())
        .unwrap();
    let produced = producing.wait_with_output().unwrap();
    assert!(produced.status.success(), "{}", stderr_of(&produced));
    let line = following.wait_for_line("the new bid", Duration::from_secs(30), |line| {
        line.contains("424242")
    });
    assert_eq!(line, r#"{"auction":424242,"price":5000}"#);
    following.child.kill().unwrap();
    following.child.wait().unwrap();
}

/// A SQL streamlet over a topic only clients outside the blueprint write: the topic's
/// declared `schema` types the table, and is what `produce` writes with.
#[test]
fn a_table_over_a_topic_outside_clients_write_is_typed_by_its_declared_schema() {
    outside_bids(&format!("schema = '''\n{BID_SCHEMA}'''"), None);
}

#[test]
fn a_topics_schema_file_types_a_table_as_its_schema_would() {
    outside_bids(
        "schema-file = \"schemas/bid.avsc\"",
        Some(("schemas/bid.avsc", BID_SCHEMA)),
    );
}

/// The Avro schema outside clients write `bids` with.
const BID_SCHEMA: &str = r#"{"type": "record", "name": "Bid", "namespace": "shop",
 "fields": [{"name": "auction", "type": "long"}, {"name": "price", "type": "long"}]}
"#;

/// Verifies a blueprint whose topic `bids`, written from outside, declares its schema with
/// `declaration` (with `file`, a path beside the blueprint and its text), writes bids into
/// it with `produce`, runs the app and reads the query's results with `tail`.
fn outside_bids(declaration: &str, file: Option<(&str, &str)>) {
    use runnel_app_test::Running;

    let directory = tempfile::tempdir().unwrap();
    let blueprint = directory.path().join("blueprint.toml");
    std::fs::write(
        &blueprint,
        format!(
            r#"name = "outside-bids"

[streamlets.expensive]
sql = "SELECT auction, price * 2 AS doubled FROM bids WHERE price > 1000"
record-name = "Expensive"

[topics.bids]
{declaration}
consumers = ["expensive.bids"]

[topics.expensive-bids]
producers = ["expensive.out"]
"#
        ),
    )
    .unwrap();
    if let Some((path, text)) = file {
        let path = directory.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let blueprint = blueprint.to_str().unwrap();
    let verified = nexmark(&["verify", blueprint]);
    assert!(verified.status.success(), "{}", stderr_of(&verified));
    let report = stdout_of(&verified) + &stderr_of(&verified);
    assert!(!report.contains("TopicWithoutProducers"), "{report}");

    // An outside client writes the bids first: the app, once running, holds the log.
    let data = directory.path().join("data");
    let data = data.to_str().unwrap();
    let mut produce = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    produce
        .args([
            "produce",
            "bids",
            "--blueprint",
            blueprint,
            "--data-dir",
            data,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut producing = produce.spawn().unwrap();
    use std::io::Write as _;
    producing
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"auction\": 1, \"price\": 500}\n{\"auction\": 2, \"price\": 1500}\n{\"auction\": 3, \"price\": 2500}\n")
        .unwrap();
    let produced = producing.wait_with_output().unwrap();
    assert!(produced.status.success(), "{}", stderr_of(&produced));

    let mut command = Command::new(env!("CARGO_BIN_EXE_nexmark"));
    command
        .args(["run", blueprint, "--data-dir", data, "--view", "plain"])
        .args(["--admin", "off", "--status-every", "100ms"]);
    let mut running = Running::start(command);
    running.wait_for_line("two results", Duration::from_secs(30), |line| {
        line.contains("streamlet=expensive ") && line.contains("total_out=2")
    });
    running.child.kill().unwrap();
    running.child.wait().unwrap();
    let tail = nexmark(&[
        "tail",
        "expensive-bids",
        "--values",
        "--blueprint",
        blueprint,
        "--data-dir",
        data,
    ]);
    assert!(tail.status.success(), "{}", stderr_of(&tail));
    assert_eq!(
        stdout_of(&tail),
        "{\"auction\":2,\"doubled\":3000}\n{\"auction\":3,\"doubled\":5000}\n"
    );
}
