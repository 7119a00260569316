//! Torn tails are truncated to the last valid batch; corruption anywhere else is an error
//! naming the file and the byte position, at open or at read.

use std::error::Error as _;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;

use runnel_backend::{Backend, ConsumerConfig, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, Error, LogConfig};

use crate::support::{produce, read_to_end, segment_files, small_segments, values};

/// A batch of one record with a 7-byte value ("value-N" for N < 10), no key, no headers:
/// a 32-byte header and a 20-byte record frame.
const BATCH_LEN: u64 = 32 + 20 + 7;

async fn ten_records(directory: &std::path::Path, config: LogConfig) -> EmbeddedBackend {
    let backend = EmbeddedBackend::open(directory, config).unwrap();
    backend.create_topic(&TopicSpec::new("t", 1)).await.unwrap();
    produce(&backend, "t", 0, &values("value", 10)).await;
    backend
}

fn expected(range: std::ops::Range<u64>) -> Vec<(u32, u64, String)> {
    range.map(|i| (0, i, format!("value-{i}"))).collect()
}

#[tokio::test]
async fn a_truncated_tail_is_cut_to_the_last_whole_batch() {
    let directory = tempfile::tempdir().unwrap();
    drop(ten_records(directory.path(), LogConfig::default()).await);
    let segment = &segment_files(directory.path(), "t", 0)[0];
    let file = OpenOptions::new().write(true).open(segment).unwrap();
    file.set_len(10 * BATCH_LEN - 5).unwrap();

    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    assert_eq!(read_to_end(&backend, "g", "t").await, expected(0..9));
    assert_eq!(std::fs::metadata(segment).unwrap().len(), 9 * BATCH_LEN);
    assert_eq!(produce(&backend, "t", 0, &values("next", 1)).await, [9]);
}

#[tokio::test]
async fn a_garbage_tail_is_cut_and_the_valid_prefix_kept() {
    let directory = tempfile::tempdir().unwrap();
    drop(ten_records(directory.path(), LogConfig::default()).await);
    let segment = &segment_files(directory.path(), "t", 0)[0];
    let mut file = OpenOptions::new().append(true).open(segment).unwrap();
    // A zero-filled block, as a crash may leave, then bytes that look like a batch start.
    file.write_all(&[0; 100]).unwrap();
    file.write_all(b"RNB2\xff\xff\x00\x00junk").unwrap();

    let (backend, logged) =
        capture_logs(|| EmbeddedBackend::open(directory.path(), LogConfig::default()));
    let backend = backend.unwrap();
    assert_eq!(read_to_end(&backend, "g", "t").await, expected(0..10));
    assert_eq!(std::fs::metadata(segment).unwrap().len(), 10 * BATCH_LEN);
    assert!(logged.contains("WARN"), "{logged}");
    assert!(
        logged.contains(&format!("file={}", segment.display())),
        "{logged}"
    );
    assert!(
        logged.contains(&format!("position={}", 10 * BATCH_LEN)),
        "{logged}"
    );
    assert!(logged.contains("dropped_bytes=112"), "{logged}");
}

#[tokio::test]
async fn a_flipped_byte_before_valid_batches_is_an_error_naming_file_and_position() {
    let directory = tempfile::tempdir().unwrap();
    drop(ten_records(directory.path(), LogConfig::default()).await);
    let segment = &segment_files(directory.path(), "t", 0)[0];
    flip_byte(segment, 4 * BATCH_LEN + 40);

    let error = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap_err();
    assert!(matches!(error, Error::CorruptBatch { position, .. } if position == 4 * BATCH_LEN));
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "corrupt record batch in '{}' at byte {}: checksum mismatch",
            segment.display(),
            4 * BATCH_LEN
        )),
        "{message}"
    );
    assert!(
        message.ends_with(&format!("a valid batch follows at byte {}", 5 * BATCH_LEN)),
        "{message}"
    );
}

#[tokio::test]
async fn damage_in_a_sealed_segment_is_an_error_at_open() {
    let directory = tempfile::tempdir().unwrap();
    drop(ten_records(directory.path(), small_segments()).await);
    let segments = segment_files(directory.path(), "t", 0);
    assert!(segments.len() > 2);
    // The last batch of a sealed segment: no valid batch follows in that file, but it is
    // sealed, so this is corruption, not a torn tail.
    let length = std::fs::metadata(&segments[0]).unwrap().len();
    flip_byte(&segments[0], length - 1);
    let error = EmbeddedBackend::open(directory.path(), small_segments())
        .unwrap_err()
        .to_string();
    let position = length - BATCH_LEN;
    assert!(
        error.starts_with(&format!(
            "corrupt record batch in '{}' at byte {position}: checksum mismatch",
            segments[0].display()
        )),
        "{error}"
    );
}

#[tokio::test]
async fn damage_that_appears_while_open_is_an_error_on_read() {
    let directory = tempfile::tempdir().unwrap();
    let backend = ten_records(directory.path(), LogConfig::default()).await;
    let segment = &segment_files(directory.path(), "t", 0)[0];
    flip_byte(segment, 6 * BATCH_LEN + 50);

    let consumer = backend
        .consumer(&ConsumerConfig::new("g", ["t"]))
        .await
        .unwrap();
    // The first poll returns the six good records, the next one the error.
    let mut good = Vec::new();
    let error = loop {
        match consumer.poll(100).await {
            Ok(records) => good.extend(records.into_iter().map(|consumed| consumed.offset)),
            Err(error) => break error,
        }
    };
    assert_eq!(good, [0, 1, 2, 3, 4, 5]);
    assert_eq!(error.to_string(), "consuming from topic 't' failed");
    let cause = error.source().unwrap().to_string();
    assert!(
        cause.starts_with(&format!(
            "corrupt record batch in '{}' at byte {}: checksum mismatch",
            segment.display(),
            6 * BATCH_LEN
        )),
        "{cause}"
    );
    assert_eq!(
        consumer.positions()[0].1,
        6,
        "the position stays at the damaged batch"
    );
}

#[tokio::test]
async fn missing_and_damaged_indexes_are_rebuilt() {
    let directory = tempfile::tempdir().unwrap();
    drop(ten_records(directory.path(), small_segments()).await);
    let segments = segment_files(directory.path(), "t", 0);
    std::fs::remove_file(segments[0].with_extension("index")).unwrap();
    std::fs::write(segments[1].with_extension("index"), [7u8; 13]).unwrap();

    let backend = EmbeddedBackend::open(directory.path(), small_segments()).unwrap();
    assert_eq!(read_to_end(&backend, "g", "t").await, expected(0..10));
    assert_eq!(
        std::fs::read(segments[0].with_extension("index")).unwrap(),
        [0u8; 8],
        "one entry: offset 0 at byte 0"
    );
    assert_eq!(
        std::fs::metadata(segments[1].with_extension("index"))
            .unwrap()
            .len(),
        8
    );
}

fn flip_byte(path: &std::path::Path, position: u64) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, position).unwrap();
    file.write_all_at(&[byte[0] ^ 0x01], position).unwrap();
}

/// What `work` logs on this thread, through a subscriber that is the process's global
/// default (set once) and writes to a buffer of the capturing thread. A subscriber scoped to
/// the thread (`with_default`) went blind now and then: tracing caches each callsite's
/// interest process-wide, and a test beside this one, with no subscriber, that hit the same
/// warning first (a torn tail cut) had it cached as never logged.
fn capture_logs<T>(work: impl FnOnce() -> T) -> (T, String) {
    thread_local! {
        static CAPTURED: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
    }
    struct ThreadBuffer;
    impl Write for ThreadBuffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            CAPTURED.with_borrow_mut(|captured| {
                if let Some(captured) = captured {
                    captured.extend_from_slice(bytes);
                }
            });
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(|| ThreadBuffer)
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other test in this binary sets a global subscriber");
        // Installing rebuilt the cached interests against the thread's default of the
        // moment, which was no subscriber yet.
        tracing::callsite::rebuild_interest_cache();
    });
    CAPTURED.with_borrow_mut(|captured| *captured = Some(Vec::new()));
    let result = work();
    let logged = CAPTURED.with_borrow_mut(Option::take).unwrap_or_default();
    (result, String::from_utf8(logged).unwrap())
}
