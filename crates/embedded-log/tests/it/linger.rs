//! The writer lingers over small batches to make fewer, larger writes, but never over a
//! batch that is already large.

use std::time::{Duration, Instant};

use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

async fn open(linger: Duration) -> (tempfile::TempDir, EmbeddedBackend) {
    let directory = tempfile::tempdir().unwrap();
    let config = LogConfig::default().with_linger(linger);
    let backend = EmbeddedBackend::open(directory.path(), config).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    (directory, backend)
}

#[tokio::test]
async fn small_records_arriving_within_the_linger_share_a_batch() {
    let (_directory, lingering) = open(Duration::from_secs(2)).await;
    let producer = lingering
        .producer(&ProducerConfig::default())
        .await
        .unwrap();
    let first = producer.send("t", 0, Record::new("a")).await.unwrap();
    // The writer lingers over the first record instead of writing it at once.
    assert_eq!(
        lingering.partition_status("t", 0).unwrap().batches_written,
        0
    );
    let second = producer.send("t", 0, Record::new("b")).await.unwrap();
    first.await.unwrap();
    second.await.unwrap();
    assert_eq!(
        lingering.partition_status("t", 0).unwrap().batches_written,
        1
    );

    // Without a linger, a record sent after the first was written is a batch of its own.
    let (_directory, eager) = open(Duration::ZERO).await;
    let producer = eager.producer(&ProducerConfig::default()).await.unwrap();
    producer
        .send("t", 0, Record::new("a"))
        .await
        .unwrap()
        .await
        .unwrap();
    producer
        .send("t", 0, Record::new("b"))
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(eager.partition_status("t", 0).unwrap().batches_written, 2);
}

#[tokio::test]
async fn a_batch_that_grows_past_the_threshold_is_written_without_waiting_for_the_linger() {
    let (_directory, backend) = open(Duration::from_secs(60)).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let started = Instant::now();
    let small = producer.send("t", 0, Record::new("a")).await.unwrap();
    // The writer lingers over the small batch; a large record makes it big.
    assert_eq!(backend.partition_status("t", 0).unwrap().batches_written, 0);
    let large = vec![7u8; LogConfig::LINGER_BYTES];
    let large = producer.send("t", 0, Record::new(large)).await.unwrap();
    small.await.unwrap();
    large.await.unwrap();
    // Far less than the 60 s linger: passing LINGER_BYTES woke the writer.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(backend.partition_status("t", 0).unwrap().batches_written, 1);
}
