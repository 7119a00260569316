//! Batch format versions: segments written in format version 1 (`RNB1`, before null values)
//! still read, and a log holding them takes new batches in version 2 (`RNB2`) after them.
//!
//! `tests/fixtures/format-v1` was written by the embedded log at the commit before format
//! version 2 (eb0f542), through its public API: topic `v1` with one partition and four
//! records sent one at a time, so each is its own `RNB1` batch.

use std::path::Path;

use bytes::Bytes;
use runnel_backend::{Backend, ConsumedRecord, ConsumerConfig, ProducerConfig, Record};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

use crate::support::segment_files;

/// The records in the fixture, as they were sent.
fn fixture_records() -> Vec<Record> {
    vec![
        Record::new("first")
            .with_key("k1")
            .with_timestamp(1_700_000_000_000),
        Record::new("")
            .with_key("empty")
            .with_timestamp(1_700_000_000_001),
        Record::new(vec![0u8, 255, 7])
            .with_timestamp(-3)
            .with_header("h", "1")
            .with_header("h", "2"),
        Record::new(""),
    ]
}

/// Copies the fixture log into a fresh directory, so the test may append to it.
fn copy_fixture(to: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1");
    let partition = to.join("topics/v1/0");
    std::fs::create_dir_all(&partition).unwrap();
    std::fs::copy(
        fixture.join("topics/v1/topic.properties"),
        to.join("topics/v1/topic.properties"),
    )
    .unwrap();
    for entry in std::fs::read_dir(fixture.join("topics/v1/0")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), partition.join(entry.file_name())).unwrap();
    }
}

async fn read_all(backend: &EmbeddedBackend, group: &str, count: usize) -> Vec<ConsumedRecord> {
    let consumer = backend
        .consumer(&ConsumerConfig::new(group, ["v1"]))
        .await
        .unwrap();
    let mut records = Vec::new();
    while records.len() < count {
        let polled = tokio::time::timeout(std::time::Duration::from_secs(10), consumer.poll(100))
            .await
            .expect("the records arrive");
        records.extend(polled.unwrap());
    }
    consumer.close().await.unwrap();
    records
}

fn records_of(consumed: &[ConsumedRecord]) -> Vec<Record> {
    consumed.iter().map(|r| r.record.clone()).collect()
}

#[tokio::test]
async fn a_segment_in_format_version_1_still_reads() {
    let directory = tempfile::tempdir().unwrap();
    copy_fixture(directory.path());
    let segment = &segment_files(directory.path(), "v1", 0)[0];
    assert_eq!(&std::fs::read(segment).unwrap()[..4], b"RNB1");

    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let consumed = read_all(&backend, "g", 4).await;
    assert_eq!(records_of(&consumed), fixture_records());
    let offsets: Vec<u64> = consumed.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3]);
    assert!(
        consumed.iter().all(|r| !r.record.is_null()),
        "format version 1 has no null values: an empty value stays empty"
    );
}

#[tokio::test]
async fn new_batches_in_version_2_follow_old_ones_in_the_same_segment() {
    let directory = tempfile::tempdir().unwrap();
    copy_fixture(directory.path());
    let old_length = std::fs::metadata(&segment_files(directory.path(), "v1", 0)[0])
        .unwrap()
        .len() as usize;
    {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        for record in [Record::null().with_key("gone"), Record::new("")] {
            producer.send("v1", 0, record).await.unwrap().await.unwrap();
        }
    }
    let segments = segment_files(directory.path(), "v1", 0);
    assert_eq!(segments.len(), 1, "appends continue the old segment");
    let bytes = std::fs::read(&segments[0]).unwrap();
    assert_eq!(&bytes[old_length..old_length + 4], b"RNB2");

    // Reopened, the mixed segment reads whole: old records as they were, the null new one
    // null and the empty new one empty.
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let consumed = read_all(&backend, "g", 6).await;
    let mut want = fixture_records();
    want.push(Record::null().with_key("gone"));
    want.push(Record::new(""));
    assert_eq!(records_of(&consumed), want);
    assert_eq!(consumed[4].record.value, None);
    assert_eq!(consumed[5].record.value, Some(Bytes::new()));
}
