//! The pending buffer of a partition is bounded: senders wait instead of memory growing.

use std::time::Duration;

use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

use crate::support::read_to_end;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_sends_never_buffer_more_than_the_bound() {
    let directory = tempfile::tempdir().unwrap();
    let config = LogConfig::default().with_max_pending_bytes(1024);
    let backend = EmbeddedBackend::open(directory.path(), config).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    // Several producers race; each send waits whenever the 1 KiB buffer is full, because
    // every batch is synced before the writer takes the next.
    let mut tasks = Vec::new();
    for task in 0..4 {
        let producer = producer.clone();
        tasks.push(tokio::spawn(async move {
            let mut receipts = Vec::new();
            for i in 0..1000 {
                let record = Record::new(format!("{task}-{i:04}-{}", "x".repeat(80)));
                receipts.push(producer.send("t", 0, record).await.unwrap());
            }
            let mut offsets = Vec::new();
            for receipt in receipts {
                offsets.push(receipt.await.unwrap());
            }
            offsets
        }));
    }
    let mut offsets = Vec::new();
    for task in tasks {
        let mine = task.await.unwrap();
        assert!(
            mine.windows(2).all(|pair| pair[0] < pair[1]),
            "one producer's records keep their order"
        );
        offsets.extend(mine);
    }
    producer.flush().await.unwrap();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..4000).collect::<Vec<u64>>());

    let status = backend.partition_status("t", 0).unwrap();
    assert_eq!(
        (status.end, status.pending_records, status.pending_bytes),
        (4000, 0, 0)
    );
    assert!(
        status.peak_pending_bytes <= 1024,
        "peak {} bytes",
        status.peak_pending_bytes
    );
    assert!(
        status.peak_pending_bytes >= 100,
        "the buffer was used: {}",
        status.peak_pending_bytes
    );
    // At most 9 records fit in a batch; under `FsyncPolicy::Always` each batch is synced.
    assert!(status.batches_written >= 4000 / 9, "{status:?}");
    assert!(status.syncs >= status.batches_written, "{status:?}");
    assert_eq!(read_to_end(&backend, "g", "t").await.len(), 4000);
}

#[tokio::test]
async fn a_record_over_the_size_limit_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(
        directory.path(),
        LogConfig::default().with_max_record_bytes(1000),
    )
    .unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let error = producer
        .send("t", 0, Record::new(vec![0u8; 1000]))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "record of 1020 bytes for topic 't' partition 0 is larger than the limit of 1000 bytes"
    );
    assert!(matches!(
        error,
        runnel_backend::Error::RecordTooLarge {
            size: 1020,
            limit: Some(1000),
            ..
        }
    ));
    assert_eq!(
        producer
            .send("t", 0, Record::new(vec![0u8; 980]))
            .await
            .unwrap()
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_cancelled_poll_loses_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let consumer = backend
        .consumer(&ConsumerConfig::new("g", ["t"]))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(50), consumer.poll(10))
            .await
            .is_err()
    );
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    producer
        .send("t", 0, Record::new("a"))
        .await
        .unwrap()
        .await
        .unwrap();
    let records = consumer.poll(10).await.unwrap();
    assert_eq!((records.len(), records[0].offset), (1, 0));
}
