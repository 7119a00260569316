//! Reading an app's topics on a Kafka broker with a plain librdkafka consumer, as any Kafka
//! client would (with the `kafka` feature).

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers as _, Message};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel_kafka::test_broker::TestBroker;

/// One record as a plain Kafka consumer sees it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its partition.
    pub partition: i32,
    /// Its key.
    pub key: Option<Vec<u8>>,
    /// Its value (empty for none).
    pub value: Vec<u8>,
    /// Its headers, in order.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Seen {
    /// The last header called `name`, as text.
    pub fn header(&self, name: &str) -> Option<String> {
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
///
/// # Panics
///
/// If the broker cannot be reached or the topic does not exist.
pub fn read_topic(
    broker: &impl TestBroker,
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
        .expect("a plain consumer is created");
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("the broker answers");
    let partitions = metadata.topics()[0].partitions().len() as i32;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .expect("a partition can be added");
    }
    consumer
        .assign(&assignment)
        .expect("the partitions are assigned");
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

/// A stop condition for [`read_topic`]: at least `count` records.
pub fn at_least(count: usize) -> impl FnMut(&Seen) -> bool {
    let mut seen = 0;
    move |_| {
        seen += 1;
        seen >= count
    }
}
