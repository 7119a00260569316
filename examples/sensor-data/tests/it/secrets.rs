//! Secret settings never show: canaries put in the blueprint, local.toml (directly and
//! through an environment variable) and `--kafka-setting` appear in no output, log line,
//! status, metric, descriptor or error.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use runnel_kafka::test_broker::Tansu;

use crate::kafka_support::app_on;
use crate::support::{BLUEPRINT, Running, run_to_end, stderr_of, stdout_of};

const CANARY: &str = "canary-7f3a";

fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The sensor-data blueprint with secrets in a topic's producer and consumer settings, and
/// a config file taking one from the environment. (Only `sasl.password` of the secret
/// settings works without OpenSSL, which Runnel's librdkafka is built without.)
fn write_files(directory: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(BLUEPRINT).unwrap();
    let blueprint = directory.join("blueprint.toml");
    std::fs::write(
        &blueprint,
        format!(
            "{text}\n[topics.metrics.producer-config]\n\"sasl.password\" = \"{CANARY}-producer\"\n[topics.metrics.consumer-config]\n\"sasl.password\" = \"{CANARY}-consumer\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        directory.join("local.toml"),
        "[kafka]\n\"sasl.username\" = \"runnel\"\n\"sasl.password\" = \"${RUNNEL_TEST_SECRET}\"\n",
    )
    .unwrap();
    blueprint
}

#[test]
fn secrets_show_in_no_output_status_metrics_or_descriptor() {
    let broker = Tansu::start();
    let directory = tempfile::tempdir().unwrap();
    let blueprint = write_files(directory.path());
    let blueprint = blueprint.to_str().unwrap();
    let mut command = app_on(&broker, &["run", blueprint]);
    command
        .args([
            "--kafka-setting",
            &format!("sasl.password={CANARY}-argument"),
        ])
        .args([
            "--set",
            "generator.count=300",
            "--set",
            "generator.records-per-second=100",
        ])
        .args(["--admin", "127.0.0.1:0"])
        .env("RUNNEL_TEST_SECRET", format!("{CANARY}-environment"));
    let running = Running::start(command);
    let view = running.wait_for("view: http://", Duration::from_secs(60));
    let address = view
        .split("http://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    running.wait_for("ready:", Duration::from_secs(60));
    let status = get(&address, "/api/status");
    let metrics = get(&address, "/metrics");
    let page = get(&address, "/");
    running.wait_for("offsets committed", Duration::from_secs(60));
    let mut running = running;
    assert!(running.child.wait().unwrap().success());
    let printed = running.printed();
    assert!(
        printed.contains("sasl.password=[redacted] sasl.username=runnel"),
        "{printed}"
    );
    for (what, text) in [
        ("status", &status),
        ("metrics", &metrics),
        ("page", &page),
        ("output", &printed),
    ] {
        assert!(!text.contains(CANARY), "the {what} shows a secret:\n{text}");
    }

    let describe = run_to_end(
        {
            let mut describe = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
            describe.arg("describe");
            describe
        },
        Duration::from_secs(20),
    );
    assert!(!stdout_of(&describe).contains(CANARY));
}

#[test]
fn a_malformed_config_file_and_a_missing_variable_show_no_secret() {
    let directory = tempfile::tempdir().unwrap();
    let blueprint = write_files(directory.path());
    let blueprint = blueprint.to_str().unwrap();
    // An unterminated string: the parser's own message would quote the line.
    std::fs::write(
        directory.path().join("local.toml"),
        format!("[kafka]\n\"sasl.password\" = \"{CANARY}-unterminated\n"),
    )
    .unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command.args(["run", blueprint, "--kafka", "127.0.0.1:1"]);
    let output = run_to_end(command, Duration::from_secs(20));
    assert!(!output.status.success());
    let said = format!("{}{}", stdout_of(&output), stderr_of(&output));
    assert!(!said.contains(CANARY), "{said}");
    assert!(said.contains("local.toml: line 2, column "), "{said}");

    std::fs::write(
        directory.path().join("local.toml"),
        "[kafka]\n\"sasl.password\" = \"${RUNNEL_TEST_UNSET_SECRET}\"\n",
    )
    .unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command.args(["run", blueprint, "--kafka", "127.0.0.1:1"]);
    let output = run_to_end(command, Duration::from_secs(20));
    assert!(
        stderr_of(&output).contains("kafka.sasl.password uses the environment variable RUNNEL_TEST_UNSET_SECRET, which is not set"),
        "{}",
        stderr_of(&output)
    );
}
