//! The lag librdkafka's statistics report, as `Consumer::client_lag` gives it.

use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, CommitOffset, Consumer, ConsumerConfig, ProducerConfig, Record, TopicPartition,
    TopicSpec,
};

use crate::support::backend;

/// Polls `consumer.client_lag()` until it equals `expected`, for up to 30 s.
async fn wait_for_lag(consumer: &dyn Consumer, expected: &[(TopicPartition, u64)]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let lag = consumer.client_lag();
        if lag == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "client lag {lag:?}, expected {expected:?}"
        );
        // Keep polling: librdkafka serves its statistics through the consumer's queue.
        let _ = tokio::time::timeout(Duration::from_millis(100), consumer.poll(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_statistics_give_the_lag_behind_the_committed_offset() {
    let backend = backend().await;
    let topic = "client-lag";
    backend
        .create_topic(&TopicSpec::new(topic, 1))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for value in 0..50u8 {
        drop(
            producer
                .send(topic, 0, Record::new(vec![value]))
                .await
                .unwrap(),
        );
    }
    producer.flush().await.unwrap();

    let mut config = ConsumerConfig::new("client-lag-reader", [topic]);
    config
        .settings
        .insert("statistics.interval.ms".into(), "100".into());
    let consumer = backend.consumer(&config).await.unwrap();
    let mut read = 0;
    while read < 20 {
        read += consumer.poll(20 - read).await.unwrap().len();
    }
    consumer
        .commit(&[CommitOffset {
            topic: topic.into(),
            partition: 0,
            offset: 20,
        }])
        .await
        .unwrap();
    let partition = TopicPartition::new(topic, 0);
    wait_for_lag(&*consumer, &[(partition.clone(), 30)]).await;

    consumer
        .commit(&[CommitOffset {
            topic: topic.into(),
            partition: 0,
            offset: 45,
        }])
        .await
        .unwrap();
    wait_for_lag(&*consumer, &[(partition, 5)]).await;
    consumer.close().await.unwrap();
}
