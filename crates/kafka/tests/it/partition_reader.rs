//! Partition readers on Kafka beyond the conformance suite, on Apache Kafka: a read-committed
//! reader's position moves past the marker that ends a committed transaction, so a caller
//! reading up to the partition's end gets there instead of waiting at the marker.

use std::time::Duration;

use runnel_backend::{
    Backend, Isolation, PartitionReader, ReaderConfig, Record, TopicPartition, TopicSpec,
    TransactionConfig,
};

use crate::support::backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_reaches_the_end_past_a_final_transaction_marker() {
    let backend = backend().await;
    let topic = runnel_backend::conformance::unique("reader-marker");
    backend
        .create_topic(&TopicSpec::new(&topic, 1))
        .await
        .unwrap();
    let producer = backend
        .transactional_producer(&TransactionConfig::new(
            runnel_backend::conformance::unique("reader-marker"),
        ))
        .await
        .unwrap();
    for value in ["a", "b"] {
        drop(producer.send(&topic, 0, Record::new(value)).await.unwrap());
    }
    producer.commit(&[]).await.unwrap();
    // Apache Kafka's transaction coordinator writes the commit marker after the commit has
    // returned (tansu before), so the end reaches it a moment later.
    let end = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let end = backend.offsets(&topic).await.unwrap()[0].end;
            if end == 3 {
                return end;
            }
            assert_eq!(end, 2, "two records, then the commit marker");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the commit marker is written within 20 s");
    let reader = backend
        .partition_reader(&ReaderConfig::new(&topic, 0, 0).isolation(Isolation::ReadCommitted))
        .await
        .unwrap();
    let mut values = Vec::new();
    let reached = tokio::time::timeout(Duration::from_secs(20), async {
        while position(&*reader) < end {
            for record in reader.poll(10).await.unwrap() {
                values.push(String::from_utf8(record.record.value.unwrap().to_vec()).unwrap());
            }
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "the position stayed at {} before the marker",
        position(&*reader)
    );
    assert_eq!(values, ["a", "b"]);
    assert_eq!(
        reader.positions(),
        [(TopicPartition::new(topic.as_str(), 0), end)]
    );
}

fn position(reader: &dyn PartitionReader) -> u64 {
    reader.positions()[0].1
}
