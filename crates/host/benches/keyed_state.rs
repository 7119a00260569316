//! Keyed state at scale, through the real host on the embedded log: one instance of a
//! streamlet that keeps a value per key (a count and a sum, `ValueState<(u64, i64)>`),
//! reading records whose keys are the state's keys (16 bytes each), 4 input partitions.
//!
//! 1. **Memory per key**: the process's resident memory once `keys` records, each a new
//!    key, are in the state, less before, per key.
//! 2. **Changelog bytes per checkpoint**: with the state full, updates of 1% and then 10% of
//!    the keys; the changelog records and bytes on disk their checkpoints added, per key
//!    changed.
//! 3. **Restore**: a new instance after a stop, with one record per partition: the time
//!    from its start until all four partitions are restored and their records handled.
//! 4. **Checkpoint overhead**: the time to take `keys` records into state, with a
//!    checkpoint every second against one only at the end (an hour's interval),
//!    alternating, `runs` times each; records per second of each, and the ratio. Two
//!    workloads: each record a new key (the worst case: every record changes an entry no
//!    other record of the interval changes), and updates four in five of which go to a
//!    tenth of the keys.
//!
//! 5. **Failover**: a member holding every key stops, and a second member of the group
//!    takes the four partitions over: the time from the first member gone until the second
//!    has restored them and handled a record of each, with the second member keeping warm
//!    standbys (`KeyedState::warm_standby`) and without, alternating.
//!
//! 6. **Windows** (`windows` only): a `WindowedAggregate` count kept by partition (its
//!    windows are keyed state) holding `keys` keys, one window each: memory per key, the
//!    changelog bytes of its first checkpoints per key and of a checkpoint after 1% of the
//!    keys changed per key changed, the restore of every key, and a failover as in phase 5
//!    (from the first member gone to every partition restored), with warm
//!    standbys (`WindowedAggregate::warm_standby`) and without, alternating.
//!
//! `cargo bench -p runnel-host --bench keyed_state -- [keys] [runs] [overhead|failover|windows]`
//! (defaults 1,000,000 and 3; `overhead`, `failover` or `windows` runs that phase alone).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec, partition_for_key};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_host::{Wiring, run_instance};
use runnel_streamlet::prelude::*;
use runnel_streamlet::window::{Count, Pane, WindowSpec};
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio_util::sync::CancellationToken;

#[path = "support/tally.rs"]
mod tally;

use tally::{IN, Member, PARTITIONS, key, median, one_per_partition};

/// Appends to `in` one record (amount 1) for each key in `keys`.
async fn produce(backend: &EmbeddedBackend, keys: impl Iterator<Item = u64>) {
    tally::produce(backend, "in", keys).await;
}

/// How a run went.
struct Ran {
    /// From the first record handled to the `expected`-th.
    records: Duration,
    /// From the instance's start to the `expected`-th record handled.
    since_start: Duration,
    /// The process's resident memory when the `expected`-th record was handled.
    resident: u64,
}

/// Runs an instance until it handled `expected` records, then stops it (its last
/// checkpoint written).
async fn run(
    backend: &EmbeddedBackend,
    instance: &str,
    checkpoint_every: Duration,
    expected: u64,
) -> Ran {
    let mut member = start(backend, instance, checkpoint_every, false, expected);
    let (first, reached) = member.reached().await;
    let resident = resident();
    let started = member.started;
    member.stop().await;
    Ran {
        records: reached - first,
        since_start: reached - started,
        resident,
    }
}

/// Bytes of the files under `directory` whose path names `topic`.
fn bytes_on_disk(directory: &Path, topic: &str) -> u64 {
    let mut total = 0;
    let mut pending = vec![directory.to_path_buf()];
    while let Some(path) = pending.pop() {
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().contains(topic) {
                total += entry.metadata().map_or(0, |metadata| metadata.len());
            }
        }
    }
    total
}

async fn records(backend: &EmbeddedBackend, topic: &str) -> u64 {
    let offsets = backend.offsets(topic).await.unwrap();
    offsets.iter().map(|partition| partition.end).sum()
}

/// Waits until no thread of the process frees a state (`runnel-freeing`).
async fn freed() {
    loop {
        let freeing = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .any(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|name| name.trim() == "runnel-freeing")
            });
        if !freeing {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The process's resident memory in bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

async fn fresh(directory: &Path) -> EmbeddedBackend {
    let backend = EmbeddedBackend::open(directory, LogConfig::default()).unwrap();
    for (topic, partitions) in [("in", PARTITIONS), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
    backend
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let keys: u64 = arguments
        .first()
        .map_or(1_000_000, |keys| keys.parse().unwrap());
    let runs: usize = arguments.get(1).map_or(3, |runs| runs.parse().unwrap());
    let only = arguments.get(2).map(String::as_str);
    println!("keyed state: {keys} keys, {PARTITIONS} partitions, {runs} runs of each");

    if only == Some("windows") {
        windows(keys, runs).await;
        return;
    }
    if only.is_none() {
        memory_changelog_and_restore(keys, runs).await;
    }
    if only.is_none_or(|only| only == "overhead") {
        checkpoint_overhead(keys, runs).await;
    }
    if only.is_none_or(|only| only == "failover") {
        failover(keys, runs).await;
    }
}

/// Phase 5: a member holding the state of every key stops (its state unchanged since its
/// last checkpoint, as after a crash right after one), and a second member that joined the
/// group earlier takes every partition over; the time from the first member gone (out of
/// the group, as a crashed process is once the group notices, and its state freed, as a
/// crashed process's memory is) until the second has
/// restored all four partitions and handled a record of each. Alternating, with the second
/// member keeping warm standbys and without.
async fn failover(keys: u64, runs: usize) {
    let mut times: BTreeMap<bool, Vec<f64>> = BTreeMap::new();
    for run_index in 0..runs {
        for standby in [false, true] {
            let directory = tempfile::tempdir().unwrap();
            let backend = fresh(directory.path()).await;
            produce(&backend, 0..keys).await;
            let mut first = start(&backend, "tally", Duration::from_secs(1), false, keys);
            first.reached().await;
            while backend
                .committed("bench.tally.in", "in")
                .await
                .unwrap()
                .into_iter()
                .map(Option::unwrap_or_default)
                .sum::<u64>()
                < keys
            {
                assert!(!first.running.is_finished(), "the first member stopped");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let mut second = start(
                &backend,
                "tally",
                Duration::from_secs(1),
                standby,
                PARTITIONS as u64,
            );
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
            tokio::time::sleep(Duration::from_secs(2)).await;
            let stopping = Instant::now();
            first.stop().await;
            let stop_took = stopping.elapsed();
            // A stopped member frees a large state on a thread of its own; a crashed process
            // is gone with its memory, so the takeover is timed from when that is done.
            let freeing = Instant::now();
            freed().await;
            let freeing_took = freeing.elapsed();
            let stopped = Instant::now();
            produce(&backend, one_per_partition()).await;
            let (_, reached) = second.reached().await;
            let took = reached - stopped;
            let size = second.metrics.state_queries().size().unwrap_or_default();
            println!(
                "failover of {keys} keys, run {run_index}, {}: {took:.2?} from the first member gone to every partition restored ({} changelog entries replayed; its stop took {stop_took:.2?}, freeing its state {freeing_took:.2?} more)",
                if standby {
                    "warm standby"
                } else {
                    "no standby"
                },
                size.restored_entries,
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

/// Phases 1 to 3.
async fn memory_changelog_and_restore(keys: u64, runs: usize) {
    // Memory first, while the allocator holds nothing from earlier phases: the state is
    // built with a checkpoint every second, and memory read once every key is in it.
    let directory = tempfile::tempdir().unwrap();
    let backend = fresh(directory.path()).await;
    produce(&backend, 0..keys).await;
    let before = resident();
    let built = run(&backend, "tally", Duration::from_secs(1), keys).await;
    println!(
        "memory: {:.0} bytes per key ({} MiB resident before, {} MiB with the state built)",
        built.resident.saturating_sub(before) as f64 / keys as f64,
        before >> 20,
        built.resident >> 20
    );
    println!(
        "built the state at {:.0} records/s",
        keys as f64 / built.records.as_secs_f64()
    );

    // Changelog bytes per checkpoint: 1% and 10% of the keys change.
    let changelog = "bench.tally.changelog";
    for percent in [1, 10] {
        let changed = keys * percent / 100;
        let records_before = records(&backend, changelog).await;
        let bytes_before = bytes_on_disk(directory.path(), changelog);
        // Every `100 / percent`-th key, so they spread over the partitions.
        produce(&backend, (0..changed).map(|index| index * 100 / percent)).await;
        run(&backend, "tally", Duration::from_secs(1), changed).await;
        let added = records(&backend, changelog).await - records_before;
        let bytes = bytes_on_disk(directory.path(), changelog).saturating_sub(bytes_before);
        println!(
            "{percent}% of the keys changed ({changed}): {added} changelog records, {bytes} bytes on disk, {:.1} bytes per key changed",
            bytes as f64 / changed as f64
        );
    }

    // Restore: one record per partition, so the instance restores each partition.
    let mut restores = Vec::new();
    for _ in 0..runs {
        produce(&backend, one_per_partition()).await;
        let ran = run(&backend, "tally", Duration::from_secs(1), PARTITIONS as u64).await;
        println!(
            "restore of {keys} keys: {:.2?} from the instance's start to every partition restored",
            ran.since_start
        );
        restores.push(ran.since_start.as_secs_f64());
    }
    println!("restore median: {:.2} s", median(restores));
}

/// The keys of `records` updates of which four in five go to the first tenth of `keys`
/// (pseudo-random within each part).
fn skewed(keys: u64, records: u64) -> impl Iterator<Item = u64> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..records).map(move |_| {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let random = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let hot = (keys / 10).max(1);
        if random % 5 < 4 {
            (random >> 8) % hot
        } else {
            hot + (random >> 8) % (keys - hot).max(1)
        }
    })
}

/// Phase 4: alternating, each run on a log of its own, for two workloads: every record a
/// new key (each checkpoint writes as many entries as records arrived since the last, the
/// worst case), and updates of which four in five go to a tenth of the keys.
async fn checkpoint_overhead(keys: u64, runs: usize) {
    for workload in ["new keys", "skewed updates"] {
        let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for run_index in 0..runs {
            for (name, every) in [
                ("every second", Duration::from_secs(1)),
                ("at the end only", Duration::from_secs(3_600)),
            ] {
                let directory = tempfile::tempdir().unwrap();
                let backend = fresh(directory.path()).await;
                match workload {
                    "new keys" => produce(&backend, 0..keys).await,
                    _ => produce(&backend, skewed(keys, keys)).await,
                }
                let took = run(&backend, "tally", every, keys).await.records;
                let rate = keys as f64 / took.as_secs_f64();
                println!(
                    "{workload}, run {run_index}, checkpoints {name}: {rate:.0} records/s ({took:.2?})"
                );
                rates.entry(name).or_default().push(rate);
            }
        }
        let with = median(rates["every second"].clone());
        let without = median(rates["at the end only"].clone());
        println!(
            "{workload}: medians {with:.0} records/s with a checkpoint every second, {without:.0} with one at the end; ratio {:.2}",
            with / without
        );
    }
}

/// The windowed count of phase 6: an hour's tumbling window per key, keyed by the value
/// (the record's key is the value's key, so each key's records share a partition), all in
/// the first hour of event time, so no window closes while the bench runs.
fn window_counts(standby: bool) -> impl Streamlet {
    const OUT: Outlet<Pane<i64, i64>> = Outlet::new("out");
    const HOUR: WindowSpec = WindowSpec::tumbling(Duration::from_secs(3_600));
    let counts = WindowedAggregate::new(IN, OUT, HOUR, Count::new())
        .key_by(|value: &i64| *value)
        .event_time(|_| 0);
    if standby {
        counts.warm_standby()
    } else {
        counts.state_by_partition()
    }
}

/// Appends one record for each key in `keys`, the value the key's index.
async fn produce_indices(backend: &EmbeddedBackend, keys: impl Iterator<Item = u64>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <i64 as AvroSchema>::get_schema();
    for index in keys {
        let key = key(index);
        let partition = partition_for_key(&key, PARTITIONS);
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::types::Value::Long(index as i64))
                .unwrap();
        drop(
            producer
                .send("in", partition, Record::new(value).with_key(key))
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();
}

/// Starts a member of the tally as instance `instance` of app `bench` (see
/// [`Member::start`]).
fn start(
    backend: &EmbeddedBackend,
    instance: &str,
    checkpoint_every: Duration,
    standby: bool,
    expected: u64,
) -> Member {
    let wiring = wiring(instance, Vec::new());
    Member::start(
        Arc::new(backend.clone()),
        wiring,
        checkpoint_every,
        standby,
        expected,
    )
}

/// The wiring of instance `instance` of app `bench`, reading `in`.
fn wiring(instance: &str, outlets: Vec<runnel_host::OutletWiring>) -> Wiring {
    tally::wiring("bench", instance, ("in", "dead"), outlets)
}

/// A running member of the windowed count of phase 6.
struct WindowsMember {
    metrics: Arc<InstanceMetrics>,
    stop: CancellationToken,
    running: tokio::task::JoinHandle<runnel_streamlet::Result<()>>,
    started: Instant,
}

impl WindowsMember {
    fn start(backend: &EmbeddedBackend, standby: bool) -> WindowsMember {
        let outlets = vec![runnel_host::OutletWiring {
            port: "out".into(),
            topic: "out".into(),
            tag_schema: false,
        }];
        let streamlet = window_counts(standby);
        let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
        let stop = CancellationToken::new();
        let started = Instant::now();
        let running = tokio::spawn(run_instance(
            Box::new(streamlet),
            Arc::new(backend.clone()),
            wiring("windows", outlets),
            Arc::new(SystemClock),
            metrics.clone(),
            stop.clone(),
        ));
        WindowsMember {
            metrics,
            stop,
            running,
            started,
        }
    }

    /// Waits until the group committed `committed` input records; when that was.
    async fn committed(&self, backend: &EmbeddedBackend, committed: u64) -> Instant {
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(
                !self.running.is_finished(),
                "the windowed count stopped early"
            );
            let done: u64 = backend
                .committed("bench.windows.in", "in")
                .await
                .unwrap()
                .into_iter()
                .map(Option::unwrap_or_default)
                .sum();
            if done >= committed {
                return Instant::now();
            }
        }
    }

    /// Waits until it holds all four partitions (it publishes its state size as it
    /// restores each, on the partition's first record); when that was.
    async fn restored(&self) -> Instant {
        while self
            .metrics
            .state_queries()
            .size()
            .is_none_or(|size| size.partitions.len() < PARTITIONS as usize)
        {
            assert!(
                !self.running.is_finished(),
                "the windowed count stopped early"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Instant::now()
    }

    /// Stops it: its last checkpoint is written, and it leaves the group.
    async fn stop(self) {
        self.stop.cancel();
        self.running.await.unwrap().unwrap();
    }
}

/// Runs the windowed count until its group committed `committed` input records, then
/// stops it (its last checkpoint written). Returns the time from its start to that commit
/// and the resident memory then.
async fn run_windows(backend: &EmbeddedBackend, committed: u64) -> (Duration, u64) {
    let member = WindowsMember::start(backend, false);
    let took = member.committed(backend, committed).await - member.started;
    let resident = resident();
    member.stop().await;
    (took, resident)
}

/// A member holding every key's windows stops, and a second member, started before,
/// takes the four partitions over: the time from the first gone (its state freed) to every partition
/// restored (on the first record of each), with the second member keeping warm standbys
/// and without.
async fn windows_failover(backend: &EmbeddedBackend, keys: u64, committed: &mut u64, runs: usize) {
    let mut times: BTreeMap<bool, Vec<f64>> = BTreeMap::new();
    for run_index in 0..runs {
        for standby in [false, true] {
            let first = WindowsMember::start(backend, false);
            first.committed(backend, *committed).await;
            let second = WindowsMember::start(backend, standby);
            if standby {
                let deadline = Instant::now() + Duration::from_secs(600);
                while second
                    .metrics
                    .state_queries()
                    .size()
                    .is_none_or(|size| size.standby_entries < keys)
                {
                    assert!(Instant::now() < deadline, "the copies caught up");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            // Either way, let the group settle with both members.
            tokio::time::sleep(Duration::from_secs(2)).await;
            first.stop().await;
            freed().await; // as in phase 5
            let stopped = Instant::now();
            produce_indices(backend, one_per_partition()).await;
            *committed += u64::from(PARTITIONS);
            let took = second.restored().await - stopped;
            second.committed(backend, *committed).await;
            let restored = second
                .metrics
                .state_queries()
                .size()
                .unwrap_or_default()
                .restored_entries;
            println!(
                "windows failover of {keys} keys, run {run_index}, {}: {took:.2?} from the first member gone to every partition restored ({restored} changelog entries replayed)",
                if standby {
                    "warm standby"
                } else {
                    "no standby"
                },
            );
            times.entry(standby).or_default().push(took.as_secs_f64());
            second.stop().await;
        }
    }
    println!(
        "windows failover medians: {:.3} s without a standby, {:.3} s with",
        median(times[&false].clone()),
        median(times[&true].clone())
    );
}

/// Phase 6.
async fn windows(keys: u64, runs: usize) {
    let directory = tempfile::tempdir().unwrap();
    let backend = fresh(directory.path()).await;
    backend
        .create_topic(&TopicSpec::new("out", 1))
        .await
        .unwrap();
    let changelog = "bench.windows.changelog";
    produce_indices(&backend, 0..keys).await;
    let before = resident();
    let (took, built) = run_windows(&backend, keys).await;
    let bytes = bytes_on_disk(directory.path(), changelog);
    println!(
        "windows of {keys} keys: built in {took:.2?} from the start ({:.0} records/s), {:.0} bytes of memory per key, {} changelog records and {bytes} bytes on disk ({:.1} per key)",
        keys as f64 / took.as_secs_f64(),
        built.saturating_sub(before) as f64 / keys as f64,
        records(&backend, changelog).await,
        bytes as f64 / keys as f64,
    );
    let changed = keys / 100;
    let bytes_before = bytes_on_disk(directory.path(), changelog);
    produce_indices(&backend, (0..changed).map(|index| index * 100)).await;
    run_windows(&backend, keys + changed).await;
    let bytes = bytes_on_disk(directory.path(), changelog).saturating_sub(bytes_before);
    println!(
        "1% of the keys changed ({changed}): {bytes} changelog bytes on disk, {:.1} per key changed",
        bytes as f64 / changed as f64
    );
    let mut restores = Vec::new();
    let mut committed = keys + changed;
    for _ in 0..runs {
        produce_indices(&backend, one_per_partition()).await;
        committed += u64::from(PARTITIONS);
        let member = WindowsMember::start(&backend, false);
        let took = member.restored().await - member.started;
        member.committed(&backend, committed).await;
        member.stop().await;
        println!(
            "restore of the windows of {keys} keys: {took:.2?} from the instance's start to every partition restored"
        );
        restores.push(took.as_secs_f64());
    }
    println!("windows restore median: {:.2} s", median(restores));
    windows_failover(&backend, keys, &mut committed, runs).await;
}
