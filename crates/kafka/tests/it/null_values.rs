//! Null values (tombstones) against a real broker, checked from the other side with plain
//! librdkafka clients: a message without a payload is read as a null value and one with an
//! empty payload as an empty value, and Runnel writes them back the same way.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer as _, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, StartFrom, TopicSpec};

use crate::support::{backend, kafka};

/// What a plain client reads: `(key, payload)` with the payload as librdkafka gives it.
type Plain = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Reads `count` messages of partition 0 of `topic` from the start with a plain consumer.
fn read_plain(topic: &str, count: usize) -> Vec<Plain> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", kafka().bootstrap_servers())
        .set("group.id", "plain-reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut read = Vec::new();
    while read.len() < count {
        assert!(Instant::now() < deadline, "read only {read:?}");
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.unwrap();
            read.push((
                message.key().map(<[u8]>::to_vec),
                message.payload().map(<[u8]>::to_vec),
            ));
        }
    }
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_without_a_payload_reads_as_a_null_value() {
    let backend = backend().await;
    let topic = "null-values-in";
    backend
        .create_topic(&TopicSpec::new(topic, 1))
        .await
        .unwrap();
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", kafka().bootstrap_servers())
        .create()
        .unwrap();
    producer
        .send(
            BaseRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .key(b"gone"),
        )
        .unwrap();
    producer
        .send(
            BaseRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .key(b"empty")
                .payload(b""),
        )
        .unwrap();
    producer.flush(Duration::from_secs(30)).unwrap();

    let mut config = ConsumerConfig::new("null-values-in-reader", [topic]);
    config.start_from = StartFrom::Earliest;
    let consumer = backend.consumer(&config).await.unwrap();
    let mut records = Vec::new();
    while records.len() < 2 {
        records.extend(consumer.poll(2 - records.len()).await.unwrap());
    }
    assert_eq!(records[0].record.key, Some(Bytes::from("gone")));
    assert_eq!(records[0].record.value, None, "no payload is a null value");
    assert_eq!(records[1].record.key, Some(Bytes::from("empty")));
    assert_eq!(
        records[1].record.value,
        Some(Bytes::new()),
        "an empty payload is an empty value"
    );

    // The topic tools read through `KafkaBackend::read`, which maps the same way.
    let read = backend
        .read(topic, 0, 0, 2, Duration::from_secs(30))
        .await
        .unwrap();
    let values: Vec<_> = read.iter().map(|r| r.record.value.clone()).collect();
    assert_eq!(values, [None, Some(Bytes::new())]);
    consumer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_value_is_written_without_a_payload() {
    let backend = backend().await;
    let topic = "null-values-out";
    backend
        .create_topic(&TopicSpec::new(topic, 1))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for record in [
        Record::null().with_key("gone"),
        Record::new("").with_key("empty"),
        Record::new("v"),
    ] {
        producer
            .send(topic, 0, record)
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let read = tokio::task::spawn_blocking(move || read_plain(topic, 3))
        .await
        .unwrap();
    assert_eq!(
        read,
        [
            (Some(b"gone".to_vec()), None),
            (Some(b"empty".to_vec()), Some(Vec::new())),
            (None, Some(b"v".to_vec())),
        ]
    );
}
