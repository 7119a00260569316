//! Acknowledged records and committed offsets survive closing, dropping and killing.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use runnel_backend::{Backend, CommitOffset, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, Error, LogConfig};

use crate::support::{produce, read_to_end, small_segments, values};

#[tokio::test]
async fn records_and_committed_offsets_survive_reopening() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), small_segments()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 2)).await.unwrap();
    produce(&backend, "t", 0, &values("a", 20)).await;
    produce(&backend, "t", 1, &values("b", 3)).await;
    let consumer = backend
        .consumer(&ConsumerConfig::new("g", ["t"]))
        .await
        .unwrap();
    let commit = |partition, offset| CommitOffset {
        topic: "t".into(),
        partition,
        offset,
    };
    consumer
        .commit(&[commit(0, 15), commit(1, 2)])
        .await
        .unwrap();
    drop(consumer);
    let before = read_to_end(&backend, "everything", "t").await;
    assert!(
        backend.partition_status("t", 0).unwrap().segments > 1,
        "several segments are exercised"
    );
    drop(backend);

    let reopened = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    assert_eq!(
        read_to_end(&reopened, "everything-again", "t").await,
        before
    );
    assert_eq!(before.len(), 23);
    assert_eq!(
        reopened.committed("g", "t").await.unwrap(),
        [Some(15), Some(2)]
    );
    let resumed = read_to_end(&reopened, "g", "t").await;
    assert_eq!(
        resumed,
        [
            (0, 15, "a-15".into()),
            (0, 16, "a-16".into()),
            (0, 17, "a-17".into()),
            (0, 18, "a-18".into()),
            (0, 19, "a-19".into()),
            (1, 2, "b-2".into())
        ]
    );
    assert_eq!(
        produce(&reopened, "t", 0, &values("c", 1)).await,
        [20],
        "appending continues after the last offset"
    );
}

#[tokio::test]
async fn records_round_trip_with_keys_headers_and_timestamps_after_reopening() {
    let directory = tempfile::tempdir().unwrap();
    let sent = Record::new("v")
        .with_key(vec![0u8, 1])
        .with_timestamp(-3)
        .with_header("h", "1")
        .with_header("h", "2");
    {
        let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
        backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        producer
            .send("t", 0, sent.clone())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let consumer = backend
        .consumer(&ConsumerConfig::new("g", ["t"]))
        .await
        .unwrap();
    assert_eq!(consumer.poll(10).await.unwrap()[0].record, sent);
}

#[tokio::test]
async fn a_second_open_is_refused_naming_the_directory_and_the_holder() {
    let directory = tempfile::tempdir().unwrap();
    let first = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    let error = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap_err();
    assert!(matches!(error, Error::DirectoryLocked { .. }));
    assert_eq!(
        error.to_string(),
        format!(
            "log directory '{}' is in use by process {}",
            directory.path().display(),
            std::process::id()
        )
    );
    drop(first);
    EmbeddedBackend::open(directory.path(), LogConfig::default())
        .expect("dropping the backend releases the lock");
}

/// The environment variable that turns [`crash_child`] into a writer.
const CRASH_DIRECTORY: &str = "RUNNEL_EMBEDDED_LOG_CRASH_DIRECTORY";

/// Run by [`acknowledged_records_survive_a_killed_process`] in a child process (with
/// `--ignored`): appends forever and prints each acknowledged offset and value. Not a test
/// of its own, so ignored in a normal run.
#[tokio::test]
#[ignore = "the child process of acknowledged_records_survive_a_killed_process"]
async fn crash_child() {
    let directory = std::env::var(CRASH_DIRECTORY)
        .expect("run by acknowledged_records_survive_a_killed_process, which sets the directory");
    let backend = EmbeddedBackend::open(&directory, small_segments()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut receipts = std::collections::VecDeque::new();
    for i in 0u64.. {
        let value = format!("value-{i}");
        receipts.push_back((
            producer
                .send("t", 0, Record::new(value.clone()))
                .await
                .unwrap(),
            value,
        ));
        // Keep a few sends in flight so batches hold several records.
        if receipts.len() > 8 {
            let (receipt, value) = receipts.pop_front().unwrap();
            let offset = receipt.await.unwrap();
            let mut out = std::io::stdout().lock();
            writeln!(out, "{offset} {value}").unwrap();
            out.flush().unwrap();
        }
    }
}

#[tokio::test]
async fn acknowledged_records_survive_a_killed_process() {
    let directory = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "durability::crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIRECTORY, directory.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acknowledged = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let Some((offset, value)) = line.split_once(' ') else {
            continue;
        };
        let Ok(offset) = offset.parse::<u64>() else {
            continue;
        };
        acknowledged.push((offset, value.to_owned()));
        if acknowledged.len() == 300 {
            child.kill().unwrap(); // SIGKILL: no destructor, no flush, no unlock
            break;
        }
    }
    child.wait().unwrap();
    assert_eq!(
        acknowledged.len(),
        300,
        "the child acknowledged records before it was killed"
    );

    let backend = EmbeddedBackend::open(directory.path(), small_segments())
        .expect("the lock died with the process");
    let stored = read_to_end(&backend, "check", "t").await;
    assert!(stored.len() >= acknowledged.len());
    for (offset, value) in acknowledged {
        assert_eq!(stored[offset as usize], (0, offset, value));
    }
}

#[tokio::test]
async fn batches_larger_than_one_read_are_read_and_recovered_whole() {
    let directory = tempfile::tempdir().unwrap();
    let big = |fill: u8| {
        "x".repeat(1_500_000)
            .replace('x', &(fill as char).to_string())
    };
    let sent = [big(b'a'), "small".to_owned(), big(b'b')];
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    assert_eq!(produce(&backend, "t", 0, &sent).await, [0, 1, 2]);
    let expected: Vec<(u32, u64, String)> = sent
        .iter()
        .enumerate()
        .map(|(i, v)| (0, i as u64, v.clone()))
        .collect();
    assert_eq!(read_to_end(&backend, "before", "t").await, expected);
    drop(backend);

    let reopened = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    assert_eq!(
        reopened.partition_status("t", 0).unwrap().end,
        3,
        "recovery kept every batch"
    );
    assert_eq!(read_to_end(&reopened, "after", "t").await, expected);
}
