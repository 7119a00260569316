//! The per-minute statistics, which keep their state by input partition, scaled on Apache
//! Kafka (with the consumer settings' defaults, so eager rebalances) under continuous input:
//! one `run-streamlet per-minute` process holding all three partitions of `readings`, then
//! three sharing them, then one of those killed with SIGKILL mid-window, leaving two. Every
//! device-minute that the event time has passed has one result equal to the batch
//! computation over the readings, and a result sent twice (replayed after a handover) is sent
//! identical. (Before consumers counted revocations, a member given back a partition counted
//! its records twice here.)

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use device_stats::model::{PowerStats, Reading};
use runnel::window::Pane;
use runnel_app_test::kafka::{at_least, read_topic};
use runnel_app_test::{GroupMember, decode, run_to_end, stderr_of, wait_until};
use runnel_kafka::test_broker::{ApacheKafka, TestBroker};

use crate::support::{BLUEPRINT, Minute, assert_same, batch, by_minute};

const READINGS: i64 = 12_000;
/// How far the watermark of a partition stays behind its latest reading.
const OUT_OF_ORDER_MS: i64 = 5_000;

/// The app binary on `broker`, with plain output and quiet loggers.
fn app_on(broker: &impl TestBroker, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_device-stats"));
    command
        .args(args)
        .args(broker.app_arguments())
        .args(["--view", "plain", "--status-every", "1s"])
        .env("RUST_LOG", "info");
    command
}

fn partitions(members: &mut [&mut GroupMember]) -> Vec<BTreeSet<String>> {
    members.iter_mut().map(|member| member.owns()).collect()
}

/// Whether the members own every partition of `readings` between them, each at least one.
fn shared_by_all(owned: &[BTreeSet<String>]) -> bool {
    let all: BTreeSet<String> = (0..3).map(|p| format!("readings/{p}")).collect();
    let union: BTreeSet<String> = owned.iter().flatten().cloned().collect();
    let total: usize = owned.iter().map(BTreeSet::len).sum();
    union == all && total == all.len() && owned.iter().all(|set| !set.is_empty())
}

#[test]
fn per_minute_scales_from_one_process_to_three_and_back_to_two_through_a_kill() {
    let broker = ApacheKafka::start();
    let member = || app_on(&broker, &["run-streamlet", "per-minute", BLUEPRINT]);
    let mut first = GroupMember::start("first", member());
    wait_until(
        Duration::from_secs(60),
        "the first member's partitions",
        || first.owns().len() == 3,
    );
    let mut generator = app_on(&broker, &["run-streamlet", "generator", BLUEPRINT]);
    generator.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=400",
        // Enough devices that every partition gets some.
        "--set",
        "generator.devices=16",
    ]);
    let generating = std::thread::spawn(move || run_to_end(generator, Duration::from_secs(120)));
    let early = read_topic(
        &broker,
        "device-stats",
        Duration::from_secs(60),
        at_least(16),
    );
    assert!(early.len() >= 16, "the single member got going");

    let mut second = GroupMember::start("second", member());
    let mut third = GroupMember::start("third", member());
    wait_until(Duration::from_secs(90), "three members sharing", || {
        shared_by_all(&partitions(&mut [&mut first, &mut second, &mut third]))
    });
    let before_kill = read_topic(
        &broker,
        "device-stats",
        Duration::from_secs(60),
        at_least(early.len() + 32),
    );
    assert!(before_kill.len() >= early.len() + 32, "the three got going");
    second.kill(); // mid-window: no drain, no final checkpoint, no leaving the group
    wait_until(Duration::from_secs(90), "two members sharing", || {
        shared_by_all(&partitions(&mut [&mut first, &mut third]))
    });
    let generated = generating.join().unwrap();
    assert!(
        generated.status.success(),
        "stderr:\n{}",
        stderr_of(&generated)
    );

    let inputs = read_topic(
        &broker,
        "readings",
        Duration::from_secs(60),
        at_least(READINGS as usize),
    );
    assert_eq!(
        inputs.len(),
        READINGS as usize,
        "every reading reached the broker"
    );
    // A minute is complete once its partition's watermark passed its end.
    let mut latest: BTreeMap<i32, i64> = BTreeMap::new();
    let mut readings = Vec::new();
    for seen in &inputs {
        let reading: Reading = decode(&seen.value);
        let newest = latest.entry(seen.partition).or_insert(i64::MIN);
        *newest = (*newest).max(reading.time);
        readings.push((seen.partition, reading));
    }
    let complete: Vec<Reading> = readings
        .iter()
        .filter(|(partition, reading)| {
            let start = reading.time - reading.time.rem_euclid(60_000);
            start + 60_000 <= latest[partition] - OUT_OF_ORDER_MS
        })
        .map(|(_, reading)| reading.clone())
        .collect();
    let expected: BTreeMap<Minute, PowerStats> = batch(&complete);
    assert!(
        expected.len() >= 16 * 10,
        "{} complete device-minutes",
        expected.len()
    );

    let mut results: BTreeSet<Minute> = BTreeSet::new();
    let seen = read_topic(&broker, "device-stats", Duration::from_secs(120), |seen| {
        let pane: Pane<String, PowerStats> = decode(&seen.value);
        results.insert((pane.key, pane.window_start));
        expected.keys().all(|minute| results.contains(minute))
    });
    first.kill();
    third.kill();
    let panes: Vec<Pane<String, PowerStats>> = seen.iter().map(|s| decode(&s.value)).collect();
    let (streamed, sent) = by_minute(&panes);
    let streamed: BTreeMap<Minute, PowerStats> = streamed
        .into_iter()
        .filter(|(minute, _)| expected.contains_key(minute))
        .collect();
    assert_same(&streamed, &expected);
    println!(
        "scaling: {} device-minutes, {sent} results sent, {} sent again after a handover",
        expected.len(),
        sent - panes
            .iter()
            .map(|p| (&p.key, p.window_start))
            .collect::<BTreeSet<_>>()
            .len()
    );
}
