//! The per-record shortcuts of the Kafka backplane, on Apache Kafka: consumed records are
//! copied into shared chunks and handed over in batches that a small `poll` splits, and a
//! producer keeps its topics' facts itself. Every record must still arrive whole, once, in
//! order per partition, with positions and receipts that say exactly how far it got.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use runnel_backend::{
    Backend, ConsumedRecord, ConsumerConfig, ProducerConfig, Record, StartFrom, TopicSpec,
};

use crate::support::backend;

const PARTITIONS: u32 = 3;

/// Record `n`: sizes from empty to past the copy buffer's own-allocation threshold (8 KiB),
/// some with headers, some with a null key or value.
fn record(n: usize) -> Record {
    let value: Vec<u8> = (0..(n * 37) % 9_000).map(|i| (n + i) as u8).collect();
    let mut record = if n.is_multiple_of(11) {
        Record::null()
    } else {
        Record::new(value)
    };
    if !n.is_multiple_of(5) {
        record = record.with_key(format!("key-{n}"));
    }
    if n.is_multiple_of(3) {
        record = record
            .with_header("n", n.to_string())
            .with_header("empty", Bytes::new());
    }
    record
}

fn same(read: &ConsumedRecord, sent: &Record) -> bool {
    let headers = |record: &Record| -> Vec<(String, Bytes)> {
        record
            .headers
            .iter()
            .map(|header| (header.key.clone(), header.value.clone()))
            .collect()
    };
    read.record.key == sent.key
        && read.record.value == sent.value
        && headers(&read.record) == headers(sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_arrive_whole_once_and_in_order_when_batches_are_split() {
    let backend = backend().await;
    let topic = runnel_backend::conformance::unique("copied");
    backend
        .create_topic(&TopicSpec::new(&topic, PARTITIONS))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let count = 3_000;
    // What each partition was sent, in order, with the offset its receipt reported.
    let mut sent: BTreeMap<u32, Vec<(u64, Record)>> = BTreeMap::new();
    let mut receipts = Vec::new();
    for n in 0..count {
        let partition = (n % PARTITIONS as usize) as u32;
        let record = record(n);
        let receipt = producer
            .send(&topic, partition, record.clone())
            .await
            .unwrap();
        receipts.push((partition, record, receipt));
    }
    for (partition, record, receipt) in receipts {
        let offset = receipt.await.unwrap();
        sent.entry(partition).or_default().push((offset, record));
    }
    for (partition, records) in &sent {
        let offsets: Vec<u64> = records.iter().map(|(offset, _)| *offset).collect();
        let expected: Vec<u64> = (0..records.len() as u64).collect();
        assert_eq!(
            offsets, expected,
            "receipts of partition {partition}, in send order"
        );
    }
    // The ends this process saw acknowledged (kept per partition by the producers).
    let ends: Vec<u64> = backend
        .offsets(&topic)
        .await
        .unwrap()
        .iter()
        .map(|offsets| offsets.end)
        .collect();
    assert_eq!(ends, [1_000, 1_000, 1_000]);

    let config = ConsumerConfig::new(format!("{topic}-reader"), [topic.as_str()])
        .start_from(StartFrom::Earliest);
    let consumer = backend.consumer(&config).await.unwrap();
    let mut read: BTreeMap<u32, Vec<ConsumedRecord>> = BTreeMap::new();
    let mut total = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while total < count {
        assert!(Instant::now() < deadline, "read only {total} of {count}");
        // Fewer than a handed-over batch holds: batches are split and their rest buffered.
        let polled = tokio::time::timeout(Duration::from_secs(1), consumer.poll(7)).await;
        let Ok(polled) = polled else { continue };
        let polled = polled.unwrap();
        assert!(polled.len() <= 7, "at most what was asked for");
        total += polled.len();
        for record in polled {
            read.entry(record.partition).or_default().push(record);
        }
    }
    assert_eq!(total, count, "nothing more than was sent");
    for (partition, records) in &read {
        let sent = &sent[partition];
        assert_eq!(records.len(), sent.len(), "partition {partition}");
        for (record, (offset, original)) in records.iter().zip(sent) {
            assert_eq!(record.offset, *offset, "partition {partition} in order");
            assert!(
                same(record, original),
                "partition {partition} offset {offset}: read {:?}, sent {:?}",
                record.record,
                original
            );
        }
    }
    let positions: BTreeMap<u32, u64> = consumer
        .positions()
        .into_iter()
        .map(|(tp, position)| (tp.partition, position))
        .collect();
    assert_eq!(
        positions,
        BTreeMap::from([(0, 1_000), (1, 1_000), (2, 1_000)]),
        "positions are past exactly what was handed over"
    );
    consumer.close().await.unwrap();
}
