//! Keyed state restores and failovers through Kafka, on one Apache Kafka node started by the
//! benchmark (one tansu broker with `--tansu`): the restore and failover phases of
//! `runnel-host`'s `keyed_state` bench (which runs on the embedded log), with the same
//! streamlet (a count and a sum per key, `ValueState<(u64, i64)>`, 16-byte keys, 4 input
//! partitions) hosted by `run_instance` on the Kafka backplane.
//!
//! 1. **Restore**: the state of `keys` keys built and checkpointed by one instance, which
//!    stops; then, `runs` times, one record per partition and a new instance: the time from
//!    its start until all four partitions are restored and their records handled. That
//!    includes the new instance joining its input's consumer group (seconds on tansu) and,
//!    per partition, reading the last checkpoint and replaying the changelog.
//! 2. **Failover**: a member holding every key stops, and a second member of the group
//!    takes the four partitions over: the time from the first member gone until the second
//!    has restored them and handled a record of each, with the second member keeping warm
//!    standbys and without, alternating. That includes the group's rebalance.
//!
//! `cargo bench -p runnel-kafka --bench keyed_state -- [keys] [runs] [restore|failover] [--tansu]`
//! (defaults 100,000 and 3; `restore` or `failover` runs that phase alone).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, TopicSpec};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::{ApacheKafka, Tansu, TestBroker};

// The streamlet and what drives it, as the embedded log's bench runs them.
#[path = "../../host/benches/support/tally.rs"]
mod tally;

use tally::{Member, PARTITIONS, median, one_per_partition, produce};

/// Starts a member of the tally of `app` (input `<app>.in`, dead letters `<app>.dead`),
/// checkpointing every second (see [`Member::start`]).
fn start(backend: &KafkaBackend, app: &str, standby: bool, expected: u64) -> Member {
    let (input, dead) = (format!("{app}.in"), format!("{app}.dead"));
    let wiring = tally::wiring(app, "tally", (&input, &dead), Vec::new());
    let backend: Arc<dyn Backend> = Arc::new(backend.clone());
    Member::start(backend, wiring, Duration::from_secs(1), standby, expected)
}

/// A new app on the broker: its input and dead-letter topics, with a record for each of
/// `keys` keys in the input.
async fn fresh(backend: &KafkaBackend, keys: u64) -> String {
    let app = runnel_backend::conformance::unique("bench");
    for (topic, partitions) in [
        (format!("{app}.in"), PARTITIONS),
        (format!("{app}.dead"), 1),
    ] {
        backend
            .create_topic(&TopicSpec::new(&topic, partitions))
            .await
            .unwrap();
    }
    produce(backend, &format!("{app}.in"), 0..keys).await;
    app
}

/// Waits until the group of `app` committed `keys` offsets: every key's record is in a
/// checkpoint.
async fn wait_for_commits(backend: &KafkaBackend, app: &str, keys: u64, member: &Member) {
    loop {
        let committed: u64 = backend
            .committed(&format!("{app}.tally.in"), &format!("{app}.in"))
            .await
            .unwrap()
            .into_iter()
            .map(Option::unwrap_or_default)
            .sum();
        if committed >= keys {
            return;
        }
        assert!(!member.running.is_finished(), "the member stopped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench" && a != "--tansu")
        .collect();
    let on_tansu = std::env::args().any(|a| a == "--tansu");
    let keys: u64 = arguments
        .first()
        .map_or(100_000, |keys| keys.parse().unwrap());
    let runs: usize = arguments.get(1).map_or(3, |runs| runs.parse().unwrap());
    let only = arguments.get(2).map(String::as_str);
    let broker: Box<dyn TestBroker> = if on_tansu {
        Box::new(Tansu::start())
    } else {
        Box::new(ApacheKafka::start())
    };
    let backend = KafkaBackend::connect(broker.config()).await.unwrap();
    let on = if on_tansu {
        "tansu"
    } else {
        "Apache Kafka, one node"
    };
    println!("keyed state on {on}: {keys} keys, {PARTITIONS} partitions, {runs} runs of each");
    if only.is_none_or(|only| only == "restore") {
        restore(&backend, keys, runs).await;
    }
    if only.is_none_or(|only| only == "failover") {
        failover(&backend, keys, runs).await;
    }
}

/// Phase 1: the state built once, then `runs` restores by new instances.
async fn restore(backend: &KafkaBackend, keys: u64, runs: usize) {
    let app = fresh(backend, keys).await;
    let mut builder = start(backend, &app, false, keys);
    builder.reached().await;
    wait_for_commits(backend, &app, keys, &builder).await;
    builder.stop().await;
    let mut restores = Vec::new();
    for _ in 0..runs {
        produce(backend, &format!("{app}.in"), one_per_partition()).await;
        let mut member = start(backend, &app, false, PARTITIONS as u64);
        let (_, reached) = member.reached().await;
        let took = reached - member.started;
        let restored = member
            .metrics
            .state_queries()
            .size()
            .unwrap_or_default()
            .restored_entries;
        println!(
            "restore of {keys} keys: {took:.2?} from the instance's start to every partition restored ({restored} changelog entries replayed)"
        );
        restores.push(took.as_secs_f64());
        member.stop().await;
    }
    println!("restore median: {:.2} s", median(restores));
}

/// Phase 2: as the embedded log's failover phase, on Kafka.
async fn failover(backend: &KafkaBackend, keys: u64, runs: usize) {
    let mut times: BTreeMap<bool, Vec<f64>> = BTreeMap::new();
    for run_index in 0..runs {
        for standby in [false, true] {
            let app = fresh(backend, keys).await;
            let mut first = start(backend, &app, false, keys);
            first.reached().await;
            wait_for_commits(backend, &app, keys, &first).await;
            let mut second = start(backend, &app, standby, PARTITIONS as u64);
            if standby {
                // The copies hold every key (the second member holds none yet).
                while second
                    .metrics
                    .state_queries()
                    .size()
                    .is_none_or(|size| size.standby_entries < keys)
                {
                    assert!(!second.running.is_finished(), "the second member stopped");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            // Either way, let the group settle with both members.
            tokio::time::sleep(Duration::from_secs(8)).await;
            let stopping = Instant::now();
            first.stop().await;
            let stopped = Instant::now();
            produce(backend, &format!("{app}.in"), one_per_partition()).await;
            let (_, reached) = second.reached().await;
            let took = reached - stopped;
            let size = second.metrics.state_queries().size().unwrap_or_default();
            println!(
                "failover of {keys} keys, run {run_index}, {}: {took:.2?} from the first member gone to every partition restored ({} changelog entries replayed; its stop took {:.2?})",
                if standby {
                    "warm standby"
                } else {
                    "no standby"
                },
                size.restored_entries,
                stopped - stopping
            );
            times.entry(standby).or_default().push(took.as_secs_f64());
            second.stop().await;
        }
    }
    println!(
        "failover medians: {:.3} s without a standby, {:.3} s with",
        median(times[&false].clone()),
        median(times[&true].clone())
    );
}
