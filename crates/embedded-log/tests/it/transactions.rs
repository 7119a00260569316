//! Transactions on the embedded log beyond the conformance suite: zombies, the last stable
//! offset, read-uncommitted readers, reopening, a log written before transactions, and a
//! process killed in the middle of transactions.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use runnel_backend::{
    Backend, CommitOffset, ConsumerConfig, Error, GroupOffsets, Isolation, ProducerConfig, Record,
    TopicSpec, TransactionConfig,
};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

use crate::support::{read_to_end, segment_files};

/// Every value a fresh reader with `isolation` reads from `topic` until nothing more comes
/// for a while, as `(partition, offset, value)`.
async fn read_all(
    backend: &EmbeddedBackend,
    topic: &str,
    isolation: Isolation,
) -> Vec<(u32, u64, String)> {
    let group = format!("reader-{:?}-{}", isolation, rand_suffix());
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, [topic]).isolation(isolation))
        .await
        .unwrap();
    let mut records = Vec::new();
    while let Ok(polled) =
        tokio::time::timeout(Duration::from_millis(300), consumer.poll(1000)).await
    {
        for consumed in polled.unwrap() {
            let value = String::from_utf8(
                consumed
                    .record
                    .value
                    .as_deref()
                    .unwrap_or_default()
                    .to_vec(),
            )
            .unwrap();
            records.push((consumed.partition, consumed.offset, value));
        }
    }
    consumer.close().await.unwrap();
    records.sort();
    records
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn values_of(records: &[(u32, u64, String)]) -> Vec<&str> {
    records.iter().map(|(_, _, value)| value.as_str()).collect()
}

async fn send_plain(backend: &EmbeddedBackend, topic: &str, value: &str) -> u64 {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    producer
        .send(topic, 0, Record::new(value.to_owned()))
        .await
        .unwrap()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_stops_at_the_open_transaction_and_read_uncommitted_sees_everything() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    send_plain(&backend, "t", "before").await;
    let producer = backend
        .transactional_producer(&TransactionConfig::new("p"))
        .await
        .unwrap();
    let receipt = producer.send("t", 0, Record::new("open")).await.unwrap();
    assert_eq!(receipt.await.unwrap(), 1, "durable before it commits");
    assert_eq!(send_plain(&backend, "t", "after").await, 2);

    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(
        committed,
        [(0, 0, "before".to_owned())],
        "stops at offset 1"
    );
    let uncommitted = read_all(&backend, "t", Isolation::ReadUncommitted).await;
    assert_eq!(values_of(&uncommitted), ["before", "open", "after"]);

    producer.abort().await.unwrap();
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(values_of(&committed), ["before", "after"]);
    let uncommitted = read_all(&backend, "t", Isolation::ReadUncommitted).await;
    assert_eq!(
        values_of(&uncommitted),
        ["before", "open", "after"],
        "markers are never returned"
    );
    assert_eq!(
        backend.offsets("t").await.unwrap()[0].end,
        4,
        "the marker takes offset 3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_can_neither_send_nor_commit_once_a_new_producer_began() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 2)).await.unwrap();
    let zombie = backend
        .transactional_producer(&TransactionConfig::new("copy.0"))
        .await
        .unwrap();
    drop(zombie.send("t", 0, Record::new("zombie-1")).await.unwrap());
    let successor = backend
        .transactional_producer(&TransactionConfig::new("copy.0"))
        .await
        .unwrap();

    for partition in [0, 1] {
        match zombie.send("t", partition, Record::new("zombie-2")).await {
            Err(Error::Fenced { id }) => assert_eq!(id, "copy.0"),
            other => panic!("a zombie's send to partition {partition} went through: {other:?}"),
        }
    }
    let offsets = [GroupOffsets {
        group: "copy.in".into(),
        offsets: vec![CommitOffset {
            topic: "t".into(),
            partition: 0,
            offset: 5,
        }],
    }];
    let error = zombie.commit(&offsets).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "transactional producer 'copy.0' was fenced by a newer instance with the same id"
    );
    assert!(matches!(zombie.abort().await, Err(Error::Fenced { .. })));

    drop(
        successor
            .send("t", 1, Record::new("successor"))
            .await
            .unwrap(),
    );
    successor.commit(&[]).await.unwrap();
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(values_of(&committed), ["successor"]);
    assert_eq!(
        backend.committed("copy.in", "t").await.unwrap(),
        [None, None]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_and_committed_transactions_keep_their_outcome_after_reopening() {
    let directory = tempfile::tempdir().unwrap();
    {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
        let producer = backend
            .transactional_producer(&TransactionConfig::new("p"))
            .await
            .unwrap();
        drop(producer.send("t", 0, Record::new("aborted")).await.unwrap());
        producer.abort().await.unwrap();
        drop(
            producer
                .send("t", 0, Record::new("committed"))
                .await
                .unwrap(),
        );
        producer.commit(&[]).await.unwrap();
    }
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(values_of(&committed), ["committed"]);
    let everything = read_all(&backend, "t", Isolation::ReadUncommitted).await;
    assert_eq!(values_of(&everything), ["aborted", "committed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_before_transactions_reads_the_same_and_takes_transactions() {
    let directory = tempfile::tempdir().unwrap();
    {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
        send_plain(&backend, "t", "old-1").await;
        send_plain(&backend, "t", "old-2").await;
    }
    // Plain batches keep the plain format, and a log that never saw a transaction has no
    // coordinator state.
    let segment = std::fs::read(&segment_files(directory.path(), "t", 0)[0]).unwrap();
    assert_eq!(&segment[0..4], b"RNB2");
    assert!(!directory.path().join("transactions.state").exists());

    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new("p"))
        .await
        .unwrap();
    drop(producer.send("t", 0, Record::new("new")).await.unwrap());
    producer.commit(&[]).await.unwrap();
    let stored = read_to_end(&backend, "check", "t").await;
    let values: Vec<&str> = stored.iter().map(|(_, _, value)| value.as_str()).collect();
    assert_eq!(values, ["old-1", "old-2", "new"]);
}

/// The environment variable that turns [`transaction_crash_child`] into a writer.
const CRASH_DIRECTORY: &str = "RUNNEL_EMBEDDED_LOG_TRANSACTION_CRASH_DIRECTORY";
/// Records per transaction in the crash test.
const PER_TRANSACTION: usize = 10;

/// Run by [`a_killed_process_leaves_whole_transactions_or_none`] in a child process: runs
/// transactions forever, each sending [`PER_TRANSACTION`] records over two partitions and
/// committing offset `t + 1` of group `progress`, and prints `committed t` once commit `t`
/// returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of a_killed_process_leaves_whole_transactions_or_none"]
async fn transaction_crash_child() {
    let directory = std::env::var(CRASH_DIRECTORY)
        .expect("run by a_killed_process_leaves_whole_transactions_or_none");
    let backend = EmbeddedBackend::open(&directory, LogConfig::default()).unwrap();
    backend
        .create_topic(&TopicSpec::new("out", 2))
        .await
        .unwrap();
    backend
        .create_topic(&TopicSpec::new("progress", 1))
        .await
        .unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new("crash"))
        .await
        .unwrap();
    for transaction in 0u64.. {
        for i in 0..PER_TRANSACTION {
            let record = Record::new(format!("{transaction}-{i}"));
            drop(producer.send("out", i as u32 % 2, record).await.unwrap());
        }
        let offsets = [GroupOffsets {
            group: "progress".into(),
            offsets: vec![CommitOffset {
                topic: "progress".into(),
                partition: 0,
                offset: transaction + 1,
            }],
        }];
        producer.commit(&offsets).await.unwrap();
        let mut out = std::io::stdout().lock();
        writeln!(out, "committed {transaction}").unwrap();
        out.flush().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_leaves_whole_transactions_or_none() {
    let directory = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "transactions::transaction_crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIRECTORY, directory.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut last_committed = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(transaction) = line.strip_prefix("committed ") {
            let transaction: u64 = transaction.parse().unwrap();
            last_committed = Some(transaction);
            if transaction == 40 {
                child.kill().unwrap(); // SIGKILL, most likely in the middle of transaction 41
                break;
            }
        }
    }
    child.wait().unwrap();
    let last_committed = last_committed.expect("the child committed transactions");

    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())
        .expect("recovery finishes the open transaction");
    let committed = read_all(&backend, "out", Isolation::ReadCommitted).await;
    let mut per_transaction = std::collections::BTreeMap::<u64, Vec<usize>>::new();
    for (_, _, value) in &committed {
        let (transaction, i) = value.split_once('-').unwrap();
        per_transaction
            .entry(transaction.parse().unwrap())
            .or_default()
            .push(i.parse().unwrap());
    }
    let visible = per_transaction.len() as u64;
    // The child may have committed more before the kill landed, never fewer.
    assert!(
        visible > last_committed,
        "{visible} transactions visible, {} committed before the kill",
        last_committed + 1
    );
    for (transaction, records) in &per_transaction {
        assert!(
            *transaction < visible,
            "transactions become visible in order"
        );
        let mut records = records.clone();
        records.sort_unstable();
        assert_eq!(
            records,
            (0..PER_TRANSACTION).collect::<Vec<_>>(),
            "transaction {transaction} is whole, with no duplicates"
        );
    }
    assert_eq!(
        backend.committed("progress", "progress").await.unwrap(),
        [Some(visible)],
        "the offsets committed with the visible transactions, no more, no fewer"
    );
    // The transaction that was open when the process died is aborted, not left open: a new
    // producer with the id commits at once.
    let producer = backend
        .transactional_producer(&TransactionConfig::new("crash"))
        .await
        .unwrap();
    drop(producer.send("out", 0, Record::new("after")).await.unwrap());
    producer.commit(&[]).await.unwrap();
    let after = read_all(&backend, "out", Isolation::ReadCommitted).await;
    assert_eq!(after.len(), committed.len() + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_only_moves_past_a_marker_returns_so_the_reader_sees_the_end() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new("p"))
        .await
        .unwrap();
    for value in ["a", "b", "c"] {
        drop(producer.send("t", 0, Record::new(value)).await.unwrap());
    }
    producer.commit(&[]).await.unwrap();
    let end = backend.offsets("t").await.unwrap()[0].end;
    assert_eq!(end, 4, "three records and the commit marker");

    let consumer = backend
        .consumer(&ConsumerConfig::new("g", ["t"]))
        .await
        .unwrap();
    assert_eq!(consumer.poll(3).await.unwrap().len(), 3);
    assert_eq!(consumer.positions()[0].1, 3, "the marker is not read yet");
    let polled = tokio::time::timeout(Duration::from_secs(5), consumer.poll(3))
        .await
        .expect("a poll that moves past the marker returns");
    assert!(polled.unwrap().is_empty());
    assert_eq!(consumer.positions()[0].1, end);
}

/// Records sent while transactions abort, in the test below.
const SENT: u32 = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_sent_while_a_transaction_ends_belong_to_one_transaction_or_the_next() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 2)).await.unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new("p"))
        .await
        .unwrap();
    let sender = {
        let producer = producer.clone();
        tokio::spawn(async move {
            for i in 0..SENT {
                drop(
                    producer
                        .send("t", i % 2, Record::new(format!("{i}")))
                        .await
                        .unwrap(),
                );
                if i % 50 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    // Every transaction aborts, so a record that slipped out of them would be read.
    while !sender.is_finished() {
        producer.abort().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    sender.await.unwrap();
    producer.abort().await.unwrap();
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert!(
        committed.is_empty(),
        "{} records of aborted transactions were read committed",
        committed.len()
    );
    assert_eq!(
        read_all(&backend, "t", Isolation::ReadUncommitted)
            .await
            .len(),
        SENT as usize
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_past_its_timeout_is_aborted_and_its_stalled_producer_fenced() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 2)).await.unwrap();
    let mut config = TransactionConfig::new("stalled");
    config
        .producer
        .settings
        .insert("transaction.timeout.ms".into(), "300".into());
    let stalled = backend.transactional_producer(&config).await.unwrap();
    drop(stalled.send("t", 0, Record::new("stalled")).await.unwrap());
    send_plain(&backend, "t", "plain").await;
    assert_eq!(
        read_all(&backend, "t", Isolation::ReadCommitted).await,
        [],
        "held at the open transaction"
    );

    // The log's timeout thread aborts it soon after 300 ms; wait for that, not a fixed time.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
        if values_of(&committed) == ["plain"] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the timed-out transaction was never aborted: {committed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(matches!(
        stalled.send("t", 0, Record::new("late")).await,
        Err(Error::Fenced { .. })
    ));
    assert!(matches!(
        stalled.send("t", 1, Record::new("late")).await,
        Err(Error::Fenced { .. })
    ));
    assert!(matches!(
        stalled.commit(&[]).await,
        Err(Error::Fenced { .. })
    ));

    // A producer that commits each transaction in time is left alone, however long it lives
    // (its transactions together outlast the timeout; a roomy timeout keeps a loaded machine
    // from making one of them late).
    let mut prompt_config = TransactionConfig::new("prompt");
    prompt_config
        .producer
        .settings
        .insert("transaction.timeout.ms".into(), "1000".into());
    let prompt = backend
        .transactional_producer(&prompt_config)
        .await
        .unwrap();
    for _ in 0..4 {
        drop(prompt.send("t", 1, Record::new("prompt")).await.unwrap());
        tokio::time::sleep(Duration::from_millis(400)).await;
        prompt.commit(&[]).await.unwrap();
    }
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(values_of(&committed).len(), 5);
}

#[tokio::test]
async fn a_transaction_timeout_that_is_not_a_duration_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let mut config = TransactionConfig::new("p");
    config
        .producer
        .settings
        .insert("transaction.timeout.ms".into(), "soon".into());
    let error = backend.transactional_producer(&config).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "setting 'transaction.timeout.ms' is 'soon', expected a positive number of milliseconds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_shows_what_read_committed_readers_see() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new("p"))
        .await
        .unwrap();
    let send = |value: &'static str| {
        let producer = producer.clone();
        async move { drop(producer.send("t", 0, Record::new(value)).await.unwrap()) }
    };
    send("aborted").await;
    send_plain(&backend, "t", "plain-1").await;
    producer.abort().await.unwrap();
    send("committed-1").await;
    send_plain(&backend, "t", "plain-2").await;
    send("committed-2").await;
    producer.commit(&[]).await.unwrap();
    send("open").await;
    send_plain(&backend, "t", "after-open").await;

    let inspector = runnel_embedded_log::LogInspector::new(directory.path()).unwrap();
    let values = |from: u64, max: usize| -> Vec<String> {
        inspector
            .read("t", 0, from, max)
            .unwrap()
            .iter()
            .map(|consumed| {
                String::from_utf8(consumed.record.value.as_deref().unwrap().to_vec()).unwrap()
            })
            .collect()
    };
    let committed = read_all(&backend, "t", Isolation::ReadCommitted).await;
    assert_eq!(
        values_of(&committed),
        ["plain-1", "committed-1", "plain-2", "committed-2"]
    );
    // The same as a read-committed reader: no aborted record, committed ones in offset
    // order, nothing from the open transaction on.
    assert_eq!(values(0, 100), values_of(&committed));
    assert_eq!(values(0, 2), ["plain-1", "committed-1"]);
    let offsets: Vec<u64> = committed.iter().map(|(_, offset, _)| *offset).collect();
    assert_eq!(values(offsets[2], 100), ["plain-2", "committed-2"]);
}

/// A commit dropped part way (its task aborted, as when a process's runtime shuts down
/// around it, and the producer dropped with it) must leave the transaction for the next
/// producer with the id to finish as decided: never held open behind readers, and never
/// committed in one partition and aborted in another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_dropped_part_way_is_finished_whole_and_never_holds_readers_back() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    for topic in ["t", "u"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    for attempt in 0..60u64 {
        let producer = backend
            .transactional_producer(&TransactionConfig::new("p"))
            .await
            .unwrap();
        let value = format!("record-{attempt}");
        for topic in ["t", "u"] {
            drop(
                producer
                    .send(topic, 0, Record::new(value.clone()))
                    .await
                    .unwrap(),
            );
        }
        // The task owns the producer: dropping the task drops it (which aborts an open
        // transaction in the background).
        let committing = tokio::spawn(async move { producer.commit(&[]).await });
        // Drop the commit at a different moment each time, from before it starts to after
        // it ends.
        tokio::time::sleep(Duration::from_micros(100 * attempt)).await;
        committing.abort();
        let _ = committing.await;
        // The next producer finishes what the dropped commit left: committed if it had
        // decided to commit, aborted otherwise; either way nothing stays open.
        let successor = backend
            .transactional_producer(&TransactionConfig::new("p"))
            .await
            .unwrap();
        reaches_the_end(&backend, "t", attempt, Duration::from_secs(5)).await;
        drop(successor);
    }
    let (t, u) = (
        read_all(&backend, "t", Isolation::ReadCommitted).await,
        read_all(&backend, "u", Isolation::ReadCommitted).await,
    );
    assert_eq!(
        values_of(&t),
        values_of(&u),
        "each transaction is committed in both topics or in neither"
    );
}

/// A commit that a killed process left part way (its runtime shut down around it, so
/// neither the commit nor a dropped producer's abort finishes) is finished by the log once
/// the transaction timeout passes, as it was decided, so readers are not held at it until
/// a producer with the same id comes back (one never does after a scale-down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_left_part_way_by_a_killed_process_is_finished_after_the_timeout() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    for topic in ["t", "u"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let mut config = TransactionConfig::new("killed");
    config
        .producer
        .settings
        .insert("transaction.timeout.ms".into(), "200".into());
    for attempt in 0..30u64 {
        let process = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (backend_of_process, config) = (backend.clone(), config.clone());
        let committing = process.spawn(async move {
            // Anything may fail as the runtime is torn down around it.
            let producer = backend_of_process.transactional_producer(&config).await?;
            for topic in ["t", "u"] {
                let record = Record::new(format!("record-{attempt}"));
                drop(producer.send(topic, 0, record).await?);
            }
            producer.commit(&[]).await
        });
        // Kill the process at a different moment each time, up to after the commit.
        tokio::time::sleep(Duration::from_micros(150 * attempt)).await;
        tokio::task::spawn_blocking(move || process.shutdown_timeout(Duration::ZERO))
            .await
            .unwrap();
        drop(committing);
        reaches_the_end(&backend, "t", attempt, Duration::from_secs(10)).await;
    }
    let (t, u) = (
        read_all(&backend, "t", Isolation::ReadCommitted).await,
        read_all(&backend, "u", Isolation::ReadCommitted).await,
    );
    assert_eq!(
        values_of(&t),
        values_of(&u),
        "each transaction is committed in both topics or in neither"
    );
}

/// Asserts that a new read-committed reader of partition 0 of `topic` reaches its end
/// within `limit`: no transaction holds it back.
async fn reaches_the_end(backend: &EmbeddedBackend, topic: &str, attempt: u64, limit: Duration) {
    let end = backend.offsets(topic).await.unwrap()[0].end;
    let reader = backend
        .consumer(&ConsumerConfig::new(format!("check-{attempt}"), [topic]))
        .await
        .unwrap();
    let reached = tokio::time::timeout(limit, async {
        while reader
            .positions()
            .first()
            .is_none_or(|(_, position)| *position < end)
        {
            reader.poll(100).await.unwrap();
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "attempt {attempt}: a read-committed reader was held before the end {end} at {:?}",
        reader.positions()
    );
    reader.close().await.unwrap();
}
