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

/// Sends two small records 20 ms apart and waits for both.
async fn two_small_records(backend: &EmbeddedBackend) -> u64 {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let first = producer.send("t", 0, Record::new("a")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = producer.send("t", 0, Record::new("b")).await.unwrap();
    first.await.unwrap();
    second.await.unwrap();
    backend.partition_status("t", 0).unwrap().batches_written
}

#[tokio::test]
async fn small_records_arriving_within_the_linger_share_a_batch() {
    let (_directory, lingering) = open(Duration::from_millis(500)).await;
    assert_eq!(two_small_records(&lingering).await, 1);
    let (_directory, eager) = open(Duration::ZERO).await;
    assert_eq!(two_small_records(&eager).await, 2);
}

#[tokio::test]
async fn a_batch_that_grows_past_the_threshold_is_written_without_waiting_for_the_linger() {
    let (_directory, backend) = open(Duration::from_secs(60)).await;
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let started = Instant::now();
    let small = producer.send("t", 0, Record::new("a")).await.unwrap();
    // The writer is lingering over the small batch now; a large record makes it big.
    tokio::time::sleep(Duration::from_millis(100)).await;
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
