use std::collections::BTreeSet;
use std::time::Duration;

use runnel_kafka::test_broker::ApacheKafka;
use sensor_data::model::Metric;

use crate::kafka_support::{app_on, arrivals, at_least, distinct_metrics, read_topic};
use crate::support::{BLUEPRINT, decode, run_to_end, stderr_of};
use runnel_app_test::{GroupMember, wait_until};

const READINGS: i64 = 6_000;

/// Two `run-streamlet to-metrics` processes share the two partitions of `sensor-data`;
/// `kill -9` one of them mid-stream; the other takes both partitions over, and in the end
/// every reading has all three metrics in `metrics` at least once. On Apache Kafka with
/// Runnel's default group timeouts (the group gives up on the killed member after 10 s).
#[test]
fn two_processes_share_partitions_and_one_survives_a_kill() {
    let broker = ApacheKafka::start();
    let member = || app_on(&broker, &["run-streamlet", "to-metrics", BLUEPRINT]);
    let mut first = GroupMember::start("first", member());
    wait_until(
        Duration::from_secs(60),
        "the first member's assignment",
        || first.owns().len() == 2,
    );
    let mut second = GroupMember::start("second", member());
    let all: BTreeSet<String> = ["sensor-data/0", "sensor-data/1"].map(String::from).into();
    wait_until(Duration::from_secs(60), "sharing the partitions", || {
        let (a, b) = (first.owns(), second.owns());
        a.len() == 1 && b.len() == 1 && a.union(&b).cloned().collect::<BTreeSet<_>>() == all
    });

    let mut generator = app_on(&broker, &["run-streamlet", "generator", BLUEPRINT]);
    generator.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=1000",
        // Enough devices that both partitions get readings.
        "--set",
        "generator.devices=16",
    ]);
    let generating = std::thread::spawn(move || run_to_end(generator, Duration::from_secs(120)));
    // Let both members work for a while, then kill the first without warning.
    let metrics_before_kill =
        read_topic(&broker, "metrics", Duration::from_secs(30), at_least(1_500));
    assert!(metrics_before_kill.len() >= 1_500, "the members got going");
    first.kill(); // SIGKILL: no drain, no commit, no leaving the group
    let killed = std::time::Instant::now();
    wait_until(
        Duration::from_secs(90),
        "the survivor taking both partitions",
        || second.owns() == all,
    );
    println!(
        "scaling test: the survivor read both partitions {:.1} s after the kill",
        killed.elapsed().as_secs_f64()
    );
    let generated = generating.join().unwrap();
    assert!(
        generated.status.success(),
        "stderr:\n{}",
        stderr_of(&generated)
    );

    // Every reading reached the input topic: the generator and the broker lost nothing.
    let inputs = read_topic(
        &broker,
        "sensor-data",
        Duration::from_secs(60),
        at_least(READINGS as usize),
    );
    let mut sequences: Vec<i64> = inputs
        .iter()
        .map(|seen| decode::<sensor_data::model::SensorData>(&seen.value).sequence)
        .collect();
    sequences.sort_unstable();
    sequences.dedup();
    assert_eq!(
        sequences.len(),
        READINGS as usize,
        "the input topic holds every reading"
    );

    let expected = 3 * READINGS as usize;
    // Stop once every metric arrived at least once (decoding each record once).
    let seen = read_topic(
        &broker,
        "metrics",
        Duration::from_secs(90),
        distinct_metrics(expected),
    );
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    let metrics: Vec<Metric> = seen.iter().map(|s| decode(&s.value)).collect();
    for (record, metric) in seen.iter().zip(&metrics) {
        let key = metric.device_id.as_bytes();
        assert_eq!(
            record.key.as_deref(),
            Some(key),
            "metrics are keyed by device"
        );
        assert_eq!(
            record.partition as u32,
            runnel_backend::partition_for_key(key, 2),
            "the key's murmur2 partition"
        );
    }
    let counts = arrivals(metrics.iter());
    eprintln!(
        "scaling test: read {} records, {} distinct metrics of {expected}",
        seen.len(),
        counts.len()
    );
    for sequence in 0..READINGS {
        for name in ["power", "rotor-speed", "wind-speed"] {
            assert!(
                counts.contains_key(&(sequence, name.to_owned())),
                "metric {name} of reading {sequence} was lost"
            );
        }
    }
    let duplicates: usize = counts.values().map(|count| count - 1).sum();
    println!(
        "scaling test: {} metrics, {duplicates} duplicates after the kill",
        counts.len()
    );
}

/// `run` is killed with SIGKILL and started again: the new process reads the input's
/// partitions at once, because `run`'s consumers are static members under the same names.
/// The session timeout is set to a minute, which a dynamic member would wait out before
/// the group gave up on the killed process and rebalanced.
#[test]
fn a_killed_run_started_again_reads_its_partitions_at_once() {
    let broker = ApacheKafka::start();
    let run = || {
        let mut command = app_on(&broker, &["run", BLUEPRINT]);
        command.args(["--kafka-setting", "session.timeout.ms=60000"]);
        command
    };
    let input: BTreeSet<String> = ["sensor-data/0", "sensor-data/1"].map(String::from).into();
    let mut first = GroupMember::start("first", run());
    wait_until(
        Duration::from_secs(60),
        "the first run's assignment",
        || first.owns().is_superset(&input),
    );
    first.kill();

    let restarted = std::time::Instant::now();
    let mut second = GroupMember::start("second", run());
    wait_until(
        Duration::from_secs(30),
        "the restarted run's assignment, well before the 60 s session timeout",
        || second.owns().is_superset(&input),
    );
    println!(
        "restart test: the restarted run read its input partitions {:.1} s after it started",
        restarted.elapsed().as_secs_f64()
    );
}

/// The same app started twice with `run` on one Kafka cluster: each process's consumers
/// are static members under the same names, so each fences the other, and both say why.
#[test]
fn the_same_app_run_twice_says_so() {
    let broker = ApacheKafka::start();
    let run = || app_on(&broker, &["run", BLUEPRINT]);
    let input: BTreeSet<String> = ["sensor-data/0", "sensor-data/1"].map(String::from).into();
    let mut first = GroupMember::start("first", run());
    wait_until(
        Duration::from_secs(60),
        "the first run's assignment",
        || first.owns().is_superset(&input),
    );
    let second = GroupMember::start("second", run());
    let message = "as static member 'sensor-data.to-metrics.0' and fenced this one; \
                   is the app running twice under one replica name?";
    wait_until(
        Duration::from_secs(60),
        "the first run saying why it stopped reading",
        || first.logged(message),
    );
    drop(second);
}
