//! The backplane conformance suite: what every [`Backend`] must do, written once against the
//! trait and run against each implementation.
//!
//! Every case takes a fresh handle and uses topic and group names of its own, so the suite
//! can share one long-lived broker. Run all of it from an implementation's tests with
//! [`conformance_tests!`](crate::conformance_tests):
//!
//! ```
//! runnel_backend::conformance_tests!(async { runnel_backend::MemoryBackend::new() });
//! ```

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{
    Backend, CommitOffset, ConsumedRecord, Consumer, ConsumerConfig, Error, GroupOffsets,
    Isolation, PartitionOffsets, PartitionReader, ProducerConfig, ReaderConfig, Record, StartFrom,
    TopicCreation, TopicPartition, TopicSpec, TransactionConfig,
};

/// How long one case may take before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Generates one `#[tokio::test]` per conformance case, each calling `$make` (an expression
/// evaluating to a future of a [`Backend`]) for a fresh backend. Attributes given before the
/// expression, such as `#[ignore = "needs kafka"]`, go on every generated test.
#[macro_export]
macro_rules! conformance_tests {
    ($(#[$meta:meta])* $make:expr) => {
        $crate::conformance_tests!(@cases [$(#[$meta])*] $make;
            create_topic_is_idempotent
            appends_get_consecutive_offsets
            records_round_trip
            null_values_stay_distinct_from_empty
            order_is_kept_per_partition
            committed_offsets_resume_a_group
            seek_moves_the_next_poll
            groups_are_independent
            latest_skips_existing_records
            poll_waits_for_new_records
            unknown_topics_and_partitions_are_errors
            flush_waits_for_every_receipt
            try_send_keeps_the_order_and_outcomes_of_send
            members_of_a_group_share_partitions
            a_rebalance_that_takes_partitions_away_counts_a_revocation
            closing_a_member_hands_its_partitions_over
            a_partition_reader_starts_at_its_offset_and_reads_only_its_partition
            a_partition_reader_reads_a_set_of_partitions
            a_partition_reader_stops_cleanly_at_the_end_and_waits_there
            a_partition_reader_leaves_groups_alone
            partition_readers_of_unknown_partitions_are_errors
            schemas_are_kept_per_topic_in_registration_order
        );
    };
    (@cases $attributes:tt $make:expr; $($case:ident)*) => {
        $( $crate::conformance_tests!(@case $attributes $make; $case); )*
    };
    (@case [$(#[$meta:meta])*] $make:expr; $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$meta])*
        async fn $case() {
            let backend = $make.await;
            $crate::conformance::run(stringify!($case), $crate::conformance::$case(&backend)).await;
        }
    };
}

/// Generates one `#[tokio::test]` per transaction case (see
/// [`Backend::transactional_producer`]), for backplanes with transactions; used like
/// [`conformance_tests!`](crate::conformance_tests).
///
/// ```
/// runnel_backend::transaction_conformance_tests!(async { runnel_backend::MemoryBackend::new() });
/// ```
#[macro_export]
macro_rules! transaction_conformance_tests {
    ($(#[$meta:meta])* $make:expr) => {
        $crate::conformance_tests!(@cases [$(#[$meta])*] $make;
            committed_transactions_are_read_with_their_offsets
            aborted_transactions_are_never_read_committed
            open_transactions_are_invisible_to_read_committed_readers
            a_new_producer_fences_the_old_one_and_aborts_its_transaction
            a_member_cannot_commit_offsets_of_a_partition_a_rebalance_moved
            read_committed_partition_readers_skip_aborted_and_open_transactions
        );
    };
}

/// Runs one case with a timeout, so that a hung backplane fails instead of blocking CI.
///
/// # Panics
///
/// When the case does not finish within a minute.
pub async fn run(name: &str, case: impl Future<Output = ()>) {
    if tokio::time::timeout(CASE_TIMEOUT, case).await.is_err() {
        panic!("conformance case {name} did not finish within {CASE_TIMEOUT:?}");
    }
}

/// A name no other case or run uses, so cases can share a broker.
pub fn unique(base: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{base}-{nanos:x}-{}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

async fn topic(backend: &impl Backend, base: &str, partitions: u32) -> String {
    let name = unique(base);
    let created = backend
        .create_topic(&TopicSpec::new(&name, partitions))
        .await
        .unwrap();
    assert_eq!(created, TopicCreation::Created);
    name
}

async fn produce(backend: &impl Backend, topic: &str, partition: u32, values: &[&str]) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for value in values {
        let receipt = producer
            .send(topic, partition, Record::new(value.to_string()))
            .await;
        receipt.unwrap().await.unwrap();
    }
}

/// Polls until `count` records have arrived.
async fn consume(consumer: &dyn Consumer, count: usize) -> Vec<ConsumedRecord> {
    let mut records = Vec::new();
    while records.len() < count {
        records.extend(consumer.poll(count - records.len()).await.unwrap());
    }
    assert_eq!(
        records.len(),
        count,
        "poll returned more records than asked for"
    );
    records
}

fn values(records: &[ConsumedRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            String::from_utf8_lossy(r.record.value.as_deref().unwrap_or_default()).into_owned()
        })
        .collect()
}

/// Where the backplane keeps schemas, a topic's are listed in the order they were first
/// registered (the first is the base), a registration is idempotent, and topics do not
/// share them; elsewhere registering is unsupported.
pub async fn schemas_are_kept_per_topic_in_registration_order(backend: &impl Backend) {
    let name = topic(backend, "schemas", 1).await;
    let first = crate::TopicSchema::new("a1", r#"{"type": "string"}"#);
    let second = crate::TopicSchema::new("b2", r#"{"type": "long"}"#);
    if !backend.keeps_schemas() {
        assert!(matches!(
            backend.register_schema(&name, &first).await,
            Err(Error::Unsupported { .. })
        ));
        return;
    }
    assert!(backend.topic_schemas(&name).await.unwrap().is_empty());
    backend.register_schema(&name, &first).await.unwrap();
    let both = backend.register_schema(&name, &second).await.unwrap();
    assert_eq!(both, [first.clone(), second.clone()]);
    backend.register_schema(&name, &first).await.unwrap();
    assert_eq!(backend.topic_schemas(&name).await.unwrap(), [first, second]);
    let other = topic(backend, "other-schemas", 1).await;
    assert!(backend.topic_schemas(&other).await.unwrap().is_empty());
    assert!(
        backend
            .topic_schemas(&unique("never-created"))
            .await
            .is_err()
    );
}

/// Creating a topic twice is harmless; asking for another partition count is an error.
pub async fn create_topic_is_idempotent(backend: &impl Backend) {
    let name = topic(backend, "idempotent", 3).await;
    let again = backend
        .create_topic(&TopicSpec::new(&name, 3))
        .await
        .unwrap();
    assert_eq!(again, TopicCreation::AlreadyExists);
    let info = backend
        .topic(&name)
        .await
        .unwrap()
        .expect("the topic exists");
    assert_eq!(info.partitions, 3);
    match backend.create_topic(&TopicSpec::new(&name, 5)).await {
        Err(Error::PartitionCountMismatch {
            requested: 5,
            existing: 3,
            ..
        }) => {}
        other => panic!("expected a partition count mismatch, got {other:?}"),
    }
    assert!(
        backend
            .topic(&unique("never-created"))
            .await
            .unwrap()
            .is_none()
    );
}

/// Receipts carry consecutive offsets from 0, and the end offset follows.
pub async fn appends_get_consecutive_offsets(backend: &impl Backend) {
    let name = topic(backend, "offsets", 2).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut offsets = Vec::new();
    for i in 0..5 {
        let receipt = producer
            .send(&name, 1, Record::new(format!("r{i}")))
            .await
            .unwrap();
        offsets.push(receipt.await.unwrap());
    }
    assert_eq!(offsets, [0, 1, 2, 3, 4]);
    let ends = backend.offsets(&name).await.unwrap();
    assert_eq!(
        ends,
        [
            PartitionOffsets { start: 0, end: 0 },
            PartitionOffsets { start: 0, end: 5 }
        ]
    );
}

/// Key, value, headers (repeated names included) and timestamp come back as they were sent.
pub async fn records_round_trip(backend: &impl Backend) {
    let name = topic(backend, "round-trip", 1).await;
    let sent = [
        Record::new("v1")
            .with_key("k1")
            .with_timestamp(1_700_000_000_123)
            .with_header("a", "1"),
        Record::new(vec![0u8, 255, 7])
            .with_timestamp(42)
            .with_header("x", "1")
            .with_header("x", "2"),
        Record::new("").with_key(vec![1u8, 2, 3]).with_timestamp(1),
    ];
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for record in &sent {
        producer
            .send(&name, 0, record.clone())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let consumer = backend
        .consumer(&ConsumerConfig::new(unique("g"), [&name]))
        .await
        .unwrap();
    let received = consume(&*consumer, sent.len()).await;
    for (offset, (got, want)) in received.iter().zip(&sent).enumerate() {
        assert_eq!(got.offset, offset as u64);
        assert_eq!(&*got.topic, name);
        assert_eq!(got.record.key, want.key, "key of record {offset}");
        assert_eq!(got.record.value, want.value, "value of record {offset}");
        assert_eq!(
            got.record.timestamp, want.timestamp,
            "timestamp of record {offset}"
        );
        let headers: Vec<_> = got
            .record
            .headers
            .iter()
            .map(|h| (&h.key, &h.value))
            .collect();
        let expected: Vec<_> = want.headers.iter().map(|h| (&h.key, &h.value)).collect();
        assert_eq!(headers, expected, "headers of record {offset}");
    }
    consumer.close().await.unwrap();
}

/// A null value (a tombstone) comes back null and an empty value comes back empty, with or
/// without a key and headers: a backplane never turns one into the other.
pub async fn null_values_stay_distinct_from_empty(backend: &impl Backend) {
    let name = topic(backend, "null-values", 1).await;
    let sent = [
        Record::null().with_key("deleted").with_timestamp(5),
        Record::new("").with_key("empty").with_timestamp(6),
        Record::null().with_timestamp(7).with_header("h", ""),
        // Kafka clients stamp a timestamp of 0 with the send time, so every case sets one.
        Record::new("").with_timestamp(8),
        Record::new("present").with_timestamp(9),
        Record::null().with_timestamp(10),
    ];
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for record in &sent {
        producer
            .send(&name, 0, record.clone())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let consumer = backend
        .consumer(&ConsumerConfig::new(unique("g"), [&name]))
        .await
        .unwrap();
    let received = consume(&*consumer, sent.len()).await;
    let got: Vec<_> = received
        .iter()
        .map(|r| {
            (
                r.record.key.clone(),
                r.record.value.clone(),
                r.record.timestamp,
            )
        })
        .collect();
    let want: Vec<_> = sent
        .iter()
        .map(|r| (r.key.clone(), r.value.clone(), r.timestamp))
        .collect();
    assert_eq!(got, want, "keys, values and timestamps");
    let nulls: Vec<_> = received.iter().map(|r| r.record.is_null()).collect();
    assert_eq!(nulls, [true, false, true, false, false, true]);
    assert_eq!(
        received[2].record.headers.get("h").map(|v| v.len()),
        Some(0),
        "a null value keeps its headers"
    );
    consumer.close().await.unwrap();
}

/// Records interleaved over partitions come back in send order within each partition.
pub async fn order_is_kept_per_partition(backend: &impl Backend) {
    let name = topic(backend, "order", 3).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut receipts = Vec::new();
    for i in 0..600u32 {
        let record = Record::new(i.to_string());
        receipts.push(producer.send(&name, i % 3, record).await.unwrap());
    }
    for receipt in receipts {
        receipt.await.unwrap();
    }
    let consumer = backend
        .consumer(&ConsumerConfig::new(unique("g"), [&name]))
        .await
        .unwrap();
    let records = consume(&*consumer, 600).await;
    for partition in 0..3 {
        let seen: Vec<u32> = records
            .iter()
            .filter(|r| r.partition == partition)
            .map(|r| {
                String::from_utf8_lossy(r.record.value.as_deref().unwrap_or_default())
                    .parse()
                    .unwrap()
            })
            .collect();
        let expected: Vec<u32> = (0..600).filter(|i| i % 3 == partition).collect();
        assert_eq!(seen, expected, "partition {partition}");
        let offsets: Vec<u64> = records
            .iter()
            .filter(|r| r.partition == partition)
            .map(|r| r.offset)
            .collect();
        assert_eq!(
            offsets,
            (0..200).collect::<Vec<u64>>(),
            "offsets of partition {partition}"
        );
    }
    consumer.close().await.unwrap();
}

/// A new member of a group starts where the group committed.
pub async fn committed_offsets_resume_a_group(backend: &impl Backend) {
    let name = topic(backend, "resume", 1).await;
    produce(backend, &name, 0, &["a", "b", "c", "d", "e"]).await;
    let group = unique("g");
    let first = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    let records = consume(&*first, 3).await;
    assert_eq!(values(&records), ["a", "b", "c"]);
    let commit = CommitOffset {
        topic: name.as_str().into(),
        partition: 0,
        offset: 3,
    };
    first.commit(&[commit]).await.unwrap();
    first.close().await.unwrap();
    drop(first);
    assert_eq!(backend.committed(&group, &name).await.unwrap(), [Some(3)]);

    let second = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    assert_eq!(values(&consume(&*second, 2).await), ["d", "e"]);
    second.close().await.unwrap();
}

/// Seeking positions the next poll of a partition, back or forward, without committing;
/// a partition the member does not own cannot be sought.
pub async fn seek_moves_the_next_poll(backend: &impl Backend) {
    let name = topic(backend, "seek", 2).await;
    produce(backend, &name, 0, &["a", "b", "c", "d", "e"]).await;
    let group = unique("g");
    let consumer = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    assert_eq!(
        values(&consume(&*consumer, 5).await),
        ["a", "b", "c", "d", "e"]
    );
    consumer.seek(&name, 0, 1).await.unwrap();
    assert_eq!(values(&consume(&*consumer, 4).await), ["b", "c", "d", "e"]);
    consumer.seek(&name, 0, 3).await.unwrap();
    let position = |consumer: &dyn Consumer| {
        consumer
            .positions()
            .into_iter()
            .find(|(owned, _)| owned.partition == 0)
            .map(|(_, at)| at)
    };
    assert_eq!(position(&*consumer), Some(3));
    assert_eq!(values(&consume(&*consumer, 2).await), ["d", "e"]);
    assert_eq!(
        backend.committed(&group, &name).await.unwrap(),
        [None, None]
    );
    assert!(matches!(
        consumer.seek(&name, 7, 0).await,
        Err(Error::NotAssigned { partition: 7, .. })
    ));
    consumer.close().await.unwrap();

    // A new member can start from a sought position before its first poll.
    let fresh = backend
        .consumer(&ConsumerConfig::new(unique("g"), [&name]))
        .await
        .unwrap();
    fresh.seek(&name, 0, 4).await.unwrap();
    assert_eq!(values(&consume(&*fresh, 1).await), ["e"]);
    fresh.close().await.unwrap();
}

/// Two groups each read everything, and their commits do not mix.
pub async fn groups_are_independent(backend: &impl Backend) {
    let name = topic(backend, "groups", 1).await;
    produce(backend, &name, 0, &["x", "y"]).await;
    let (one, two) = (unique("one"), unique("two"));
    let first = backend
        .consumer(&ConsumerConfig::new(&one, [&name]))
        .await
        .unwrap();
    consume(&*first, 2).await;
    let commit = CommitOffset {
        topic: name.as_str().into(),
        partition: 0,
        offset: 2,
    };
    first.commit(&[commit]).await.unwrap();
    let second = backend
        .consumer(&ConsumerConfig::new(&two, [&name]))
        .await
        .unwrap();
    assert_eq!(values(&consume(&*second, 2).await), ["x", "y"]);
    assert_eq!(backend.committed(&one, &name).await.unwrap(), [Some(2)]);
    assert_eq!(backend.committed(&two, &name).await.unwrap(), [None]);
    first.close().await.unwrap();
    second.close().await.unwrap();
}

/// A group that starts from the latest offset sees only what is appended after it joined.
pub async fn latest_skips_existing_records(backend: &impl Backend) {
    let name = topic(backend, "latest", 1).await;
    produce(backend, &name, 0, &["old"]).await;
    let config = ConsumerConfig::new(unique("g"), [&name]).start_from(StartFrom::Latest);
    let consumer = backend.consumer(&config).await.unwrap();
    // The member is placed at the end before anything new arrives; wait until it is.
    wait_for_assignment(&*consumer, 1).await;
    produce(backend, &name, 0, &["new"]).await;
    assert_eq!(values(&consume(&*consumer, 1).await), ["new"]);
    consumer.close().await.unwrap();
}

/// A poll on an empty topic waits, and returns once a record arrives.
pub async fn poll_waits_for_new_records(backend: &impl Backend) {
    let name = topic(backend, "wait", 1).await;
    let consumer = backend
        .consumer(&ConsumerConfig::new(unique("g"), [&name]))
        .await
        .unwrap();
    let waiting = async { consume(&*consumer, 1).await };
    let producing = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        produce(backend, &name, 0, &["late"]).await;
    };
    let (records, ()) = tokio::join!(waiting, producing);
    assert_eq!(values(&records), ["late"]);
    consumer.close().await.unwrap();
}

/// Sending to a topic or partition that does not exist fails with an error naming it.
pub async fn unknown_topics_and_partitions_are_errors(backend: &impl Backend) {
    let name = topic(backend, "known", 2).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let missing = unique("missing");
    let sent = match producer.send(&missing, 0, Record::new("x")).await {
        Ok(receipt) => receipt.await.map(|_| ()),
        Err(error) => Err(error),
    };
    match sent {
        Err(Error::TopicNotFound { topic }) => assert_eq!(topic, missing),
        other => panic!("expected topic not found, got {other:?}"),
    }
    let sent = match producer.send(&name, 7, Record::new("x")).await {
        Ok(receipt) => receipt.await.map(|_| ()),
        Err(error) => Err(error),
    };
    match sent {
        Err(Error::PartitionNotFound {
            partition: 7,
            partitions: 2,
            ..
        }) => {}
        other => panic!("expected partition not found, got {other:?}"),
    }
    assert!(matches!(
        backend.offsets(&missing).await,
        Err(Error::TopicNotFound { .. })
    ));
}

/// After `flush`, every record sent before it is acknowledged and counted in the end offset.
pub async fn flush_waits_for_every_receipt(backend: &impl Backend) {
    let name = topic(backend, "flush", 1).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut receipts = Vec::new();
    for i in 0..1000 {
        receipts.push(
            producer
                .send(&name, 0, Record::new(format!("{i}")))
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();
    assert_eq!(backend.offsets(&name).await.unwrap()[0].end, 1000);
    for (i, receipt) in receipts.into_iter().enumerate() {
        assert_eq!(receipt.await.unwrap(), i as u64);
    }
}

/// Records handed over with `try_send` (or with `send` when it gives them back) and with
/// `send`, alternately, are appended in the order of the calls with `send`'s receipts; a
/// partition that does not exist is refused either way.
pub async fn try_send_keeps_the_order_and_outcomes_of_send(backend: &impl Backend) {
    async fn try_then_send(
        producer: &dyn crate::Producer,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> crate::Result<crate::Receipt> {
        match producer.try_send(topic, partition, record) {
            crate::TrySend::Sent(receipt) => receipt,
            crate::TrySend::Wait(record) => producer.send(topic, partition, record).await,
        }
    }
    let name = topic(backend, "try-send", 2).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    // The first send learns the partitions, so the later tries need no waiting.
    let mut receipts = Vec::new();
    for i in 0..1000 {
        let record = Record::new(format!("{i}"));
        let receipt = if i % 2 == 0 {
            producer.send(&name, 1, record).await
        } else {
            try_then_send(producer.as_ref(), &name, 1, record).await
        };
        receipts.push(receipt.unwrap());
    }
    for (i, receipt) in receipts.into_iter().enumerate() {
        assert_eq!(receipt.await.unwrap(), i as u64);
    }
    let reader = backend
        .partition_reader(&ReaderConfig::new(&name, 1, 0))
        .await
        .unwrap();
    let values: Vec<String> = consume_reader(reader.as_ref(), 1000)
        .await
        .iter()
        .map(|r| String::from_utf8(r.record.value.clone().unwrap().to_vec()).unwrap())
        .collect();
    let expected: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    assert_eq!(values, expected);
    let refused = try_then_send(producer.as_ref(), &name, 7, Record::new("x")).await;
    let refused = match refused {
        Ok(receipt) => receipt.await.map(|_| ()),
        Err(error) => Err(error),
    };
    assert!(
        matches!(refused, Err(Error::PartitionNotFound { partition: 7, .. })),
        "expected partition not found, got {refused:?}"
    );
}

async fn wait_for_assignment(consumer: &dyn Consumer, partitions: usize) -> BTreeSet<u32> {
    wait_for_assignment_keeping(consumer, partitions, &mut Vec::new()).await
}

/// As [`wait_for_assignment`], keeping in `polled` the records the polls returned.
async fn wait_for_assignment_keeping(
    consumer: &dyn Consumer,
    partitions: usize,
    polled: &mut Vec<ConsumedRecord>,
) -> BTreeSet<u32> {
    loop {
        let owned: BTreeSet<u32> = consumer
            .positions()
            .iter()
            .map(|(tp, _)| tp.partition)
            .collect();
        if owned.len() == partitions {
            return owned;
        }
        // Kafka assigns partitions during a poll (which may return a record too); other
        // backplanes assign at once.
        if let Ok(records) =
            tokio::time::timeout(Duration::from_millis(100), consumer.poll(1)).await
        {
            polled.extend(records.unwrap());
        }
    }
}

/// Two members of one group split the partitions between them, each partition owned once.
pub async fn members_of_a_group_share_partitions(backend: &impl Backend) {
    let name = topic(backend, "share", 4).await;
    let group = unique("g");
    let first = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    let second = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        wait_for_assignment(&*first, 2),
        wait_for_assignment(&*second, 2)
    );
    assert!(
        a.is_disjoint(&b),
        "both members own a partition: {a:?} and {b:?}"
    );
    assert_eq!(a.union(&b).count(), 4);
    first.close().await.unwrap();
    second.close().await.unwrap();
}

/// A member that a joining one takes partitions from counts a revocation, so what it read
/// ahead of those partitions (and any state it keeps of them) is known to be no longer its.
pub async fn a_rebalance_that_takes_partitions_away_counts_a_revocation(backend: &impl Backend) {
    let name = topic(backend, "revoke", 4).await;
    let group = unique("g");
    let first = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    wait_for_assignment(&*first, 4).await;
    let before = first.revocations();
    let second = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    tokio::join!(
        wait_for_assignment(&*first, 2),
        wait_for_assignment(&*second, 2)
    );
    assert!(
        first.revocations() > before,
        "the first member gave two partitions away without counting a revocation"
    );
    first.close().await.unwrap();
    second.close().await.unwrap();
}

/// When a member leaves, the remaining one takes over every partition and resumes from the
/// committed offsets.
pub async fn closing_a_member_hands_its_partitions_over(backend: &impl Backend) {
    let name = topic(backend, "handover", 2).await;
    produce(backend, &name, 0, &["p0-a", "p0-b"]).await;
    produce(backend, &name, 1, &["p1-a", "p1-b"]).await;
    let group = unique("g");
    let stays = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    let leaves = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    // A poll that completes an assignment may return a record: those are kept.
    let (mut kept, mut left) = (Vec::new(), Vec::new());
    let (_, owned) = tokio::join!(
        wait_for_assignment_keeping(&*stays, 1, &mut kept),
        wait_for_assignment_keeping(&*leaves, 1, &mut left)
    );
    let partition = *owned.iter().next().unwrap();
    // A member may own both partitions for a moment before the other joins (Apache Kafka
    // assigns everything to the first member to join), and read records of both, some again
    // after the rebalance: what counts is the first record of the partition it ends up with.
    left.retain(|record| record.partition == partition);
    let first = match left.into_iter().min_by_key(|record| record.offset) {
        Some(first) => first,
        None => {
            let read = consume(&*leaves, 1).await;
            assert_eq!(read.len(), 1, "one poll of one record");
            read.into_iter().next().unwrap()
        }
    };
    assert_eq!(first.partition, partition);
    assert_eq!(first.offset, 0, "the partition's first record");
    let commit = CommitOffset {
        topic: name.as_str().into(),
        partition,
        offset: 1,
    };
    leaves.commit(&[commit]).await.unwrap();
    leaves.close().await.unwrap();
    drop(leaves);

    // What the member that stays read of the leaving member's partition while it owned
    // both for a moment does not count: after the handover that partition resumes at the
    // committed offset.
    kept.retain(|record| record.partition != partition);
    wait_for_assignment_keeping(&*stays, 2, &mut kept).await;
    // Every record but the committed one, at least once: what the member that stays read
    // before the handover without committing may come again.
    let mut expected: BTreeSet<String> = ["p0-a", "p0-b", "p1-a", "p1-b"].map(String::from).into();
    expected.remove(&format!("p{partition}-a"));
    let mut seen: BTreeSet<String> = values(&kept).into_iter().collect();
    while seen != expected {
        for value in values(&consume(&*stays, 1).await) {
            assert!(
                expected.contains(&value),
                "{value} came after the handover, though committed or never written"
            );
            seen.insert(value);
        }
    }
    stays.close().await.unwrap();
}

/// Everything a fresh read-committed reader of `topic` sees within `settle` after the
/// first `count` records arrived (more would be records it must not see).
async fn read_committed(
    backend: &impl Backend,
    topic: &str,
    count: usize,
    settle: Duration,
) -> Vec<ConsumedRecord> {
    let reader = backend
        .consumer(&ConsumerConfig::new(unique("reader"), [topic]))
        .await
        .unwrap();
    let mut records = consume(&*reader, count).await;
    while let Ok(more) = tokio::time::timeout(settle, reader.poll(100)).await {
        records.extend(more.unwrap());
    }
    reader.close().await.unwrap();
    records
}

/// The group offsets to commit for `topic`'s partition 0.
fn offsets_of(group: &str, topic: &str, offset: u64) -> Vec<GroupOffsets> {
    vec![GroupOffsets {
        group: group.to_owned(),
        offsets: vec![CommitOffset {
            topic: topic.into(),
            partition: 0,
            offset,
        }],
    }]
}

/// A committed transaction's records become visible to read-committed readers, in order
/// per partition, together with the consumer offsets it committed.
pub async fn committed_transactions_are_read_with_their_offsets(backend: &impl Backend) {
    let input = topic(backend, "tx-in", 1).await;
    let output = topic(backend, "tx-out", 2).await;
    produce(backend, &input, 0, &["a", "b", "c"]).await;
    let producer = backend
        .transactional_producer(&TransactionConfig::new(unique("copy")))
        .await
        .unwrap();
    let group = unique("copy.in");
    let consumer = producer
        .consumer(&ConsumerConfig::new(&group, [&input]))
        .await
        .unwrap();
    let inputs = consume(&*consumer, 3).await;
    let mut receipts = Vec::new();
    for (i, record) in inputs.iter().enumerate() {
        let copied = Record::from_value(record.record.value.clone());
        receipts.push(producer.send(&output, i as u32 % 2, copied).await.unwrap());
    }
    assert_eq!(backend.committed(&group, &input).await.unwrap(), [None]);
    producer
        .commit(&offsets_of(&group, &input, 3))
        .await
        .unwrap();
    for receipt in receipts {
        receipt.await.unwrap();
    }
    assert_eq!(backend.committed(&group, &input).await.unwrap(), [Some(3)]);
    let mut read = read_committed(backend, &output, 3, Duration::from_millis(300)).await;
    read.sort_by_key(|record| (record.partition, record.offset));
    assert_eq!(values(&read), ["a", "c", "b"]);
    consumer.close().await.unwrap();
}

/// An aborted transaction's records and offsets are never seen; the next transaction of
/// the same producer commits normally.
pub async fn aborted_transactions_are_never_read_committed(backend: &impl Backend) {
    let output = topic(backend, "tx-abort", 1).await;
    let producer = backend
        .transactional_producer(&TransactionConfig::new(unique("abort")))
        .await
        .unwrap();
    let group = unique("g");
    drop(
        producer
            .send(&output, 0, Record::new("aborted"))
            .await
            .unwrap(),
    );
    producer.abort().await.unwrap();
    drop(
        producer
            .send(&output, 0, Record::new("kept"))
            .await
            .unwrap(),
    );
    producer
        .commit(&offsets_of(&group, &output, 7))
        .await
        .unwrap();
    let read = read_committed(backend, &output, 1, Duration::from_millis(300)).await;
    assert_eq!(values(&read), ["kept"]);
    assert_eq!(backend.committed(&group, &output).await.unwrap(), [Some(7)]);
}

/// Records of a transaction that is still open are not read committed; once it commits
/// they are, with the plain records around them.
pub async fn open_transactions_are_invisible_to_read_committed_readers(backend: &impl Backend) {
    let output = topic(backend, "tx-open", 1).await;
    produce(backend, &output, 0, &["before"]).await;
    let producer = backend
        .transactional_producer(&TransactionConfig::new(unique("open")))
        .await
        .unwrap();
    drop(
        producer
            .send(&output, 0, Record::new("open"))
            .await
            .unwrap(),
    );
    producer.flush().await.unwrap();
    produce(backend, &output, 0, &["after"]).await;
    let read = read_committed(backend, &output, 1, Duration::from_millis(300)).await;
    assert!(
        !values(&read).contains(&"open".to_owned()),
        "an open transaction's record was read: {:?}",
        values(&read)
    );
    producer.commit(&[]).await.unwrap();
    let mut all = values(&read_committed(backend, &output, 3, Duration::from_millis(300)).await);
    assert_eq!(all[0], "before");
    all.sort();
    assert_eq!(all, ["after", "before", "open"]);
}

/// A second producer with the same transactional id fences the first: the first one's
/// open transaction is aborted and its commit fails with [`Error::Fenced`].
pub async fn a_new_producer_fences_the_old_one_and_aborts_its_transaction(backend: &impl Backend) {
    let output = topic(backend, "tx-fence", 1).await;
    let id = unique("fence");
    let old = backend
        .transactional_producer(&TransactionConfig::new(&id))
        .await
        .unwrap();
    drop(old.send(&output, 0, Record::new("zombie")).await.unwrap());
    let new = backend
        .transactional_producer(&TransactionConfig::new(&id))
        .await
        .unwrap();
    let group = unique("g");
    match old.commit(&offsets_of(&group, &output, 1)).await {
        Err(Error::Fenced { id: fenced }) => assert_eq!(fenced, id),
        other => panic!("expected the old producer to be fenced, got {other:?}"),
    }
    drop(new.send(&output, 0, Record::new("fresh")).await.unwrap());
    new.commit(&[]).await.unwrap();
    let read = read_committed(backend, &output, 1, Duration::from_millis(300)).await;
    assert_eq!(values(&read), ["fresh"]);
    assert_eq!(backend.committed(&group, &output).await.unwrap(), [None]);
}

/// A member whose partition a rebalance moved to a newcomer (a zombie, if it goes on as
/// before) cannot commit a transaction with offsets of that partition: the commit fails,
/// naming it, and the transaction's records are never read committed. Its next transaction,
/// over the partition it kept, commits.
pub async fn a_member_cannot_commit_offsets_of_a_partition_a_rebalance_moved(
    backend: &impl Backend,
) {
    let input = topic(backend, "zombie-in", 2).await;
    let output = topic(backend, "zombie-out", 1).await;
    let group = unique("zombie.in");
    let producer = backend
        .transactional_producer(&TransactionConfig::new(unique("zombie")))
        .await
        .unwrap();
    let member = producer
        .consumer(&ConsumerConfig::new(&group, [&input]))
        .await
        .unwrap();
    wait_for_assignment(&*member, 2).await;
    let newcomer = backend
        .consumer(&ConsumerConfig::new(&group, [&input]))
        .await
        .unwrap();
    let moved = *wait_for_assignment(&*newcomer, 1)
        .await
        .first()
        .expect("one partition");
    let kept = 1 - moved;
    let commit_of = |partition| {
        vec![GroupOffsets {
            group: group.clone(),
            offsets: vec![CommitOffset {
                topic: input.as_str().into(),
                partition,
                offset: 1,
            }],
        }]
    };
    drop(
        producer
            .send(&output, 0, Record::new("zombie"))
            .await
            .unwrap(),
    );
    let error = producer.commit(&commit_of(moved)).await.unwrap_err();
    assert!(
        matches!(&error, Error::Reassigned { partition, .. } if *partition == moved),
        "{error}"
    );
    drop(
        producer
            .send(&output, 0, Record::new("kept"))
            .await
            .unwrap(),
    );
    producer.commit(&commit_of(kept)).await.unwrap();
    let read = read_committed(backend, &output, 1, Duration::from_millis(300)).await;
    assert_eq!(values(&read), ["kept"]);
    let committed = backend.committed(&group, &input).await.unwrap();
    assert_eq!(committed[moved as usize], None);
    assert_eq!(committed[kept as usize], Some(1));
    newcomer.close().await.unwrap();
    member.close().await.unwrap();
}

/// Polls `reader` until every partition's position reaches its end in `ends`, returning
/// what it read; fails if a record at or past an end arrives.
async fn read_to_ends(
    reader: &dyn PartitionReader,
    ends: &[(TopicPartition, u64)],
) -> Vec<ConsumedRecord> {
    let mut records = Vec::new();
    loop {
        let positions = reader.positions();
        let done = ends.iter().all(|(tp, end)| {
            positions
                .iter()
                .any(|(read, position)| read == tp && *position >= *end)
        });
        if done {
            return records;
        }
        for record in reader.poll(100).await.unwrap() {
            let end = ends
                .iter()
                .find(|(tp, _)| *tp.topic == *record.topic && tp.partition == record.partition)
                .map(|(_, end)| *end);
            assert!(
                end.is_some_and(|end| record.offset < end),
                "record {}/{} at offset {} was not asked for",
                record.topic,
                record.partition,
                record.offset
            );
            records.push(record);
        }
    }
}

/// Whether `reader` hands out anything within `wait` (it must not, at its end).
async fn polls_nothing(reader: &dyn PartitionReader, wait: Duration) -> Vec<ConsumedRecord> {
    let mut extra = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    while let Ok(polled) = tokio::time::timeout_at(deadline, reader.poll(100)).await {
        extra.extend(polled.unwrap());
    }
    extra
}

fn partition_of(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// A reader of one partition from an offset returns that partition's records from the
/// offset on, with their offsets, and none of the other partitions; its position is exact
/// before the first poll and follows what it returned.
pub async fn a_partition_reader_starts_at_its_offset_and_reads_only_its_partition(
    backend: &impl Backend,
) {
    let name = topic(backend, "reader-one", 3).await;
    produce(backend, &name, 0, &["p0-a", "p0-b", "p0-c"]).await;
    produce(backend, &name, 1, &["a", "b", "c", "d", "e"]).await;
    produce(backend, &name, 2, &["p2-a", "p2-b", "p2-c"]).await;
    let reader = backend
        .partition_reader(&ReaderConfig::new(&name, 1, 2))
        .await
        .unwrap();
    assert_eq!(reader.positions(), [(partition_of(&name, 1), 2)]);
    let records = read_to_ends(&*reader, &[(partition_of(&name, 1), 5)]).await;
    assert_eq!(values(&records), ["c", "d", "e"]);
    let offsets: Vec<(u32, u64)> = records.iter().map(|r| (r.partition, r.offset)).collect();
    assert_eq!(offsets, [(1, 2), (1, 3), (1, 4)]);
    assert!(records.iter().all(|record| *record.topic == *name));
    assert_eq!(reader.positions(), [(partition_of(&name, 1), 5)]);
    // New records of other partitions never come; those of its own do.
    produce(backend, &name, 0, &["p0-d"]).await;
    produce(backend, &name, 2, &["p2-d"]).await;
    produce(backend, &name, 1, &["f"]).await;
    let more = read_to_ends(&*reader, &[(partition_of(&name, 1), 6)]).await;
    assert_eq!(values(&more), ["f"]);
    assert_eq!(more[0].offset, 5);
}

/// A reader of several partitions, each from its own offset, returns exactly their
/// records from there, in offset order per partition.
pub async fn a_partition_reader_reads_a_set_of_partitions(backend: &impl Backend) {
    let name = topic(backend, "reader-set", 3).await;
    let other = topic(backend, "reader-set-other", 2).await;
    produce(backend, &name, 0, &["p0-a", "p0-b", "p0-c"]).await;
    produce(backend, &name, 1, &["p1-a", "p1-b"]).await;
    produce(backend, &name, 2, &["p2-a", "p2-b", "p2-c", "p2-d"]).await;
    produce(backend, &other, 1, &["o1-a", "o1-b"]).await;
    let config = ReaderConfig::new(&name, 2, 1)
        .partition(&name, 0, 0)
        .partition(&other, 1, 1);
    let reader = backend.partition_reader(&config).await.unwrap();
    let ends = [
        (partition_of(&name, 0), 3),
        (partition_of(&name, 2), 4),
        (partition_of(&other, 1), 2),
    ];
    let records = read_to_ends(&*reader, &ends).await;
    let of = |topic: &str, partition: u32| {
        let chosen: Vec<ConsumedRecord> = records
            .iter()
            .filter(|r| *r.topic == *topic && r.partition == partition)
            .cloned()
            .collect();
        values(&chosen)
    };
    assert_eq!(of(&name, 0), ["p0-a", "p0-b", "p0-c"]);
    assert_eq!(of(&name, 1), Vec::<String>::new());
    assert_eq!(of(&name, 2), ["p2-b", "p2-c", "p2-d"]);
    assert_eq!(of(&other, 1), ["o1-b"]);
    assert_eq!(records.len(), 7);
    let mut positions = reader.positions();
    positions.sort_by(|a, b| (&a.0.topic, a.0.partition).cmp(&(&b.0.topic, b.0.partition)));
    let mut expected = ends.to_vec();
    expected.sort_by(|a, b| (&a.0.topic, a.0.partition).cmp(&(&b.0.topic, b.0.partition)));
    assert_eq!(positions, expected);
}

/// At the end of its partition a reader returns nothing more (its position stays at the
/// end) and waits there: a record appended later comes. A start past the end, or on an
/// empty partition, waits at the end the same way.
pub async fn a_partition_reader_stops_cleanly_at_the_end_and_waits_there(backend: &impl Backend) {
    let name = topic(backend, "reader-end", 2).await;
    produce(backend, &name, 0, &["a", "b", "c"]).await;
    let reader = backend
        .partition_reader(&ReaderConfig::new(&name, 0, 0))
        .await
        .unwrap();
    let records = read_to_ends(&*reader, &[(partition_of(&name, 0), 3)]).await;
    assert_eq!(values(&records), ["a", "b", "c"]);
    let extra = polls_nothing(&*reader, Duration::from_millis(500)).await;
    assert_eq!(values(&extra), Vec::<String>::new(), "records past the end");
    assert_eq!(reader.positions(), [(partition_of(&name, 0), 3)]);

    let past = backend
        .partition_reader(&ReaderConfig::new(&name, 0, 50))
        .await
        .unwrap();
    assert_eq!(past.positions(), [(partition_of(&name, 0), 3)]);
    let empty = backend
        .partition_reader(&ReaderConfig::new(&name, 1, 0))
        .await
        .unwrap();
    assert_eq!(empty.positions(), [(partition_of(&name, 1), 0)]);
    let waiting = async {
        let late = read_to_ends(&*reader, &[(partition_of(&name, 0), 4)]).await;
        let past = read_to_ends(&*past, &[(partition_of(&name, 0), 4)]).await;
        let empty = read_to_ends(&*empty, &[(partition_of(&name, 1), 1)]).await;
        (late, past, empty)
    };
    let producing = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        produce(backend, &name, 0, &["late"]).await;
        produce(backend, &name, 1, &["first"]).await;
    };
    let ((late, past, empty), ()) = tokio::join!(waiting, producing);
    assert_eq!(values(&late), ["late"]);
    assert_eq!(values(&past), ["late"]);
    assert_eq!(values(&empty), ["first"]);
}

/// Readers belong to no group: a group member keeps every partition while readers read
/// them, and reading commits nothing anywhere.
pub async fn a_partition_reader_leaves_groups_alone(backend: &impl Backend) {
    let name = topic(backend, "reader-groups", 2).await;
    produce(backend, &name, 0, &["a", "b"]).await;
    produce(backend, &name, 1, &["c"]).await;
    let group = unique("g");
    let member = backend
        .consumer(&ConsumerConfig::new(&group, [&name]))
        .await
        .unwrap();
    let mut polled = Vec::new();
    wait_for_assignment_keeping(&*member, 2, &mut polled).await;
    for partition in [0, 1] {
        let reader = backend
            .partition_reader(&ReaderConfig::new(&name, partition, 0))
            .await
            .unwrap();
        let end = [2, 1][partition as usize];
        let records = read_to_ends(&*reader, &[(partition_of(&name, partition), end)]).await;
        assert_eq!(records.len(), end as usize);
    }
    // Give a rebalance, if a reader had caused one, time to happen.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let owned: BTreeSet<u32> = member
        .positions()
        .iter()
        .map(|(tp, _)| tp.partition)
        .collect();
    assert_eq!(owned, BTreeSet::from([0, 1]), "the member lost partitions");
    assert_eq!(
        backend.committed(&group, &name).await.unwrap(),
        [None, None]
    );
    polled.extend(consume(&*member, 3 - polled.len()).await);
    let mut seen = values(&polled);
    seen.sort();
    assert_eq!(seen, ["a", "b", "c"], "the member reads every record once");
    member.close().await.unwrap();
}

/// A reader of a topic or partition that does not exist is refused, naming it.
pub async fn partition_readers_of_unknown_partitions_are_errors(backend: &impl Backend) {
    let name = topic(backend, "reader-unknown", 2).await;
    let missing = unique("missing");
    match backend
        .partition_reader(&ReaderConfig::new(&missing, 0, 0))
        .await
    {
        Err(Error::TopicNotFound { topic }) => assert_eq!(topic, missing),
        other => panic!("expected topic not found, got {other:?}"),
    }
    match backend
        .partition_reader(&ReaderConfig::new(&name, 0, 0).partition(&name, 5, 0))
        .await
    {
        Err(Error::PartitionNotFound {
            partition: 5,
            partitions: 2,
            ..
        }) => {}
        other => panic!("expected partition not found, got {other:?}"),
    }
}

/// A read-committed reader never returns records of aborted transactions nor of one still
/// open, and once that one commits it returns them and reaches the end, past markers and
/// aborted records.
pub async fn read_committed_partition_readers_skip_aborted_and_open_transactions(
    backend: &impl Backend,
) {
    let output = topic(backend, "reader-tx", 1).await;
    produce(backend, &output, 0, &["before"]).await;
    let producer = backend
        .transactional_producer(&TransactionConfig::new(unique("reader-tx")))
        .await
        .unwrap();
    drop(
        producer
            .send(&output, 0, Record::new("aborted"))
            .await
            .unwrap(),
    );
    producer.abort().await.unwrap();
    drop(
        producer
            .send(&output, 0, Record::new("open"))
            .await
            .unwrap(),
    );
    producer.flush().await.unwrap();
    produce(backend, &output, 0, &["after"]).await;
    let config = ReaderConfig::new(&output, 0, 0).isolation(Isolation::ReadCommitted);
    let reader = backend.partition_reader(&config).await.unwrap();
    let mut read = consume_reader(&*reader, 1).await;
    read.extend(polls_nothing(&*reader, Duration::from_millis(500)).await);
    let before_commit = values(&read);
    assert_eq!(before_commit[0], "before");
    assert!(
        !before_commit.iter().any(|v| v == "open" || v == "aborted"),
        "read committed, a record of an open or aborted transaction came: {before_commit:?}"
    );
    producer.commit(&[]).await.unwrap();
    let end = backend.offsets(&output).await.unwrap()[0].end;
    read.extend(read_to_ends(&*reader, &[(partition_of(&output, 0), end)]).await);
    let mut all = values(&read);
    all.sort();
    assert_eq!(
        all,
        ["after", "before", "open"],
        "every committed record once"
    );
    assert_eq!(reader.positions(), [(partition_of(&output, 0), end)]);
}

/// Polls a reader until `count` records have arrived.
async fn consume_reader(reader: &dyn PartitionReader, count: usize) -> Vec<ConsumedRecord> {
    let mut records = Vec::new();
    while records.len() < count {
        records.extend(reader.poll(count - records.len()).await.unwrap());
    }
    records
}
