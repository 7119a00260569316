//! Keyed state against a model: random operation sequences on values, lists and maps,
//! applied by members of a consumer group that are killed (as `kill -9` would) and joined by
//! others (rebalances) at random moments. After each operation the streamlet sends the key's
//! whole state; every state sent must equal the model's after that operation (an
//! uninterrupted run's), so a restore that lost a change or applied one twice shows. At
//! least once, a state may be sent again after a crash but never differently; exactly
//! once, each is read committed once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, Producer, ProducerConfig,
    Record, TopicCreation, TopicInfo, TopicSpec, partition_for_key,
};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_host::{HostSettings, Wiring};
use runnel_streamlet::InstanceMetrics;
use runnel_streamlet::checkpoint::{CHANGELOG_ENTRIES_HEADER, changelog_entries};
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ListState, MapState, ValueState};
use tokio::sync::watch;

use crate::hosting;

const PARTITIONS: u32 = 3;

/// One operation on a key's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Operation {
    key: String,
    sequence: i64,
    /// 0: add to the total; 1: add to a field of the map; 2: push on the list (the last
    /// three kept); 3: clear everything.
    kind: i32,
    amount: i64,
    field: String,
}

/// A key's whole state after an operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Echo {
    key: String,
    sequence: i64,
    total: i64,
    recent: Vec<i64>,
    /// `field=sum`, sorted.
    fields: Vec<String>,
}

const IN: Inlet<Operation> = Inlet::new("in");
const OUT: Outlet<Echo> = Outlet::new("out");
const TOTAL: ValueState<i64> = ValueState::new("total");
const RECENT: ListState<i64> = ListState::new("recent");
const FIELDS: MapState<String, i64> = MapState::new("fields");

/// Applies operations to keyed state and echoes each key's state.
#[derive(Clone, Copy, Debug)]
struct Ledger {
    exactly_once: bool,
    /// Keep warm copies of the partitions other members hold.
    standby: bool,
}

impl Streamlet for Ledger {
    fn shape(&self) -> Shape {
        let shape = Shape::new().inlet(IN).outlet(OUT).keyed_state();
        if self.exactly_once {
            shape.exactly_once()
        } else {
            shape
        }
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut state = ctx
            .keyed_state()?
            .checkpoint_every(Duration::from_millis(5));
        if self.standby {
            state = state.warm_standby();
        }
        while let Some(next) = state.next(&mut input).await? {
            let Keyed::Message(message) = next else {
                unreachable!("the ledger sets no timers")
            };
            let operation = message.value();
            let mut entry = state.entry(message.partition(), operation.key.as_bytes());
            apply(&mut entry, operation)?;
            let echo = echo(&mut entry, operation)?;
            output.send(&echo).await?;
            message.commit();
        }
        Ok(())
    }
}

fn apply(entry: &mut runnel_streamlet::state::KeyedEntry<'_>, operation: &Operation) -> Result<()> {
    match operation.kind {
        0 => {
            entry
                .value(TOTAL)
                .update(|total| total.unwrap_or(0) + operation.amount)?;
        }
        1 => {
            let sum = entry.map(FIELDS).get(&operation.field)?.unwrap_or(0);
            entry
                .map(FIELDS)
                .insert(&operation.field, &(sum + operation.amount))?;
        }
        2 => {
            let mut recent = entry.list(RECENT).get()?;
            recent.push(operation.amount);
            recent.drain(..recent.len().saturating_sub(3));
            entry.list(RECENT).set(&recent)?;
        }
        _ => {
            entry.value(TOTAL).clear();
            entry.list(RECENT).clear();
            entry.map(FIELDS).clear();
        }
    }
    Ok(())
}

fn echo(
    entry: &mut runnel_streamlet::state::KeyedEntry<'_>,
    operation: &Operation,
) -> Result<Echo> {
    let mut fields: Vec<String> = entry
        .map(FIELDS)
        .entries()?
        .into_iter()
        .map(|(field, sum)| format!("{field}={sum}"))
        .collect();
    fields.sort();
    Ok(Echo {
        key: operation.key.clone(),
        sequence: operation.sequence,
        total: entry.value(TOTAL).get()?.unwrap_or(0),
        recent: entry.list(RECENT).get()?,
        fields,
    })
}

/// What an uninterrupted run echoes for each operation: the model.
fn model(operations: &[Operation]) -> BTreeMap<i64, Echo> {
    #[derive(Default)]
    struct KeyState {
        total: i64,
        recent: Vec<i64>,
        fields: BTreeMap<String, i64>,
    }
    let mut keys: BTreeMap<&str, KeyState> = BTreeMap::new();
    let mut echoes = BTreeMap::new();
    for operation in operations {
        let state = keys.entry(&operation.key).or_default();
        match operation.kind {
            0 => state.total += operation.amount,
            1 => *state.fields.entry(operation.field.clone()).or_default() += operation.amount,
            2 => {
                state.recent.push(operation.amount);
                state.recent.drain(..state.recent.len().saturating_sub(3));
            }
            _ => *state = KeyState::default(),
        }
        let echo = Echo {
            key: operation.key.clone(),
            sequence: operation.sequence,
            total: state.total,
            recent: state.recent.clone(),
            fields: state
                .fields
                .iter()
                .map(|(field, sum)| format!("{field}={sum}"))
                .collect(),
        };
        echoes.insert(operation.sequence, echo);
    }
    echoes
}

async fn setup(backend: &Arc<dyn Backend>) {
    for (topic, partitions) in [("in", PARTITIONS), ("out", 1), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
}

async fn produce(backend: &Arc<dyn Backend>, operations: &[Operation]) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Operation as AvroSchema>::get_schema();
    for operation in operations {
        let partition = partition_for_key(operation.key.as_bytes(), PARTITIONS);
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(operation).unwrap()).unwrap();
        let record = Record::new(value).with_key(operation.key.clone());
        drop(producer.send("in", partition, record).await.unwrap());
    }
    producer.flush().await.unwrap();
}

/// The wiring of member `member` (each member has a transactional id of its own, which its
/// restart fences).
fn wiring(ended: watch::Receiver<bool>, exactly_once: bool, member: usize) -> Wiring {
    let mut settings = HostSettings {
        poll_batch: 16,
        ..HostSettings::default()
    };
    // A killed member's open transaction holds restores of its partitions back until the
    // log aborts it: after two seconds here, rather than a minute.
    settings
        .producer
        .settings
        .insert("transaction.timeout.ms".into(), "2000".into());
    let transactional_id = format!("app.ledger.{member}");
    hosting::wiring(
        "ledger",
        ended,
        settings,
        exactly_once.then_some(transactional_id.as_str()),
    )
}

async fn committed(backend: &Arc<dyn Backend>) -> u64 {
    let committed = backend.committed("app.ledger.in", "in").await.unwrap();
    committed.into_iter().map(Option::unwrap_or_default).sum()
}

/// Waits until more than `before` inputs are committed.
async fn wait_for_progress(backend: &Arc<dyn Backend>, before: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed(backend).await <= before {
        assert!(Instant::now() < deadline, "{what} committed nothing");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Every echo a read-committed reader sees, reading to the end of `out` (past killed
/// members' transactions, once the log has finished them).
async fn echoes(backend: &Arc<dyn Backend>) -> Vec<Echo> {
    let reader = backend
        .consumer(&ConsumerConfig::new("check", ["out"]))
        .await
        .unwrap();
    let end = backend.offsets("out").await.unwrap()[0].end;
    let schema = <Echo as AvroSchema>::get_schema();
    let mut echoes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while reader
        .positions()
        .first()
        .is_none_or(|(_, position)| *position < end)
    {
        assert!(
            Instant::now() < deadline,
            "the reader never reached the end {end} of out"
        );
        let polled = tokio::time::timeout(Duration::from_millis(100), reader.poll(1000)).await;
        for consumed in polled.into_iter().flat_map(Result::unwrap) {
            let bytes = consumed.record.value.expect("echoes are never null");
            let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
            echoes.push(apache_avro::from_value(&value).unwrap());
        }
    }
    reader.close().await.unwrap();
    echoes
}

/// One run of the schedule: one member, or two (the second joins once the first made
/// progress, so the partitions are split and moved), killed after `progress` more commits.
#[derive(Clone, Debug)]
struct Run {
    members: usize,
    progress: u64,
}

/// A member of the ledger's group, restarted when it fails as the runtime would.
fn member(
    backend: &Arc<dyn Backend>,
    ended: &watch::Receiver<bool>,
    ledger: Ledger,
    index: usize,
    failures: &hosting::Failures,
) -> hosting::Supervised {
    let ended = ended.clone();
    hosting::Supervised::start(
        move || (ledger, wiring(ended.clone(), ledger.exactly_once, index)),
        backend.clone(),
        failures.clone(),
    )
}

/// Feeds `operations` in shares, one per run, through members killed as `runs` says,
/// then reads the rest with one member to the end; returns the echoes read, and the
/// errors members failed with (and were restarted after).
async fn run_with_crashes(
    backend: Arc<dyn Backend>,
    operations: &[Operation],
    runs: &[Run],
    ledger: Ledger,
) -> (Vec<Echo>, Vec<String>) {
    let failures = hosting::Failures::default();
    setup(&backend).await;
    let (end, ended) = watch::channel(false);
    let share = operations.len() / (runs.len() + 1);
    for (index, run) in runs.iter().enumerate() {
        let before = committed(&backend).await;
        let mut members = vec![member(&backend, &ended, ledger, 0, &failures)];
        produce(&backend, &operations[index * share..(index + 1) * share]).await;
        wait_for_progress(&backend, before, "the first member").await;
        if run.members > 1 {
            members.push(member(&backend, &ended, ledger, 1, &failures));
        }
        let target = before + run.progress;
        let deadline = Instant::now() + Duration::from_secs(2);
        while committed(&backend).await < target && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // The members die one after the other: the survivor takes the partitions over.
        for member in members {
            assert!(
                !member.is_finished(),
                "a member stopped before it was killed"
            );
            member.kill().await;
        }
    }
    produce(&backend, &operations[runs.len() * share..]).await;
    end.send_replace(true);
    let last = member(&backend, &ended, ledger, 0, &failures);
    tokio::time::timeout(Duration::from_secs(120), last.finish())
        .await
        .expect("the last run finishes")
        .unwrap();
    let failures = failures.lock().unwrap().clone();
    (echoes(&backend).await, failures)
}

/// Checks the echoes against the model: each equals the model's, every operation has one,
/// and (exactly once) none is read twice.
fn check(operations: &[Operation], echoes: &[Echo], exactly_once: bool) {
    let expected = model(operations);
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    for echo in echoes {
        assert_eq!(
            Some(echo),
            expected.get(&echo.sequence),
            "the state after operation {} differs from an uninterrupted run's",
            echo.sequence
        );
        *seen.entry(echo.sequence).or_default() += 1;
    }
    let missing: Vec<&i64> = expected
        .keys()
        .filter(|s| !seen.contains_key(s))
        .take(5)
        .collect();
    assert!(
        missing.is_empty(),
        "no state was sent after operations {missing:?}"
    );
    if exactly_once {
        let twice: Vec<_> = seen
            .iter()
            .filter(|(_, count)| **count > 1)
            .take(5)
            .collect();
        assert!(
            twice.is_empty(),
            "read more than once (operation, times): {twice:?}"
        );
    }
}

fn operation(sequence: i64, (key, kind, amount, field): (u8, i32, i64, u8)) -> Operation {
    Operation {
        key: format!("key-{key}"),
        sequence,
        kind,
        amount,
        field: format!("f{field}"),
    }
}

fn operations() -> impl Strategy<Value = Vec<Operation>> {
    let one = (
        0..12u8,
        prop_oneof![3 => 0..3i32, 1 => Just(3)],
        1..100i64,
        0..4u8,
    );
    prop::collection::vec(one, 200..600).prop_map(|drawn| {
        drawn
            .into_iter()
            .enumerate()
            .map(|(sequence, drawn)| operation(sequence as i64, drawn))
            .collect()
    })
}

fn runs() -> impl Strategy<Value = Vec<Run>> {
    let run = (1..=2usize, 1..80u64).prop_map(|(members, progress)| Run { members, progress });
    prop::collection::vec(run, 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn keyed_state_restored_after_crashes_and_rebalances_equals_an_uninterrupted_run(
        operations in operations(),
        runs in runs(),
        standby in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (echoes, failures) = runtime.block_on(run_with_crashes(
            Arc::new(MemoryBackend::new()),
            &operations,
            &runs,
            Ledger { exactly_once: false, standby },
        ));
        prop_assert!(failures.is_empty(), "members failed: {failures:?}");
        check(&operations, &echoes, false);
    }
}

/// A deterministic draw below a bound (a linear congruential generator from `seed`).
fn seeded(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |below| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    }
}

/// `count` operations on twelve keys, an eighth of them clears.
fn drawn_operations(draw: &mut impl FnMut(u64) -> u64, count: i64) -> Vec<Operation> {
    (0..count)
        .map(|sequence| {
            let kind = if draw(8) == 0 { 3 } else { draw(3) as i32 };
            let drawn = (draw(12) as u8, kind, 1 + draw(99) as i64, draw(4) as u8);
            operation(sequence, drawn)
        })
        .collect()
}

/// On the embedded log, which does not compact, the changelog's records that snapshots
/// superseded are deleted (whole segments, a generation behind), and restores through
/// many crashes still give the model's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn superseded_changelog_records_are_deleted_and_restores_still_match_the_model() {
    let directory = tempfile::tempdir().unwrap();
    let embedded = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(embedded.clone());
    // Small segments, so that deleting whole segments below an offset deletes some. (The
    // host leaves a changelog topic that exists alone.)
    let changelog = TopicSpec::new("app.ledger.changelog", PARTITIONS)
        .with_config("segment.bytes", "1024")
        .with_config("retention.ms", "-1");
    backend.create_topic(&changelog).await.unwrap();
    let mut draw = seeded(0xc0ffee);
    let operations = drawn_operations(&mut draw, 2_000);
    // A snapshot follows every eight owners of a partition: twenty runs make two.
    let runs: Vec<Run> = (0..20)
        .map(|_| Run {
            members: 1,
            progress: 10 + draw(60),
        })
        .collect();
    let (echoes, failures) = run_with_crashes(
        backend.clone(),
        &operations,
        &runs,
        Ledger {
            exactly_once: false,
            standby: false,
        },
    )
    .await;
    assert!(failures.is_empty(), "members failed: {failures:?}");
    check(&operations, &echoes, false);
    let starts: Vec<u64> = backend
        .offsets("app.ledger.changelog")
        .await
        .unwrap()
        .iter()
        .map(|offsets| offsets.start)
        .collect();
    assert!(
        starts.iter().all(|start| *start > 0),
        "every partition's superseded records were deleted; starts: {starts:?}"
    );
}

/// A member keeping warm copies of the partitions another holds takes them over, when that
/// one is killed, without replaying their changelog, and the state it goes on with is the
/// model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_takes_partitions_over_without_replaying_them() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    setup(&backend).await;
    let operations = drawn_operations(&mut seeded(11), 600);
    let (before, after) = operations.split_at(300);
    produce(&backend, before).await;
    let (end, ended) = watch::channel(false);
    let member = |standby| {
        hosting::start_observed(
            Ledger {
                exactly_once: false,
                standby,
            },
            backend.clone(),
            wiring(ended.clone(), false, 0),
        )
    };
    let (first, _, first_metrics) = member(false);
    wait_for_progress(&backend, 299, "the first member").await;
    let size = |metrics: &InstanceMetrics| metrics.state_queries().size().unwrap_or_default();
    let total = wait_for(|| {
        let size = size(&first_metrics);
        (size.partitions.len() == PARTITIONS as usize).then_some(size.entries)
    })
    .await;

    let (second, second_finished, second_metrics) = member(true);
    // The second member holds copies of every partition (those assigned to it are restored
    // on their first message), holding what the first member's last checkpoints name.
    let restored_before = wait_for(|| {
        let size = size(&second_metrics);
        let caught_up =
            size.standby_partitions.len() == PARTITIONS as usize && size.standby_entries == total;
        caught_up.then_some(size.restored_entries)
    })
    .await;
    hosting::kill(first).await;
    produce(&backend, after).await;
    end.send_replace(true);
    tokio::time::timeout(Duration::from_secs(60), second_finished)
        .await
        .expect("the second member reads to the end")
        .unwrap()
        .unwrap();
    let restored_after = size(&second_metrics).restored_entries;
    second.shutdown_background();
    assert_eq!(
        restored_after, restored_before,
        "taking the partitions over replayed changelog entries the copies held"
    );
    check(&operations, &echoes(&backend).await, false);
}

/// Polls `value` until it gives something (at most 30 s).
async fn wait_for<T>(mut value: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = value() {
            return value;
        }
        assert!(Instant::now() < deadline, "the condition never held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A changelog whose records a restore needs were deleted (by retention set by hand) fails
/// the restore, saying so, instead of restoring part of the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refuses_a_changelog_missing_records_it_needs() {
    let directory = tempfile::tempdir().unwrap();
    let embedded = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(embedded);
    // A segment per batch of records.
    let changelog = TopicSpec::new("app.ledger.changelog", PARTITIONS)
        .with_config("segment.bytes", "64")
        .with_config("retention.ms", "-1");
    backend.create_topic(&changelog).await.unwrap();
    setup(&backend).await;
    let operations = drawn_operations(&mut seeded(7), 200);
    // Bounded runs, each restoring what the one before left: the last finds records gone.
    let mut outcomes = Vec::new();
    for (run, part) in operations.chunks(50).enumerate() {
        produce(&backend, part).await;
        if run == 3 {
            for partition in 0..PARTITIONS {
                backend
                    .delete_records_before("app.ledger.changelog", partition, u64::MAX)
                    .await
                    .unwrap();
            }
        }
        let (_, ended) = watch::channel(true);
        let (runtime, finished) = hosting::start_killable(
            Ledger {
                exactly_once: false,
                standby: false,
            },
            backend.clone(),
            wiring(ended, false, 0),
        );
        let outcome = tokio::time::timeout(Duration::from_secs(60), finished)
            .await
            .expect("a bounded run ends")
            .unwrap();
        runtime.shutdown_background();
        outcomes.push(outcome.map_err(|error| error.to_string()));
    }
    let error = outcomes.pop().unwrap().unwrap_err();
    assert!(
        outcomes.iter().all(Result::is_ok),
        "the runs before the deletion end well: {outcomes:?}"
    );
    assert!(
        error.contains("of the changelog topic 'app.ledger.changelog' starts at offset")
            && error.contains("needs its records from offset"),
        "{error}"
    );
}

/// Exactly once on the embedded log: members killed eight times, every other time after a
/// second member joined and took partitions over (members keep warm standbys, so takeovers
/// go on from copies); each operation's state is read committed once. A member that loses partitions with work in its open transaction fails
/// (and is restarted) rather than commit it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_keyed_state_on_the_embedded_log_is_read_once_after_crashes() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let mut draw = seeded(0x5eed);
    let operations = drawn_operations(&mut draw, 3_000);
    let runs: Vec<Run> = (0..8)
        .map(|run| Run {
            members: 1 + run % 2,
            progress: 20 + draw(200),
        })
        .collect();
    let (echoes, failures) = run_with_crashes(
        Arc::new(backend),
        &operations,
        &runs,
        Ledger {
            exactly_once: true,
            standby: true,
        },
    )
    .await;
    check(&operations, &echoes, true);
    eprintln!("{} members failed on losing partitions", failures.len());
    assert!(
        failures
            .iter()
            .all(|failure| failure.contains("assigned to another member")),
        "members failed otherwise than by losing partitions: {failures:?}"
    );
}

/// The changelog key of a key's `total` (the store's layout: kind, name length, name, key).
fn total_key(key: &str) -> Vec<u8> {
    let mut stored = vec![b'v', TOTAL.name().len() as u8];
    stored.extend_from_slice(TOTAL.name().as_bytes());
    stored.extend_from_slice(key.as_bytes());
    stored
}

/// What an owner wrote to the changelog after its last checkpoint (here: a foreign
/// writer's record, as a crashed owner or one a rebalance replaced leaves) is not part of
/// the state, and the next checkpoint writes the key again, so the key's last changelog
/// record (all a compacted changelog keeps) is the state's.
/// On a log that does not compact, changelog records hold many entries each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changelog_records_after_the_last_checkpoint_are_skipped_and_overwritten() {
    let memory = MemoryBackend::new();
    stray_records_are_skipped_and_overwritten(memory.clone(), Arc::new(memory)).await;
}

/// The same where the changelog is compacted: a record per entry, keyed by the entry's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_changelog_records_after_the_last_checkpoint_are_skipped_and_overwritten() {
    let memory = MemoryBackend::new();
    let compacted = Compacted(memory.clone());
    stray_records_are_skipped_and_overwritten(memory.clone(), Arc::new(compacted)).await;
    // Every record is one entry (the repair checked above being the key's last one).
    let records = memory.records("app.ledger.changelog").unwrap();
    assert!(records.iter().all(|consumed| {
        consumed
            .record
            .headers
            .get_str(CHANGELOG_ENTRIES_HEADER)
            .is_none()
            && consumed.record.key.is_some()
    }));
}

/// A memory backplane that says it compacts topics: a compacted log may keep any number of
/// a key's older records, and this one keeps them all.
#[derive(Debug)]
struct Compacted(MemoryBackend);

#[async_trait::async_trait]
impl Backend for Compacted {
    async fn create_topic(&self, spec: &TopicSpec) -> runnel_backend::Result<TopicCreation> {
        self.0.create_topic(spec).await
    }
    async fn topic(&self, name: &str) -> runnel_backend::Result<Option<TopicInfo>> {
        self.0.topic(name).await
    }
    async fn offsets(&self, topic: &str) -> runnel_backend::Result<Vec<PartitionOffsets>> {
        self.0.offsets(topic).await
    }
    async fn committed(
        &self,
        group: &str,
        topic: &str,
    ) -> runnel_backend::Result<Vec<Option<u64>>> {
        self.0.committed(group, topic).await
    }
    async fn producer(&self, config: &ProducerConfig) -> runnel_backend::Result<Arc<dyn Producer>> {
        self.0.producer(config).await
    }
    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        self.0.consumer(config).await
    }
    async fn partition_reader(
        &self,
        config: &runnel_backend::ReaderConfig,
    ) -> runnel_backend::Result<Box<dyn runnel_backend::PartitionReader>> {
        self.0.partition_reader(config).await
    }
    fn supports_compaction(&self) -> bool {
        true
    }
    async fn topic_compacted(&self, _topic: &str) -> runnel_backend::Result<bool> {
        Ok(true)
    }
}

async fn stray_records_are_skipped_and_overwritten(
    memory: MemoryBackend,
    backend: Arc<dyn Backend>,
) {
    // Key 0 only before the crash, so its last record after the restart is the repair;
    // after it, a neighbour on the same partition, so that the partition is restored.
    let partition = partition_for_key(b"key-0", PARTITIONS);
    let neighbour = (1..)
        .find(|n| partition_for_key(format!("key-{n}").as_bytes(), PARTITIONS) == partition)
        .unwrap();
    let key = |sequence: i64| {
        if sequence < 20 {
            sequence % 4
        } else {
            neighbour
        }
    };
    let operations: Vec<Operation> = (0..40)
        .map(|sequence| operation(sequence, (key(sequence) as u8, 0, 1 + sequence, 0)))
        .collect();
    let (first, rest) = operations.split_at(20);
    setup(&backend).await;
    produce(&backend, first).await;
    let (end, ended) = watch::channel(false);
    let (runtime, running) = hosting::start_killable(
        Ledger {
            exactly_once: false,
            standby: false,
        },
        backend.clone(),
        wiring(ended.clone(), false, 0),
    );
    // Offsets are committed once the checkpoint reflecting them is durable: all 20
    // committed means a checkpoint covers them all. Then stop as a crash would.
    wait_for_progress(&backend, 19, "the first run").await;
    assert!(!running.is_finished());
    hosting::kill(runtime).await;

    let stray = Record::new(vec![0u8, 0x7e]) // 63, zigzag-encoded
        .with_key(total_key("key-0"))
        .with_header(runnel_streamlet::checkpoint::CHANGELOG_WRITER_HEADER, "abc");
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    producer
        .send("app.ledger.changelog", partition, stray)
        .await
        .unwrap()
        .await
        .unwrap();

    produce(&backend, rest).await;
    end.send_replace(true);
    let (runtime, last) = hosting::start_killable(
        Ledger {
            exactly_once: false,
            standby: false,
        },
        backend.clone(),
        wiring(ended, false, 0),
    );
    tokio::time::timeout(Duration::from_secs(60), last)
        .await
        .expect("the second run finishes")
        .unwrap()
        .unwrap();
    runtime.shutdown_background();
    check(&operations, &echoes(&backend).await, false);

    // The in-memory log does not compact, so the records hold many entries each (the
    // stray one a single entry).
    let (_, last_total) = memory
        .records("app.ledger.changelog")
        .unwrap()
        .iter()
        .flat_map(|consumed| changelog_entries(&consumed.record).unwrap())
        .filter(|(key, _)| key[..] == total_key("key-0")[..])
        .last()
        .unwrap();
    let expected: i64 = operations
        .iter()
        .filter(|o| o.key == "key-0")
        .map(|o| o.amount)
        .sum();
    let value = last_total.unwrap();
    assert_eq!(value[0], 0, "no time to live");
    assert_eq!(postcard_i64(&value[1..]), expected);
}

/// A zigzag varint, as postcard encodes an `i64`.
fn postcard_i64(bytes: &[u8]) -> i64 {
    let mut raw: u64 = 0;
    for (index, byte) in bytes.iter().enumerate() {
        raw |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            break;
        }
    }
    (raw >> 1) as i64 ^ -((raw & 1) as i64)
}
