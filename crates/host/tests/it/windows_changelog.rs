//! Windows kept by input partition are keyed state, and windows kept whole have a
//! changelog too: a checkpoint writes the keys whose windows changed to the changelog, not
//! the whole state, and a checkpoint written before (the partition's, or the instance's,
//! whole state in one record) restores.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{Backend, MemoryBackend, ProducerConfig, Record, TopicSpec};
use runnel_host::HostSettings;
use runnel_streamlet::checkpoint::changelog_entries;
use runnel_streamlet::prelude::*;
use runnel_streamlet::runtime::{InletOffset, checkpoint_record};
use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::{Count, Pane, WindowOperator, WindowSpec};
use tokio::sync::watch;

use crate::hosting;
use crate::model::Click;

const IN: Inlet<Click> = Inlet::new("in");
const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
const TEN_SECONDS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(10));
const BOUND: Duration = Duration::from_secs(3);

/// How a window count keeps its state.
#[derive(Clone, Copy, Debug)]
enum Kept {
    ByPartition,
    Whole,
}

fn counts() -> impl Streamlet {
    kept_counts(Kept::ByPartition)
}

fn kept_counts(kept: Kept) -> WindowedAggregate<Click, String, Count<Click>> {
    let counts = WindowedAggregate::new(IN, OUT, TEN_SECONDS, Count::new())
        .key_by(|c: &Click| c.user.clone())
        .event_time(|c| c.time)
        .watermarks(Watermarks::bounded(BOUND))
        .checkpoint_every(Duration::from_millis(10));
    match kept {
        Kept::ByPartition => counts.state_by_partition(),
        Kept::Whole => counts,
    }
}

async fn setup() -> MemoryBackend {
    let backend = MemoryBackend::new();
    for topic in ["in", "out", "dead"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    backend
}

async fn produce(backend: &MemoryBackend, clicks: impl IntoIterator<Item = Click>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Click as AvroSchema>::get_schema();
    for click in clicks {
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(&click).unwrap()).unwrap();
        drop(
            producer
                .send("in", 0, Record::new(value).with_key(click.user))
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();
}

fn click(user: &str, time: i64) -> Click {
    Click {
        user: user.to_owned(),
        time,
    }
}

async fn wait_for_commits(backend: &MemoryBackend, count: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let committed = backend.committed("app.counts.in", "in").await.unwrap()[0];
        if committed.unwrap_or_default() >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {committed:?} of {count} inputs were committed"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The keys of the changelog entries from `from` on (each key as the windows encode it).
fn changelog_keys(backend: &MemoryBackend, from: usize) -> Vec<String> {
    backend.records("app.counts.changelog").unwrap()[from..]
        .iter()
        .flat_map(|consumed| changelog_entries(&consumed.record).unwrap())
        .map(|(key, _)| String::from_utf8(key.to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_of_windows_writes_only_the_keys_whose_windows_changed() {
    for kept in [Kept::ByPartition, Kept::Whole] {
        only_the_keys_whose_windows_changed(kept).await;
    }
}

async fn only_the_keys_whose_windows_changed(kept: Kept) {
    let backend = setup().await;
    let (end, ended) = watch::channel(false);
    let wiring = hosting::wiring("counts", ended, HostSettings::default(), None);
    let streamlet = kept_counts(kept);
    let (member, running) = hosting::start_killable(streamlet, Arc::new(backend.clone()), wiring);

    let users = 1_000;
    produce(
        &backend,
        (0..users).map(|i| click(&format!("user-{i}"), 1_000)),
    )
    .await;
    wait_for_commits(&backend, users).await;
    let first = changelog_keys(&backend, 0);
    assert!(
        first.len() >= users as usize,
        "every key's windows reached the changelog: {} entries",
        first.len()
    );

    let written = backend.records("app.counts.changelog").unwrap().len();
    produce(
        &backend,
        ["user-7", "user-400", "user-999"].map(|u| click(u, 2_000)),
    )
    .await;
    wait_for_commits(&backend, users + 3).await;
    let mut changed = changelog_keys(&backend, written);
    changed.sort();
    assert_eq!(
        changed,
        ["\"user-400\"", "\"user-7\"", "\"user-999\""],
        "{kept:?}: the checkpoints after the first wrote the three keys that changed"
    );

    finish(end, running, member).await;
    let counts = panes(&backend);
    assert_eq!(counts.len(), users as usize);
    assert_eq!(counts[&("user-7".to_owned(), 0)], 2);
    assert_eq!(counts[&("user-8".to_owned(), 0)], 1);
}

/// Ends the input and waits for the member to finish with it.
async fn finish(
    end: watch::Sender<bool>,
    running: tokio::task::JoinHandle<Result<()>>,
    member: tokio::runtime::Runtime,
) {
    end.send_replace(true);
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the bounded input ends")
        .unwrap()
        .unwrap();
    hosting::kill(member).await;
}

/// Each window's last count.
fn panes(backend: &MemoryBackend) -> BTreeMap<(String, i64), i64> {
    let schema = <Pane<String, i64> as AvroSchema>::get_schema();
    backend
        .records("out")
        .unwrap()
        .into_iter()
        .map(|consumed| {
            let bytes = consumed.record.value.expect("panes are never null");
            let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
            let pane: Pane<String, i64> = apache_avro::from_value(&value).unwrap();
            ((pane.key, pane.window_start), pane.value)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_holding_the_whole_state_restores() {
    for kept in [Kept::ByPartition, Kept::Whole] {
        whole_state_restores(kept).await;
    }
}

async fn whole_state_restores(kept: Kept) {
    let backend = setup().await;
    // What the windows kept before they were keyed state: `alice` clicked five times in
    // the first ten seconds, the five records before offset 5, which are not read again.
    let mut operator = WindowOperator::<String, _>::new(TEN_SECONDS, Count::<Click>::new());
    let mut watermarks = WatermarkHolder::new(Watermarks::bounded(BOUND));
    watermarks.add_partition(0, 0);
    for second in 1..=5 {
        let time = second * 1_000;
        operator.add(
            "alice".to_owned(),
            time,
            &click("alice", time),
            0,
            &mut Vec::new(),
        );
        watermarks.observe(0, time, 0);
    }
    let whole: serde_json::Value = serde_json::json!({
        "operator": serde_json::from_slice::<serde_json::Value>(&operator.snapshot()).unwrap(),
        "watermarks": watermarks,
    });
    backend
        .create_topic(&TopicSpec::new("app.counts.checkpoints", 1))
        .await
        .unwrap();
    let offsets = [InletOffset {
        inlet: "in".into(),
        topic: "in".into(),
        partition: 0,
        offset: 5,
    }];
    let checkpoint = checkpoint_record(
        "counts",
        serde_json::to_vec(&whole).unwrap().into(),
        &offsets,
        None,
    );
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    producer
        .send("app.counts.checkpoints", 0, checkpoint)
        .await
        .unwrap()
        .await
        .unwrap();
    produce(
        &backend,
        (1..=5).map(|second| click("counted-before", second * 1_000)),
    )
    .await;
    produce(&backend, [click("alice", 6_000), click("bob", 7_000)]).await;

    let (end, ended) = watch::channel(false);
    let wiring = hosting::wiring("counts", ended, HostSettings::default(), None);
    let streamlet = kept_counts(kept);
    let (member, running) = hosting::start_killable(streamlet, Arc::new(backend.clone()), wiring);
    wait_for_commits(&backend, 7).await;
    let mut written = changelog_keys(&backend, 0);
    written.sort();
    written.dedup();
    assert_eq!(
        written,
        ["\"alice\"", "\"bob\""],
        "{kept:?}: the first checkpoint wrote the restored windows to the changelog"
    );
    finish(end, running, member).await;
    let expected: BTreeMap<(String, i64), i64> =
        HashMap::from([(("alice".to_owned(), 0), 6), (("bob".to_owned(), 0), 1)])
            .into_iter()
            .collect();
    assert_eq!(panes(&backend), expected, "{kept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_windows_of_a_key_answer_queries_and_their_size_is_shown() {
    let backend = setup().await;
    let (_end, ended) = watch::channel(false);
    let wiring = hosting::wiring("counts", ended, HostSettings::default(), None);
    let (member, _running, metrics) =
        hosting::start_observed(counts(), Arc::new(backend.clone()), wiring);
    produce(
        &backend,
        [
            click("alice", 1_000),
            click("alice", 2_000),
            click("bob", 3_000),
        ],
    )
    .await;
    wait_for_commits(&backend, 3).await;

    let queries = metrics.state_queries();
    let alice = queries
        .ask(b"alice".to_vec(), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(alice.owner && alice.partition == Some(0), "{alice:?}");
    assert_eq!(alice.states.len(), 1, "{alice:?}");
    assert_eq!(
        (alice.states[0].name.as_str(), alice.states[0].kind.as_str()),
        ("windows", "windows")
    );
    let windows = alice.states[0].value.to_string();
    assert!(windows.contains("Sliced"), "the key's windows: {windows}");
    assert!(
        alice
            .timers
            .iter()
            .any(|timer| timer.domain == "event-time"),
        "the on-time pane's timer is pending: {alice:?}"
    );
    let nobody = queries
        .ask(b"carol".to_vec(), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(nobody.owner && nobody.states.is_empty() && nobody.timers.is_empty());

    let size = queries.size().expect("the size is published");
    assert_eq!(
        (size.partitions.as_slice(), size.entries),
        ([0].as_slice(), 2)
    );
    assert!(size.bytes > 0, "{size:?}");
    hosting::kill(member).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_takes_windows_over_without_replaying_them() {
    let backend = setup().await;
    let (end, ended) = watch::channel(false);
    let wiring = || hosting::wiring("counts", ended.clone(), HostSettings::default(), None);
    let users = 100;
    let first_round = (0..users).map(|i| click(&format!("user-{i}"), 1_000));
    produce(&backend, first_round).await;
    let (first, _) = hosting::start_killable(counts(), Arc::new(backend.clone()), wiring());
    wait_for_commits(&backend, users).await;

    let standby = WindowedAggregate::new(IN, OUT, TEN_SECONDS, Count::new())
        .key_by(|c: &Click| c.user.clone())
        .event_time(|c| c.time)
        .watermarks(Watermarks::bounded(BOUND))
        .checkpoint_every(Duration::from_millis(10))
        .warm_standby();
    let (second, running, metrics) =
        hosting::start_observed(standby, Arc::new(backend.clone()), wiring());
    let size = || metrics.state_queries().size().unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(size().standby_partitions == [0] && size().standby_entries == users) {
        assert!(
            Instant::now() < deadline,
            "the copy caught up: {:?}",
            size()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let restored_before = size().restored_entries;
    hosting::kill(first).await;
    produce(
        &backend,
        (0..users).map(|i| click(&format!("user-{i}"), 2_000)),
    )
    .await;
    wait_for_commits(&backend, 2 * users).await;
    assert_eq!(
        size().restored_entries,
        restored_before,
        "taking the partition over replayed entries the copy held"
    );
    assert_eq!(size().partitions, [0]);
    finish(end, running, second).await;
    let counts = panes(&backend);
    assert_eq!(counts.len(), users as usize);
    assert!(counts.values().all(|count| *count == 2), "{counts:?}");
}
