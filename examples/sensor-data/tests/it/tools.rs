//! The topic and offset tools through the app binary and the `runnel` command, on the
//! embedded log and on tansu: list, tail (decoded as a plain consumer reads it), produce,
//! dead letters, groups, and offset resets with a dry run.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use runnel_kafka::test_broker::Tansu;
use sensor_data::model::Metric;
use serde_json::Value;

use crate::kafka_support::{app_on, read_topic};
use crate::support::{BLUEPRINT, app, decode, open, read_values, run_to_end, stderr_of, stdout_of};

/// The app binary running a tool: `args` then where the topics are.
fn tool(args: &[&str], place: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(args)
        .args(["--blueprint", BLUEPRINT])
        .args(place);
    command
}

/// Runs `command` with `input` on its standard input.
fn run_with_input(mut command: Command, input: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn succeeded(output: &Output) -> String {
    assert!(output.status.success(), "stderr:\n{}", stderr_of(output));
    stdout_of(output)
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A Metric as the tools print it.
fn metric_json(metric: &Metric) -> Value {
    serde_json::json!({
        "device_id": metric.device_id, "timestamp": metric.timestamp,
        "sequence": metric.sequence, "name": metric.name, "value": metric.value,
    })
}

fn data_dir_arguments(data: &Path) -> Vec<String> {
    vec!["--data-dir".to_owned(), data.display().to_string()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_inspect_and_repair_an_app_on_the_embedded_log() {
    let data = tempfile::tempdir().unwrap();
    let place = data_dir_arguments(data.path());
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args([
        "--set",
        "generator.count=40",
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(60));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let listing = succeeded(&tool(&["topics"], &place).output().unwrap());
    let metrics_row = listing.lines().find(|l| l.starts_with("metrics ")).unwrap();
    let columns: Vec<&str> = metrics_row.split_whitespace().collect();
    assert_eq!(&columns[..3], ["metrics", "2", "120"], "{listing}");

    // The decoded dump equals what a reader of the log decodes.
    let backend = open(data.path());
    let expected: Vec<Value> = read_values::<Metric>(&backend, "metrics")
        .await
        .iter()
        .map(metric_json)
        .collect();
    drop(backend);
    let dumped = succeeded(
        &tool(&["tail", "metrics", "--values"], &place)
            .output()
            .unwrap(),
    );
    assert_eq!(lines(&dumped), expected);
    let last = succeeded(
        &tool(&["tail", "metrics", "--last", "1", "-p", "1"], &place)
            .output()
            .unwrap(),
    );
    let last = lines(&last);
    assert_eq!(last.len(), 1);
    assert_eq!(
        (last[0]["partition"].as_u64(), last[0]["offset"].as_u64()),
        (Some(1), Some(59))
    );

    // JSON in, Avro on the topic; a bad line writes nothing and says which line.
    let reading = r#"{"device_id":"d-1","timestamp":5,"sequence":1000,"measurements":{"power":1.0,"rotor_speed":-3.0,"wind_speed":2.0}}"#;
    let bad = run_with_input(
        tool(&["produce", "sensor-data"], &place),
        &format!("{reading}\n{{\"device_id\": 3}}\n"),
    );
    assert!(!bad.status.success());
    assert!(stderr_of(&bad).contains("line 2: "), "{}", stderr_of(&bad));
    let produced = run_with_input(
        tool(&["produce", "sensor-data", "-p", "0"], &place),
        &format!("{reading}\n"),
    );
    assert!(
        succeeded(&produced).starts_with("1 records written to topic 'sensor-data' (first at 0/20")
    );
    let garbage = data.path().join("garbage.bin");
    std::fs::write(&garbage, [0xde, 0xad, 0xbe, 0xef]).unwrap();
    let mut raw = tool(
        &[
            "produce",
            "sensor-data",
            "-p",
            "1",
            "--raw",
            garbage.to_str().unwrap(),
        ],
        &place,
    );
    succeeded(&raw.output().unwrap());

    // Run again: the produced reading flows through, the garbage is dead-lettered.
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args(["--set", "generator.count=0"]);
    assert!(
        run_to_end(command, Duration::from_secs(60))
            .status
            .success()
    );
    let tail = succeeded(
        &tool(&["tail", "invalid-metrics", "--values"], &place)
            .output()
            .unwrap(),
    );
    assert!(
        lines(&tail).iter().any(|v| v["metric"]["sequence"] == 1000),
        "{tail}"
    );
    let dead = lines(&succeeded(
        &tool(&["dead-letters"], &place).output().unwrap(),
    ));
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["origin"]["topic"], "sensor-data");
    assert_eq!(dead[0]["origin"]["partition"], 1);
    assert_eq!(dead[0]["origin"]["offset"], 20);
    assert_eq!(dead[0]["origin"]["streamlet"], "to-metrics");
    assert!(
        dead[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("does not decode: ")
    );
    assert_eq!(dead[0]["value"]["base64"], "3q2+7w==");

    let groups = succeeded(&tool(&["groups"], &place).output().unwrap());
    let row = groups
        .lines()
        .find(|l| {
            l.starts_with("sensor-data.validation.in")
                && l.contains("metrics ")
                && l.split_whitespace().nth(2) == Some("0")
        })
        .unwrap();
    assert_eq!(row.split_whitespace().nth(5), Some("0"), "no lag: {groups}");

    // A dry run changes nothing; --execute does.
    let dry = succeeded(
        &tool(
            &[
                "reset-offsets",
                "sensor-data.validation.in",
                "--to-offset",
                "10",
            ],
            &place,
        )
        .output()
        .unwrap(),
    );
    assert!(dry.contains("dry run: nothing changed"), "{dry}");
    let unchanged = lines(&succeeded(
        &tool(&["groups", "sensor-data.validation.in", "--json"], &place)
            .output()
            .unwrap(),
    ));
    assert!(unchanged.iter().all(|p| p["lag"] == 0));
    let mut executed = tool(
        &[
            "reset-offsets",
            "sensor-data.validation.in",
            "--to-offset",
            "10",
            "--execute",
        ],
        &place,
    );
    assert!(
        succeeded(&executed.output().unwrap())
            .contains("committed for group 'sensor-data.validation.in'")
    );
    let moved = lines(&succeeded(
        &tool(&["groups", "sensor-data.validation.in", "--json"], &place)
            .output()
            .unwrap(),
    ));
    assert!(moved.iter().all(|p| p["committed"] == 10), "{moved:?}");
}

#[test]
fn on_kafka_the_decoded_dump_equals_what_a_plain_consumer_reads() {
    let broker = Tansu::start();
    let mut command = app_on(&broker, &["run", BLUEPRINT]);
    command.args([
        "--set",
        "generator.count=50",
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(120));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let place = broker.app_arguments();

    let plain: Vec<Value> = read_topic(
        &broker,
        "metrics",
        Duration::from_secs(30),
        crate::kafka_support::at_least(150),
    )
    .iter()
    .map(|seen| metric_json(&decode(&seen.value)))
    .collect();
    let dumped = succeeded(
        &tool(&["tail", "metrics", "--values"], &place)
            .output()
            .unwrap(),
    );
    let mut dumped = lines(&dumped);
    let mut plain = plain;
    let order = |v: &Value| {
        (
            v["sequence"].as_i64(),
            v["name"].as_str().map(str::to_owned),
        )
    };
    dumped.sort_by_key(order);
    plain.sort_by_key(order);
    assert_eq!(dumped, plain);

    // tansu reports a partition's end as its last batch's base offset plus one, so counts
    // and lag are not checked here (they are on the embedded log); committed offsets are.
    let listing = succeeded(&tool(&["topics"], &place).output().unwrap());
    assert!(
        listing
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["metrics", "2"])),
        "{listing}"
    );
    let committed = |text: &str| -> Vec<u64> {
        lines(text)
            .iter()
            .map(|p| p["committed"].as_u64().unwrap())
            .collect()
    };
    let groups = succeeded(
        &tool(&["groups", "sensor-data.validation.in", "--json"], &place)
            .output()
            .unwrap(),
    );
    assert_eq!(committed(&groups).iter().sum::<u64>(), 150, "{groups}");
    let dry = succeeded(
        &tool(
            &[
                "reset-offsets",
                "sensor-data.validation.in",
                "--to-earliest",
            ],
            &place,
        )
        .output()
        .unwrap(),
    );
    assert!(dry.contains("dry run"), "{dry}");
    let mut executed = tool(
        &[
            "reset-offsets",
            "sensor-data.validation.in",
            "--to-earliest",
            "--execute",
        ],
        &place,
    );
    succeeded(&executed.output().unwrap());
    let moved = succeeded(
        &tool(&["groups", "sensor-data.validation.in", "--json"], &place)
            .output()
            .unwrap(),
    );
    assert_eq!(committed(&moved), [0, 0], "{moved}");
    let dead = succeeded(&tool(&["dead-letters"], &place).output().unwrap());
    assert_eq!(dead, "", "no dead letters in a clean run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_values_stay_apart_from_empty_ones_in_produce_tail_and_dead_letters() {
    let data = tempfile::tempdir().unwrap();
    let place = data_dir_arguments(data.path());
    // A run that generates nothing creates the topics.
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args(["--set", "generator.count=0"]);
    assert!(
        run_to_end(command, Duration::from_secs(60))
            .status
            .success()
    );

    // A tombstone from an envelope, an empty value from an empty file, and a tombstone
    // from an empty file with -Z (kcat's empty-as-null).
    let envelope = run_with_input(
        tool(&["produce", "sensor-data", "-p", "0", "--envelope"], &place),
        "{\"key\": \"d-1\", \"value\": null}\n",
    );
    succeeded(&envelope);
    let empty = data.path().join("empty.bin");
    std::fs::write(&empty, []).unwrap();
    let empty = empty.to_str().unwrap();
    let raw = ["produce", "sensor-data", "-p", "0", "--raw", empty];
    succeeded(
        &tool(&[&raw[..], &["-k", "d-2"]].concat(), &place)
            .output()
            .unwrap(),
    );
    succeeded(
        &tool(&[&raw[..], &["-k", "d-3", "-Z"]].concat(), &place)
            .output()
            .unwrap(),
    );

    let tailed = lines(&succeeded(
        &tool(&["tail", "sensor-data"], &place).output().unwrap(),
    ));
    let seen: Vec<(Value, Value, bool)> = tailed
        .iter()
        .map(|r| {
            (
                r["key"].clone(),
                r["value"].clone(),
                r.get("undecoded").is_some(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Value::from("d-1"), Value::Null, false),
            (Value::from("d-2"), Value::from(""), true),
            (Value::from("d-3"), Value::Null, false),
        ],
        "null prints as null, empty as \"\" (with why it does not decode)"
    );
    let raw_tail = |extra: &[&str]| {
        succeeded(
            &tool(
                &[&["tail", "sensor-data", "--raw"][..], extra].concat(),
                &place,
            )
            .output()
            .unwrap(),
        )
    };
    assert_eq!(raw_tail(&["-Z"]), "NULL\n\nNULL\n");
    assert_eq!(raw_tail(&[]), "\n\n\n", "without -Z, as kcat");

    // The app dead-letters all three; the dead letters keep null and empty apart.
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args(["--set", "generator.count=0"]);
    assert!(
        run_to_end(command, Duration::from_secs(60))
            .status
            .success()
    );
    let dead = lines(&succeeded(
        &tool(&["dead-letters"], &place).output().unwrap(),
    ));
    let letters: Vec<(Value, Value, Value)> = dead
        .iter()
        .map(|d| {
            (
                d["key"].clone(),
                d["value"].clone(),
                d["origin"]["offset"].clone(),
            )
        })
        .collect();
    assert_eq!(
        letters,
        [
            (Value::from("d-1"), Value::Null, Value::from(0)),
            (Value::from("d-2"), Value::from(""), Value::from(1)),
            (Value::from("d-3"), Value::Null, Value::from(2)),
        ]
    );
    for (letter, null) in dead.iter().zip([true, false, true]) {
        let error = letter["error"].as_str().unwrap();
        assert!(error.starts_with("does not decode: "), "{error}");
        assert_eq!(
            error.contains("value is null (a tombstone)"),
            null,
            "{error}"
        );
        assert_eq!(letter.get("undecoded").is_some(), !null, "{letter}");
    }
}

/// `produce` on an app that never ran (as the generated README says to do first): the log
/// and the topic are created as the run creates them, every record is sent before the
/// acknowledgements are waited for, and the count is reported.
#[test]
fn produce_feeds_an_app_that_never_ran() {
    let data = tempfile::tempdir().unwrap();
    let fresh = data.path().join("not-yet");
    let place = data_dir_arguments(&fresh);
    let records: String = (0..2_000)
        .map(|sequence| {
            let metric = Metric {
                device_id: format!("device-{}", sequence % 7),
                timestamp: 1_700_000_000_000 + sequence,
                sequence,
                name: "power".into(),
                value: sequence as f64,
            };
            metric_json(&metric).to_string() + "\n"
        })
        .collect();
    let produced = run_with_input(tool(&["produce", "metrics"], &place), &records);
    let text = succeeded(&produced);
    assert!(
        text.starts_with("2000 records written to topic 'metrics'"),
        "{text}"
    );
    // The topic has the blueprint's partitions, and holds every record.
    let listed = succeeded(&tool(&["topics"], &place).output().unwrap());
    assert!(listed.contains("metrics"), "{listed}");
    let tailed = succeeded(
        &tool(&["tail", "metrics", "--values"], &place)
            .output()
            .unwrap(),
    );
    assert_eq!(tailed.lines().count(), 2_000, "{tailed}");

    // A topic the blueprint does not have is still refused, saying which exist.
    let raw = data.path().join("record.bin");
    std::fs::write(&raw, b"bytes").unwrap();
    let raw = raw.display().to_string();
    let unknown = run_with_input(tool(&["produce", "nowhere", "--raw", &raw], &place), "");
    assert!(!unknown.status.success());
    assert!(
        stderr_of(&unknown).contains("topic 'nowhere' not found; the topics are: metrics"),
        "{}",
        stderr_of(&unknown)
    );
}

/// A reader that stops early (`describe | head -1`, `verify | head`) ends the command quietly:
/// no panic, success.
#[test]
fn commands_end_quietly_when_their_reader_closes_the_pipe() {
    for args in [
        vec!["describe"],
        vec!["verify", BLUEPRINT],
        vec!["verify", BLUEPRINT, "--format", "json"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_sensor-data"))
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = stderr_of(&output);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
