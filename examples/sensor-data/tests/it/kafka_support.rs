//! Running the app on a tansu broker and reading its topics with a plain Kafka consumer.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers as _, Message};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel_kafka::test_broker::Tansu;

/// The app binary on `broker`, with plain output and quiet loggers.
pub(crate) fn app_on(broker: &Tansu, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(args)
        .args(broker.app_arguments())
        .args(["--view", "plain", "--status-every", "1s"])
        .args(["--set", "valid-logger.log-every=100000"])
        .args(["--set", "invalid-logger.log-every=100000"])
        .env("RUST_LOG", "info");
    command
}

/// One record as a plain Kafka consumer sees it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) partition: i32,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) value: Vec<u8>,
    pub(crate) headers: Vec<(String, Vec<u8>)>,
}

impl Seen {
    /// The last header called `name`, as text.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    }
}

/// Reads `topic` from the beginning with a plain librdkafka consumer (no group, every
/// partition assigned, read_committed) until `enough`, told of each record as it arrives,
/// says it has enough, or `limit` passes.
pub(crate) fn read_topic(
    broker: &Tansu,
    topic: &str,
    limit: Duration,
    mut enough: impl FnMut(&Seen) -> bool,
) -> Vec<Seen> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap_servers())
        .set("isolation.level", "read_committed")
        // Assigned, not subscribed: the group only names the reader, which commits nothing.
        .set("group.id", format!("plain-reader-{topic}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .unwrap();
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    let partitions = metadata.topics()[0].partitions().len() as i32;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            let headers = message.headers().map_or_else(Vec::new, |headers| {
                headers
                    .iter()
                    .map(|h| (h.key.to_owned(), h.value.unwrap_or_default().to_vec()))
                    .collect()
            });
            let record = Seen {
                partition: message.partition(),
                key: message.key().map(<[u8]>::to_vec),
                value: message.payload().unwrap_or_default().to_vec(),
                headers,
            };
            let done = enough(&record);
            seen.push(record);
            if done {
                break;
            }
        }
    }
    seen
}

/// A stop condition: at least `count` records.
pub(crate) fn at_least(count: usize) -> impl FnMut(&Seen) -> bool {
    let mut seen = 0;
    move |_| {
        seen += 1;
        seen >= count
    }
}

/// Counts how often each (sequence, metric name) arrived.
pub(crate) fn arrivals<'a>(
    metrics: impl Iterator<Item = &'a sensor_data::model::Metric>,
) -> BTreeMap<(i64, String), usize> {
    let mut counts = BTreeMap::new();
    for metric in metrics {
        *counts
            .entry((metric.sequence, metric.name.clone()))
            .or_default() += 1;
    }
    counts
}
