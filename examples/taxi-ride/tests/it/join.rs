use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runnel_app_test::wait_until;
use runnel_app_test::{Running, open, read_values};
use runnel_embedded_log::LogInspector;
use taxi_ride::model::{TaxiFare, TaxiRide, TaxiRideFare};
use taxi_ride::streamlets::data::{WITHOUT_FARE, WITHOUT_START, fare, ride};

const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

/// Starts the app on free ports; returns it with the URLs of its ride and fare ingresses.
fn start(data: &Path) -> (Running, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_taxi-ride"));
    command
        .args(["run", BLUEPRINT, "--data-dir"])
        .arg(data)
        .args([
            "--view",
            "plain",
            "--set",
            "processor.unmatched-timeout=15s",
        ])
        .env("RUST_LOG", "info");
    for instance in ["taxi-ride", "taxi-fare"] {
        command.args(["--set", &format!("{instance}.port=0")]);
        command.args(["--set", &format!("{instance}.bind-address=127.0.0.1")]);
    }
    let running = Running::start(command);
    let (mut rides, mut fares) = (None, None);
    while rides.is_none() || fares.is_none() {
        let line = running.wait_for("listening on", Duration::from_secs(60));
        let address = line
            .split("listening on ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        let url = Some(format!("http://{address}/"));
        if line.contains("name=taxi-ride}") {
            rides = url;
        } else {
            fares = url;
        }
    }
    (running, rides.unwrap(), fares.unwrap())
}

fn post_file(url: &str, file: &str) -> String {
    let body = std::fs::read_to_string(format!("{DATA}/{file}")).unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    agent
        .post(url)
        .send(&body)
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

fn records(inspector: &LogInspector, topic: &str) -> u64 {
    inspector
        .offsets(topic)
        .map(|offsets| offsets.iter().map(|o| o.end).sum())
        .unwrap_or(0)
}

/// The rides arrive, are checkpointed, and the app is killed; the fares arrive after the
/// restart and still find their rides (within the 15 s timeout, which the restart must not
/// take). Halves without a partner are given up on after the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rides_and_fares_join_across_a_kill_and_unmatched_halves_are_given_up_on() {
    let data = tempfile::tempdir().unwrap();
    let (mut running, rides_url, _) = start(data.path());
    assert_eq!(post_file(&rides_url, "rides.jsonl"), r#"{"accepted":196}"#);
    let inspector = LogInspector::new(data.path()).unwrap();
    // Offsets of a checkpointed streamlet are committed only with its state.
    wait_until(
        Duration::from_secs(60),
        "the join checkpointed every ride",
        || {
            inspector
                .committed("taxi-ride.processor.rides", "rides")
                .map(|committed| committed.iter().flatten().sum::<u64>() == 196)
                .unwrap_or(false)
        },
    );
    running.child.kill().unwrap(); // SIGKILL: no final checkpoint
    running.child.wait().unwrap();

    let (mut running, _, fares_url) = start(data.path());
    assert_eq!(post_file(&fares_url, "fares.jsonl"), r#"{"accepted":97}"#);
    wait_until(
        Duration::from_secs(60),
        "every pair is joined and every lone half given up on",
        || {
            records(&inspector, "rides-with-fares") == 95
                && records(&inspector, "unmatched-rides") == 3
                && records(&inspector, "unmatched-fares") == 2
        },
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
    let joined: Vec<TaxiRideFare> = read_values(&backend, "rides-with-fares").await;
    let expected: BTreeSet<i64> = (1..=100)
        .filter(|id| !WITHOUT_FARE.contains(id) && !WITHOUT_START.contains(id))
        .collect();
    let ids: BTreeSet<i64> = joined.iter().map(|j| j.ride_id).collect();
    assert_eq!(ids, expected);
    assert_eq!(joined.len(), expected.len(), "each ride joined once");
    for joined in &joined {
        assert_eq!(joined.ride, ride(joined.ride_id), "the start, not the end");
        assert_eq!(joined.fare, fare(joined.ride_id));
        assert_eq!(joined.total_fare, fare(joined.ride_id).total_fare);
    }
    let lone_rides: Vec<TaxiRide> = read_values(&backend, "unmatched-rides").await;
    let lone_rides: BTreeSet<i64> = lone_rides.iter().map(|r| r.ride_id).collect();
    assert_eq!(lone_rides, WITHOUT_FARE.into_iter().collect());
    let lone_fares: Vec<TaxiFare> = read_values(&backend, "unmatched-fares").await;
    let lone_fares: BTreeSet<i64> = lone_fares.iter().map(|f| f.ride_id).collect();
    assert_eq!(lone_fares, WITHOUT_START.into_iter().collect());
}
