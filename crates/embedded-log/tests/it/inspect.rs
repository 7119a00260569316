use std::io::Write;

use runnel_backend::{Backend, CommitOffset, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, LogConfig, LogInspector};

#[tokio::test]
async fn the_inspector_reads_a_log_in_use_across_segments_up_to_a_batch_being_written() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let spec = TopicSpec::new("t", 2).with_config("segment.bytes", "200");
    backend.create_topic(&spec).await.unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for i in 0..30 {
        let record = Record::new(format!("value-{i}"))
            .with_key("k")
            .with_timestamp(i);
        producer.send("t", 0, record).await.unwrap().await.unwrap();
    }
    let consumer = backend
        .consumer(&ConsumerConfig::new("readers", ["t"]))
        .await
        .unwrap();
    let topic = std::sync::Arc::from("t");
    consumer
        .commit(&[CommitOffset {
            topic,
            partition: 0,
            offset: 12,
        }])
        .await
        .unwrap();

    let inspector = LogInspector::new(directory.path()).unwrap();
    let topics = inspector.topics().unwrap();
    assert_eq!((topics[0].name.as_str(), topics[0].partitions), ("t", 2));
    assert_eq!(
        topics[0].settings.get("segment.bytes").map(String::as_str),
        Some("200")
    );
    let offsets = inspector.offsets("t").unwrap();
    assert_eq!(
        (offsets[0].start, offsets[0].end, offsets[1].end),
        (0, 30, 0)
    );
    let segments = std::fs::read_dir(directory.path().join("topics/t/0"))
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension().unwrap() == "log")
        .count();
    assert!(segments > 3, "the records span several segments");
    let middle = inspector.read("t", 0, 17, 5).unwrap();
    let offsets: Vec<u64> = middle.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [17, 18, 19, 20, 21]);
    assert_eq!(middle[0].record.value.as_deref(), Some(&b"value-17"[..]));
    assert_eq!(middle[0].record.timestamp, 17);
    assert_eq!(inspector.read("t", 0, 0, 1000).unwrap().len(), 30);
    assert_eq!(
        inspector.committed("readers", "t").unwrap(),
        [Some(12), None]
    );
    assert_eq!(inspector.groups().unwrap(), ["readers"]);

    // A batch still being appended at the end of the last segment ends the partition.
    let mut last = std::fs::read_dir(directory.path().join("topics/t/0"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().unwrap() == "log")
        .collect::<Vec<_>>();
    last.sort();
    let mut tail = std::fs::OpenOptions::new()
        .append(true)
        .open(last.last().unwrap())
        .unwrap();
    tail.write_all(b"RNB2\x00\x10\x00\x00").unwrap();
    assert_eq!(inspector.offsets("t").unwrap()[0].end, 30);
    assert_eq!(inspector.read("t", 0, 25, 100).unwrap().len(), 5);
    assert!(inspector.read("missing", 0, 0, 1).is_err());
}
