//! Retention by size and by age, and a writer's deletion below an offset, delete whole
//! sealed segments; consumers skip forward.
//! Topic settings come from the spec, are checked, and survive reopening.

use std::time::{Duration, SystemTime};

use runnel_backend::{Backend, CommitOffset, ConsumerConfig, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};

use crate::support::{produce, read_to_end, segment_files, values};

/// With 7-byte values ("value-N", N < 10) and no keys, each record is its own 59-byte batch.
const BATCH_LEN: u64 = 59;

#[tokio::test]
async fn size_retention_keeps_the_newest_segments_and_consumers_skip_forward() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    // Two batches per segment; keep at least three batches.
    let spec = TopicSpec::new("t", 1)
        .with_config("segment.bytes", (2 * BATCH_LEN).to_string())
        .with_config("retention.bytes", (3 * BATCH_LEN).to_string());
    backend.create_topic(&spec).await.unwrap();
    let consumer = backend
        .consumer(&ConsumerConfig::new("slow", ["t"]))
        .await
        .unwrap();
    consumer
        .commit(&[CommitOffset {
            topic: "t".into(),
            partition: 0,
            offset: 0,
        }])
        .await
        .unwrap();
    consumer.close().await.unwrap();

    produce(&backend, "t", 0, &values("value", 10)).await;
    // Segments [0,1] [2,3] [4,5] [6,7] [8,9]. Like Kafka, the oldest segment goes while the
    // rest still hold at least 3 batches: [6,7] [8,9] remain.
    backend.enforce_retention().unwrap();
    let status = backend.partition_status("t", 0).unwrap();
    assert_eq!((status.start, status.end, status.segments), (6, 10, 2));
    assert_eq!(status.bytes, 4 * BATCH_LEN);
    assert_eq!(
        segment_files(directory.path(), "t", 0).len(),
        2,
        "the files are gone too"
    );
    assert_eq!(backend.offsets("t").await.unwrap()[0].start, 6);

    // The group committed offset 0, which is gone: it resumes at the log start.
    let read = read_to_end(&backend, "slow", "t").await;
    assert_eq!(read.first().map(|(_, offset, _)| *offset), Some(6));
    assert_eq!(read.len(), 4);
}

#[tokio::test]
async fn a_writer_deletes_the_whole_segments_below_an_offset_it_no_longer_needs() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    // Two batches per segment, nothing deleted by size or age.
    let spec = TopicSpec::new("t", 1)
        .with_config("segment.bytes", (2 * BATCH_LEN).to_string())
        .with_config("retention.ms", "-1");
    backend.create_topic(&spec).await.unwrap();
    produce(&backend, "t", 0, &values("value", 9)).await;

    // Segments [0,1] [2,3] [4,5] [6,7] [8]: offset 5 is in [4,5], which stays.
    assert_eq!(backend.delete_records_before("t", 0, 5).await.unwrap(), 4);
    assert_eq!(segment_files(directory.path(), "t", 0).len(), 3);
    let read = read_to_end(&backend, "reader", "t").await;
    let offsets: Vec<u64> = read.iter().map(|(_, offset, _)| *offset).collect();
    assert_eq!(offsets, [4, 5, 6, 7, 8]);
    // Below the start, nothing more goes; the active segment never does.
    assert_eq!(backend.delete_records_before("t", 0, 2).await.unwrap(), 4);
    assert_eq!(backend.delete_records_before("t", 0, 100).await.unwrap(), 8);
    assert!(backend.delete_records_before("t", 1, 0).await.is_err());
}

#[tokio::test]
async fn age_retention_deletes_sealed_segments_last_written_too_long_ago() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let spec = TopicSpec::new("t", 1)
        .with_config("segment.bytes", (2 * BATCH_LEN).to_string())
        .with_config("retention.ms", "3600000");
    backend.create_topic(&spec).await.unwrap();
    produce(&backend, "t", 0, &values("value", 7)).await;
    // Segments [0,1] [2,3] [4,5] [6]; the first two were written "two hours ago".
    let segments = segment_files(directory.path(), "t", 0);
    assert_eq!(segments.len(), 4);
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    for segment in &segments[..2] {
        std::fs::File::options()
            .write(true)
            .open(segment)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
    }
    assert_eq!(backend.enforce_retention().unwrap(), 2);
    let status = backend.partition_status("t", 0).unwrap();
    assert_eq!((status.start, status.end, status.segments), (4, 7, 2));
    assert_eq!(
        read_to_end(&backend, "g", "t")
            .await
            .first()
            .map(|(_, offset, _)| *offset),
        Some(4)
    );

    // The active segment is never deleted, however old.
    for segment in segment_files(directory.path(), "t", 0) {
        std::fs::File::options()
            .write(true)
            .open(segment)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
    }
    assert_eq!(backend.enforce_retention().unwrap(), 1);
    assert_eq!(backend.partition_status("t", 0).unwrap().segments, 1);
}

#[tokio::test]
async fn periodic_checks_apply_retention_without_being_asked() {
    let directory = tempfile::tempdir().unwrap();
    let config = LogConfig::default()
        .with_retention_bytes(Some(1))
        .with_segment_bytes(BATCH_LEN)
        .with_retention_check_interval(Duration::from_millis(20));
    let backend = EmbeddedBackend::open(directory.path(), config).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    produce(&backend, "t", 0, &values("value", 5)).await;
    // Each roll checks retention, and so does the writer every 20 ms.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while backend.partition_status("t", 0).unwrap().segments > 1 {
        assert!(std::time::Instant::now() < deadline, "retention never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(backend.partition_status("t", 0).unwrap().start, 4);
}

#[tokio::test]
async fn topic_settings_survive_reopening_under_other_defaults() {
    let directory = tempfile::tempdir().unwrap();
    {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        let spec = TopicSpec::new("t", 1).with_config("segment.bytes", (2 * BATCH_LEN).to_string());
        backend.create_topic(&spec).await.unwrap();
    }
    let backend = EmbeddedBackend::open(
        directory.path(),
        LogConfig::default().with_segment_bytes(1 << 30),
    )
    .unwrap();
    produce(&backend, "t", 0, &values("value", 6)).await;
    assert_eq!(backend.partition_status("t", 0).unwrap().segments, 3);
    let properties =
        std::fs::read_to_string(directory.path().join("topics/t/topic.properties")).unwrap();
    assert!(properties.contains("segment.bytes=118\n"), "{properties}");
}

#[tokio::test]
async fn malformed_settings_are_refused_naming_key_and_value() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let spec = TopicSpec::new("t", 1).with_config("retention.ms", "a week");
    let error = backend.create_topic(&spec).await.unwrap_err();
    assert!(matches!(error, runnel_backend::Error::InvalidTopic { .. }));
    assert_eq!(
        error.to_string(),
        "invalid topic 't': setting 'retention.ms' has invalid value 'a week': expected -1 (unlimited) or milliseconds"
    );
    assert!(backend.topic("t").await.unwrap().is_none());
    let error = backend
        .create_topic(&TopicSpec::new("a/b", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(error, runnel_backend::Error::InvalidTopic { .. }),
        "{error}"
    );
}
