use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use call_record_aggregator::model::{CallRecord, CallStats, InvalidRecord, LongCall};
use runnel::serde_json;
use runnel::window::Pane;
use runnel_app_test::wait_until;
use runnel_app_test::{Running, open, read_values};
use runnel_embedded_log::LogInspector;

const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// The valid calls of five minutes or more so far, as the log holds them now.
fn long_valid_calls(inspector: &LogInspector) -> usize {
    use runnel::apache_avro::{self, AvroSchema};
    let partitions = inspector
        .offsets("valid-call-records")
        .map_or(0, |offsets| offsets.len());
    let mut long = 0;
    for partition in 0..partitions as u32 {
        for record in inspector
            .read("valid-call-records", partition, 0, usize::MAX)
            .unwrap_or_default()
        {
            let mut value = record.record.value.as_deref().unwrap_or_default();
            let datum =
                apache_avro::from_avro_datum(&CallRecord::get_schema(), &mut value, None).unwrap();
            let call: CallRecord = apache_avro::from_value(&datum).unwrap();
            long += usize::from(call.duration >= 300);
        }
    }
    long
}

fn records_in(inspector: &LogInspector, topic: &str) -> u64 {
    inspector
        .offsets(topic)
        .map(|offsets| offsets.iter().map(|o| o.end).sum())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_from_every_producer_are_split_and_aggregated_in_windows_of_the_given_size() {
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_call-record-aggregator"));
    command
        .args(["run", BLUEPRINT, "--data-dir"])
        .arg(data.path())
        .args(["--view", "plain"])
        .env("RUST_LOG", "info");
    for setting in [
        "cdr-generator1.count=600",
        "cdr-generator1.records-per-second=200",
        "cdr-generator2.count=400",
        "cdr-generator2.records-per-second=200",
        "cdr-aggregator.group-by-window=1s",
        "cdr-aggregator.watermark=200ms",
        "cdr-ingress.port=0",
        "cdr-ingress.bind-address=127.0.0.1",
    ] {
        command.args(["--set", setting]);
    }
    let mut running = Running::start(command);
    let line = running.wait_for("listening on", Duration::from_secs(60));
    let address = line
        .split("listening on ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let http = |duration: i64, direction: &str, n: i64| CallRecord {
        user: format!("http-{n}"),
        other: "+15550000000".to_owned(),
        direction: direction.to_owned(),
        duration,
        timestamp: now,
    };
    let posted = [
        http(60, "Incoming", 0),
        http(-5, "Incoming", 1),
        http(120, "Outgoing", 2),
        http(30, "Sideways", 3),
        http(90, "Outgoing", 4),
    ];
    let body: String = posted
        .iter()
        .map(|record| serde_json::to_string(record).unwrap() + "\n")
        .collect();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let answer = agent
        .post(&format!("http://{address}/"))
        .send(&body)
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert_eq!(answer, r#"{"accepted":5}"#);

    let inspector = LogInspector::new(data.path()).unwrap();
    wait_until(Duration::from_secs(60), "every record is split", || {
        records_in(&inspector, "valid-call-records")
            + records_in(&inspector, "invalid-call-records")
            == 1005
    });
    wait_until(Duration::from_secs(60), "windows fire", || {
        records_in(&inspector, "call-stats") >= 2
    });
    let long = long_valid_calls(&inspector);
    assert!(long > 100, "{long} long calls");
    wait_until(
        Duration::from_secs(60),
        "the SQL streamlet selects every long call",
        || records_in(&inspector, "long-calls") == long as u64,
    );
    let pid = running.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(running.child.wait().unwrap().success());

    let backend = open(data.path());
    let all: Vec<CallRecord> = read_values(&backend, "call-records").await;
    assert_eq!(all.len(), 1005);
    for prefix in ["north-", "south-", "http-"] {
        assert!(
            all.iter().any(|r| r.user.starts_with(prefix)),
            "records of {prefix}*"
        );
    }
    let invalid: Vec<InvalidRecord> = read_values(&backend, "invalid-call-records").await;
    // Every 50th generated record has a negative duration; two posted ones are invalid.
    assert_eq!(invalid.len(), 600 / 50 + 400 / 50 + 2);
    assert!(
        invalid
            .iter()
            .any(|i| i.error == "direction must be Incoming or Outgoing, got 'Sideways'")
    );
    let valid: Vec<CallRecord> = read_values(&backend, "valid-call-records").await;
    assert_eq!(valid.len(), 1005 - invalid.len());
    assert!(valid.iter().all(|r| r.duration >= 0));

    // The SQL streamlet's output, read as the Rust type the egress reads.
    let long_calls: Vec<LongCall> = read_values(&backend, "long-calls").await;
    let mut expected: Vec<LongCall> = valid
        .iter()
        .filter(|call| call.duration >= 300)
        .map(|call| LongCall {
            user: call.user.clone(),
            direction: call.direction.clone(),
            minutes: call.duration / 60,
        })
        .collect();
    let key = |call: &LongCall| (call.user.clone(), call.direction.clone(), call.minutes);
    expected.sort_by_key(key);
    let mut selected = long_calls.clone();
    selected.sort_by_key(key);
    assert_eq!(selected, expected);

    let late: Vec<CallRecord> = read_values(&backend, "late-call-records").await;
    let panes: Vec<Pane<String, CallStats>> = read_values(&backend, "call-stats").await;
    let mut windows = BTreeMap::new();
    for pane in &panes {
        assert_eq!(
            pane.window_end - pane.window_start,
            1_000,
            "windows of group-by-window"
        );
        assert!(
            windows.insert(pane.window_start, pane).is_none(),
            "each window fires once"
        );
        let in_window =
            |r: &&CallRecord| (pane.window_start..pane.window_end).contains(&r.timestamp);
        let late_here = late.iter().filter(in_window).count() as i64;
        let counted: Vec<&CallRecord> = valid.iter().filter(in_window).collect();
        let calls = counted.len() as i64 - late_here;
        let total: i64 = counted.iter().map(|r| r.duration).sum::<i64>()
            - late
                .iter()
                .filter(in_window)
                .map(|r| r.duration)
                .sum::<i64>();
        assert_eq!(
            (pane.value.calls, pane.value.total_duration),
            (calls, total),
            "{pane:?}"
        );
        assert!((pane.value.average_duration - total as f64 / calls as f64).abs() < 1e-9);
    }
    println!("{} windows fired, {} late records", panes.len(), late.len());
}
