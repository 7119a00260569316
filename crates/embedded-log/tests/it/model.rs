//! A model-based test: random appends to several partitions, commits, reads, reopens and
//! torn tails, run against the real log and a plain in-memory model that must agree.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use runnel_backend::{Backend, CommitOffset, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, FsyncPolicy, LogConfig};

use crate::support::segment_files;

const PARTITIONS: u32 = 3;

#[derive(Clone, Debug)]
enum Action {
    /// Send records to a partition, all in flight at once, then await the receipts.
    Append {
        partition: u32,
        records: Vec<Record>,
    },
    /// Commit an offset between 0 and the partition's end (a fraction of it).
    Commit { partition: u32, fraction: f64 },
    /// Read every partition from the start with a new group.
    ReadAll,
    /// Close and reopen the log.
    Reopen,
    /// Close the log, append junk to a partition's last segment (a torn write), reopen.
    TearTail { partition: u32, junk: Vec<u8> },
}

fn record() -> impl Strategy<Value = Record> {
    (
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
        proptest::collection::vec(any::<u8>(), 0..64),
        any::<i64>(),
        proptest::collection::vec(
            ("[a-c]{1,2}", proptest::collection::vec(any::<u8>(), 0..4)),
            0..3,
        ),
    )
        .prop_map(|(key, value, timestamp, headers)| {
            let mut record = Record::new(value).with_timestamp(timestamp);
            record.key = key.map(Into::into);
            for (name, value) in headers {
                record = record.with_header(name, value);
            }
            record
        })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => (0..PARTITIONS, proptest::collection::vec(record(), 1..30))
            .prop_map(|(partition, records)| Action::Append { partition, records }),
        2 => (0..PARTITIONS, 0.0..=1.0f64).prop_map(|(partition, fraction)| Action::Commit { partition, fraction }),
        1 => Just(Action::ReadAll),
        2 => Just(Action::Reopen),
        1 => (0..PARTITIONS, proptest::collection::vec(any::<u8>(), 1..80))
            .prop_map(|(partition, junk)| Action::TearTail { partition, junk }),
    ]
}

fn config() -> impl Strategy<Value = LogConfig> {
    (
        prop_oneof![Just(128u64), Just(700), Just(1 << 20)],
        prop_oneof![
            Just(FsyncPolicy::Always),
            Just(FsyncPolicy::Never),
            Just(FsyncPolicy::Interval(Duration::from_millis(5)))
        ],
        prop_oneof![Just(256usize), Just(1 << 20)],
    )
        .prop_map(|(segment_bytes, fsync, pending)| {
            LogConfig::default()
                .with_segment_bytes(segment_bytes)
                .with_fsync(fsync)
                .with_max_pending_bytes(pending)
        })
}

/// What the log should hold.
#[derive(Debug, Default)]
struct Model {
    partitions: Vec<Vec<Record>>,
    committed: BTreeMap<u32, u64>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_log_agrees_with_a_model(config in config(), actions in proptest::collection::vec(action(), 1..25)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(run(config, actions));
    }
}

async fn run(config: LogConfig, actions: Vec<Action>) {
    let directory = tempfile::tempdir().unwrap();
    let mut backend = EmbeddedBackend::open(directory.path(), config.clone()).unwrap();
    backend
        .create_topic(&TopicSpec::new("t", PARTITIONS))
        .await
        .unwrap();
    let mut model = Model {
        partitions: vec![Vec::new(); PARTITIONS as usize],
        ..Model::default()
    };
    for action in actions {
        match action {
            Action::Append { partition, records } => {
                let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
                let mut receipts = Vec::new();
                for record in &records {
                    receipts.push(producer.send("t", partition, record.clone()).await.unwrap());
                }
                let log = &mut model.partitions[partition as usize];
                let first = log.len() as u64;
                for (at, receipt) in receipts.into_iter().enumerate() {
                    assert_eq!(
                        receipt.await.unwrap(),
                        first + at as u64,
                        "offsets are consecutive"
                    );
                }
                log.extend(records);
            }
            Action::Commit {
                partition,
                fraction,
            } => {
                let end = model.partitions[partition as usize].len() as u64;
                let offset = (end as f64 * fraction) as u64;
                let consumer = backend
                    .consumer(&ConsumerConfig::new("model", ["t"]))
                    .await
                    .unwrap();
                consumer
                    .commit(&[CommitOffset {
                        topic: "t".into(),
                        partition,
                        offset,
                    }])
                    .await
                    .unwrap();
                consumer.close().await.unwrap();
                model.committed.insert(partition, offset);
            }
            Action::ReadAll => check_records(&backend, &model).await,
            Action::Reopen => {
                drop(backend);
                backend = EmbeddedBackend::open(directory.path(), config.clone()).unwrap();
            }
            Action::TearTail { partition, junk } => {
                drop(backend);
                tear_tail(directory.path(), partition, &junk);
                backend = EmbeddedBackend::open(directory.path(), config.clone()).unwrap();
            }
        }
        check_offsets(&backend, &model).await;
    }
    check_records(&backend, &model).await;
}

async fn check_offsets(backend: &EmbeddedBackend, model: &Model) {
    let offsets = backend.offsets("t").await.unwrap();
    let ends: Vec<u64> = offsets.iter().map(|partition| partition.end).collect();
    let expected: Vec<u64> = model
        .partitions
        .iter()
        .map(|records| records.len() as u64)
        .collect();
    assert_eq!(ends, expected);
    assert!(
        offsets.iter().all(|partition| partition.start == 0),
        "nothing was deleted"
    );
    let committed = backend.committed("model", "t").await.unwrap();
    let expected: Vec<Option<u64>> = (0..PARTITIONS)
        .map(|partition| model.committed.get(&partition).copied())
        .collect();
    assert_eq!(committed, expected);
}

async fn check_records(backend: &EmbeddedBackend, model: &Model) {
    let group = format!(
        "reader-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, ["t"]))
        .await
        .unwrap();
    let total: usize = model.partitions.iter().map(Vec::len).sum();
    let mut read: Vec<Vec<Record>> = vec![Vec::new(); PARTITIONS as usize];
    let mut count = 0;
    while count < total {
        let polled = tokio::time::timeout(Duration::from_secs(10), consumer.poll(7))
            .await
            .expect("records arrive")
            .unwrap();
        assert!(polled.len() <= 7);
        for consumed in polled {
            let log = &mut read[consumed.partition as usize];
            assert_eq!(consumed.offset, log.len() as u64, "offsets arrive in order");
            log.push(consumed.record);
            count += 1;
        }
    }
    assert_eq!(read, model.partitions);
    consumer.close().await.unwrap();
}

fn tear_tail(directory: &Path, partition: u32, junk: &[u8]) {
    use std::io::Write;
    let last = segment_files(directory, "t", partition).pop().unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(last).unwrap();
    file.write_all(junk).unwrap();
}
