//! Real Apache Kafka (`test_broker::ApacheKafka`, run by `scripts/kafka-dev`): a
//! `read_committed` reader skips aborted transactions, which tansu does not do, and a
//! three-node cluster keeps taking writes with `acks=all` while a node is down, and takes a
//! killed and a stopped node back.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer as _, ThreadedProducer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use runnel_backend::{Backend, TopicCreation, TopicSpec};
use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::ApacheKafka;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Every value of `topic`'s `partitions` partitions, from the start to the end, per
/// partition in offset order, read at `isolation` (`read_committed` or `read_uncommitted`).
///
/// The end is the high watermark, which a `read_committed` reader reaches once the last
/// transaction's markers are written: a committed transaction's markers are written after
/// the commit returns, and until then its records are not yet readable.
fn read_to_end(
    bootstrap_servers: &str,
    topic: &str,
    partitions: i32,
    isolation: &str,
) -> BTreeMap<i32, Vec<String>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap_servers)
        .set("group.id", format!("{topic}-{isolation}"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut values: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                let value = String::from_utf8(message.payload().unwrap().to_vec()).unwrap();
                values.entry(message.partition()).or_default().push(value);
                continue;
            }
            Some(Err(error)) => panic!("reading {topic}: {error}"),
            None => {}
        }
        let positions = consumer.position().unwrap();
        let at_end = (0..partitions).all(|partition| {
            let (_, high) = consumer
                .fetch_watermarks(topic, partition, TIMEOUT)
                .unwrap();
            let position = positions
                .find_partition(topic, partition)
                .map(|element| element.offset());
            matches!(position, Some(Offset::Offset(offset)) if offset >= high)
        });
        if at_end {
            return values;
        }
        assert!(
            Instant::now() < deadline,
            "{isolation} did not reach the end of {topic}: read {values:?}"
        );
    }
}

/// The transaction Kafka is known for: what an aborted transaction wrote stays in the log
/// but no `read_committed` reader sees it; a committed one's records are all seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_committed_reader_sees_committed_transactions_only() {
    let kafka = ApacheKafka::start();
    let backend = KafkaBackend::connect(kafka.config()).await.unwrap();
    let topic = "apache-kafka-transactions";
    backend
        .create_topic(&TopicSpec::new(topic, 2))
        .await
        .unwrap();

    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap_servers())
        .set("transactional.id", "apache-kafka-transactions")
        .create()
        .unwrap();
    producer.init_transactions(TIMEOUT).unwrap();
    let write = |prefix: &str| {
        for i in 0..4 {
            let value = format!("{prefix}-{i}");
            producer
                .send(
                    BaseRecord::<str, str>::to(topic)
                        .partition(i % 2)
                        .payload(&value),
                )
                .unwrap();
        }
        // Into the log before the transaction ends.
        producer.flush(TIMEOUT).unwrap();
    };
    producer.begin_transaction().unwrap();
    write("aborted");
    producer.abort_transaction(TIMEOUT).unwrap();
    producer.begin_transaction().unwrap();
    write("committed");
    producer.commit_transaction(TIMEOUT).unwrap();

    let servers = kafka.bootstrap_servers();
    let committed = read_to_end(&servers, topic, 2, "read_committed");
    let expected = BTreeMap::from([
        (0, vec!["committed-0".to_owned(), "committed-2".to_owned()]),
        (1, vec!["committed-1".to_owned(), "committed-3".to_owned()]),
    ]);
    assert_eq!(committed, expected, "read_committed sees only the commit");
    let everything = read_to_end(&servers, topic, 2, "read_uncommitted");
    let expected = BTreeMap::from([
        (0, ["aborted-0", "aborted-2", "committed-0", "committed-2"]),
        (1, ["aborted-1", "aborted-3", "committed-1", "committed-3"]),
    ])
    .into_iter()
    .map(|(partition, values)| (partition, values.map(str::to_owned).to_vec()))
    .collect::<BTreeMap<_, _>>();
    assert_eq!(everything, expected, "the aborted records are in the log");
}

/// The leader of `topic`'s partition 0 and its in-sync replicas.
fn leader_and_isr(kafka: &ApacheKafka, topic: &str) -> (i32, Vec<i32>) {
    let client: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap_servers())
        .create()
        .unwrap();
    let metadata = client.fetch_metadata(Some(topic), TIMEOUT).unwrap();
    let partition = &metadata.topics()[0].partitions()[0];
    (partition.leader(), partition.isr().to_vec())
}

/// Three nodes replicate a topic three times; with its leader killed the other two take
/// `acks=all` writes (`min.insync.replicas` 2), and the node restarted catches up; a node
/// stopped (SIGTERM) starts again too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_node_cluster_takes_writes_with_a_node_killed() {
    let kafka = ApacheKafka::start_cluster(3);
    let backend = KafkaBackend::connect(kafka.config()).await.unwrap();
    let topic = "apache-kafka-replicated";
    backend
        .create_topic(&TopicSpec::new(topic, 1))
        .await
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let leader = loop {
        let (leader, mut isr) = leader_and_isr(&kafka, topic);
        isr.sort_unstable();
        if leader > 0 && isr == [1, 2, 3] {
            break leader;
        }
        assert!(Instant::now() < deadline, "leader {leader}, isr {isr:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let killed = u32::try_from(leader).unwrap();
    kafka.kill(killed);
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap_servers())
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for i in 0..10 {
        producer
            .send(
                BaseRecord::<str, str>::to(topic)
                    .partition(0)
                    .payload(&format!("value-{i}")),
            )
            .unwrap();
    }
    producer.flush(Duration::from_secs(60)).unwrap();
    let (new_leader, _) = leader_and_isr(&kafka, topic);
    assert_ne!(new_leader, leader, "the killed node leads no more");

    kafka.restart(killed);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !leader_and_isr(&kafka, topic).1.contains(&leader) {
        assert!(
            Instant::now() < deadline,
            "node {killed} did not catch up again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let read = read_to_end(&kafka.broker_address(killed), topic, 1, "read_committed");
    let expected: Vec<String> = (0..10).map(|i| format!("value-{i}")).collect();
    assert_eq!(read, BTreeMap::from([(0, expected)]));

    // A controlled shutdown and a start again.
    let stopped = killed % 3 + 1;
    kafka.stop(stopped);
    assert!(
        std::net::TcpStream::connect(kafka.broker_address(stopped)).is_err(),
        "node {stopped} stopped listening"
    );
    kafka.restart(stopped);
}

/// Streamlets of one app start together and each creates the topics it writes, such as the
/// dead-letter topic they share: every one of them must succeed, though only one request
/// creates the topic and the broker answering the others may not know of it yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_racing_to_create_the_same_topics_all_succeed() {
    const CLIENTS: usize = 6;
    const TOPICS: usize = 16;
    let kafka = ApacheKafka::start();
    let mut backends = Vec::new();
    for _ in 0..CLIENTS {
        backends.push(KafkaBackend::connect(kafka.config()).await.unwrap());
    }
    for topic in 0..TOPICS {
        let spec = TopicSpec::new(format!("raced-{topic}"), 3);
        let creations =
            futures::future::join_all(backends.iter().map(|backend| backend.create_topic(&spec)))
                .await;
        let created = creations
            .into_iter()
            .map(|creation| creation.unwrap_or_else(|error| panic!("{}: {error:?}", spec.name)))
            .filter(|creation| *creation == TopicCreation::Created)
            .count();
        assert!(created <= 1, "{}: {created} clients created it", spec.name);
        assert_eq!(
            backends[0]
                .topic(&spec.name)
                .await
                .unwrap()
                .unwrap()
                .partitions,
            3
        );
    }
}
