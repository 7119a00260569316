//! The admin endpoint of a running app: metrics move, lag shows and drains, `status` prints
//! tables and JSON, and the web view draws the blueprint with live numbers (in headless
//! Chromium).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use runnel_app_test::chromium::{attribute_values, chromium, rendered};

use crate::support::{BLUEPRINT, Running, app, run_to_end, stdout_of};

/// A free port on 127.0.0.1 for the admin endpoint.
fn free_admin_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The body of `GET path` from `address`.
fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_owned()
}

/// The sum of every sample of `name` whose labels contain `filter` (e.g. `streamlet="a"`).
fn metric(text: &str, name: &str, filter: &str) -> f64 {
    text.lines()
        .filter(|line| {
            line.starts_with(name) && line[name.len()..].starts_with('{') && line.contains(filter)
        })
        .filter_map(|line| {
            line.rsplit_once(' ')
                .and_then(|(_, value)| value.parse::<f64>().ok())
        })
        .sum()
}

/// Polls `/metrics` until `done` holds, returning the last scrape.
fn scrape_until(address: &str, limit: Duration, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let text = get(address, "/metrics");
        if done(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}; last scrape:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn start(data: &Path, admin: &str, sets: &[&str]) -> Running {
    let mut command = app(&["run", BLUEPRINT], data);
    command.args(["--admin", admin]);
    for set in sets {
        command.args(["--set", set]);
    }
    let running = Running::start(command);
    running.wait_for("ready:", Duration::from_secs(30));
    running
}

fn stop(mut running: Running) {
    let pid = running.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(running.child.wait().unwrap().success());
}

const LAG: &str = "runnel_consumer_lag_records";

#[test]
fn counters_move_and_a_slowed_consumer_lags_then_drains() {
    let data = tempfile::tempdir().unwrap();
    let admin = free_admin_address();
    // 200 readings/s make about 170 valid metrics/s; 20 ms per record handles 50 of them.
    let slow = start(
        data.path(),
        &admin,
        &[
            "generator.records-per-second=200",
            "valid-logger.processing-delay=20ms",
        ],
    );
    let first = get(&admin, "/metrics");
    let lagging = scrape_until(
        &admin,
        Duration::from_secs(30),
        "valid-logger lagging",
        |text| metric(text, LAG, "streamlet=\"valid-logger\"") > 200.0,
    );
    let moved =
        |name: &str, filter: &str| metric(&lagging, name, filter) > metric(&first, name, filter);
    assert!(
        moved("runnel_records_in_total", "streamlet=\"to-metrics\""),
        "records in move"
    );
    assert!(
        moved("runnel_records_out_total", "streamlet=\"validation\""),
        "records out move"
    );
    assert!(moved(
        "runnel_processing_latency_seconds_count",
        "streamlet=\"validation\""
    ));
    assert_eq!(
        metric(&lagging, "runnel_ready", ""),
        0.0,
        "runnel_ready has no labels"
    );
    assert!(lagging.contains("\nrunnel_ready 1\n"));
    stop(slow);

    // Without the delay the backlog drains.
    let fast = start(data.path(), &admin, &["generator.records-per-second=5"]);
    scrape_until(
        &admin,
        Duration::from_secs(60),
        "the backlog draining",
        |text| {
            metric(text, LAG, "streamlet=\"valid-logger\"") == 0.0
                && metric(
                    text,
                    "runnel_records_in_total",
                    "streamlet=\"valid-logger\"",
                ) > 0.0
        },
    );
    stop(fast);
}

#[test]
fn status_prints_tables_and_json_from_a_running_app() {
    let data = tempfile::tempdir().unwrap();
    let admin = free_admin_address();
    let running = start(data.path(), &admin, &["generator.records-per-second=50"]);
    // A sample taken after records reached the middle of the graph.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status: serde_json::Value = serde_json::from_str(&get(&admin, "/api/status")).unwrap();
        if status["streamlets"][2]["records_in"].as_u64() > Some(0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no records reached validation: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = |output: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
        command.args(["status", "--admin", &admin, "-o", output]);
        run_to_end(command, Duration::from_secs(30))
    };
    let table = stdout_of(&status("table"));
    assert!(table.starts_with("app sensor-data (ready)\n"), "{table}");
    for name in [
        "generator",
        "to-metrics",
        "validation",
        "valid-logger",
        "invalid-logger",
    ] {
        assert!(
            table
                .lines()
                .any(|line| line.starts_with(name) && line.contains("running")),
            "{name}: {table}"
        );
    }
    assert!(
        table.lines().any(|line| line.starts_with("valid-metrics ")),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&status("json"))).unwrap();
    assert_eq!(json["app"], "sensor-data");
    assert_eq!(json["streamlets"].as_array().unwrap().len(), 5);
    assert_eq!(json["topics"].as_array().unwrap().len(), 4);
    assert!(json["streamlets"][1]["records_in"].as_u64().unwrap() > 0);
    stop(running);
}

#[test]
fn the_web_view_draws_every_streamlet_and_topic_and_its_numbers_update() {
    let data = tempfile::tempdir().unwrap();
    let admin = free_admin_address();
    let running = start(data.path(), &admin, &["generator.records-per-second=50"]);
    let url = format!("http://{admin}/");
    let first = rendered(&data.path().join("chromium-1"), &url);
    let records_in = |text: &str| metric(text, "runnel_records_in_total", "");
    let seen = records_in(&get(&admin, "/metrics"));
    // The page shows a sample a second old at most: render again well after the counters
    // moved on.
    scrape_until(
        &admin,
        Duration::from_secs(30),
        "records flowing on",
        |text| records_in(text) > seen + 1000.0,
    );
    let second = rendered(&data.path().join("chromium-2"), &url);

    let mut streamlets = attribute_values(&second, "data-streamlet");
    streamlets.sort();
    assert_eq!(
        streamlets,
        [
            "generator",
            "invalid-logger",
            "to-metrics",
            "valid-logger",
            "validation"
        ]
    );
    let mut topics = attribute_values(&second, "data-topic");
    topics.sort();
    assert_eq!(
        topics,
        ["invalid-metrics", "metrics", "sensor-data", "valid-metrics"]
    );
    let total = |dom: &str| -> u64 {
        attribute_values(dom, "data-records-in")
            .iter()
            .filter_map(|v| v.parse::<u64>().ok())
            .sum()
    };
    assert!(
        total(&second) > total(&first),
        "numbers update: {} then {}",
        total(&first),
        total(&second)
    );
    assert!(
        second.contains("role=\"button\"") && second.contains("tabindex=\"0\""),
        "nodes take keyboard focus"
    );

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let screenshot = artifacts.join("web-view.png");
    let status = chromium(
        &data.path().join("chromium-3"),
        &[
            "--virtual-time-budget=4000",
            "--window-size=1400,900",
            &format!("--screenshot={}", screenshot.display()),
            &url,
        ],
    )
    .stderr(std::process::Stdio::null())
    .status()
    .unwrap();
    assert!(
        status.success() && screenshot.metadata().unwrap().len() > 10_000,
        "a screenshot was saved"
    );
    println!("screenshot of the web view: {}", screenshot.display());
    stop(running);
}

/// On Kafka, `/metrics` also carries each partition's lag as librdkafka's statistics report
/// it, beside the lag Runnel measures.
#[test]
fn on_kafka_the_metrics_carry_the_lag_librdkafka_reports() {
    let broker = runnel_kafka::test_broker::Tansu::start();
    let admin = free_admin_address();
    let mut command = crate::kafka_support::app_on(&broker, &["run", BLUEPRINT]);
    command.args(["--admin", &admin]);
    let running = Running::start(command);
    running.wait_for("ready:", Duration::from_secs(60));
    let to_metrics = r#"streamlet="to-metrics",inlet="in",topic="sensor-data",partition="#;
    scrape_until(
        &admin,
        Duration::from_secs(60),
        "a client lag sample for to-metrics",
        |text| {
            text.lines().any(|line| {
                line.starts_with("runnel_client_consumer_lag_records{") && line.contains(to_metrics)
            })
        },
    );
    stop(running);
}

/// An app's `status` checks that the endpoint it reached runs that app, and exits 1 (as
/// `runnel status` does) when nothing answers.
#[test]
fn status_refuses_another_apps_endpoint_and_says_when_nothing_answers() {
    // Another app's admin endpoint: answers every request with its status.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let body = r#"{"app":"demo","ready":true,"streamlets":[],"topics":[]}"#;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let status = |admin: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
        command.args(["status", "--admin", admin]);
        run_to_end(command, Duration::from_secs(30))
    };
    let other = status(&address);
    assert_eq!(other.status.code(), Some(1));
    assert_eq!(
        crate::support::stderr_of(&other),
        format!(
            "error: the process at http://{address}/api/status runs app 'demo', not 'sensor-data'\n"
        )
    );
    let nothing = status("127.0.0.1:1");
    assert_eq!(nothing.status.code(), Some(1));
    assert!(
        crate::support::stderr_of(&nothing)
            .starts_with("error: no runnel process answered at http://127.0.0.1:1/api/status"),
        "{}",
        crate::support::stderr_of(&nothing)
    );
}
