//! The embedded log: Runnel's default backplane, a durable, partitioned log in segment files
//! on local disk, used by `app run` on one machine.
//!
//! [`EmbeddedBackend`] implements [`runnel_backend::Backend`], so streamlets run on it exactly
//! as on Kafka or the in-memory backplane, and it passes the same conformance suite.
//!
//! ```
//! use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
//! use runnel_embedded_log::{EmbeddedBackend, LogConfig};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let directory = tempfile::tempdir()?;
//! let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
//! backend.create_topic(&TopicSpec::new("greetings", 1).with_config("retention.ms", "3600000")).await?;
//! let producer = backend.producer(&ProducerConfig::default()).await?;
//! let receipt = producer.send("greetings", 0, Record::new("hello").with_key("en")).await?;
//! assert_eq!(receipt.await?, 0); // synced to disk: acknowledged means durable
//!
//! let consumer = backend.consumer(&ConsumerConfig::new("readers", ["greetings"])).await?;
//! let records = consumer.poll(100).await?;
//! assert_eq!(records[0].record.value.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```
//!
//! Where to begin: [`EmbeddedBackend::open`] and [`LogConfig`]; then `writer.rs` (group
//! commit), `recovery.rs` (what happens after a crash) and `reader.rs` (the read path).
//!
//! # Design constraints
//!
//! 1. **Acknowledged means durable per policy.** A receipt completes only after the batch
//!    holding its record is written and, under [`FsyncPolicy::Always`] (the default),
//!    synced. Consumers only ever see acknowledged records.
//! 2. **Group commit, not per-record I/O.** Each partition has one writer thread. Producers
//!    encode records straight into the partition's pending buffer, which becomes the next
//!    batch; the writer takes the whole buffer, writes it with one call and syncs once. While
//!    it syncs, the next batch fills, so batches grow as the disk slows.
//! 3. **Bounded memory.** The pending buffer holds at most
//!    [`LogConfig::max_pending_bytes`]; a send that does not fit waits (backpressure).
//! 4. **Corruption is never skipped silently.** Every batch carries a CRC-32C checked on
//!    recovery and on every read. Only a torn tail of a partition's last segment (no valid
//!    batch after the damage) is truncated, with a warning; anything else is an error naming
//!    the file and the byte position.
//! 5. **Derived data is rebuilt, not trusted.** Indexes are hints: they are checked on open
//!    and rebuilt from the segment when missing or wrong; they are never synced.
//! 6. **One process per directory.** The directory is locked with `File::try_lock`; a second
//!    opener gets [`Error::DirectoryLocked`] naming the directory and the holder's pid.
//! 7. **No `unsafe`, no mmap.** Reads and writes are positioned (`read_at`/`write_at`);
//!    reads take 1 MiB at a time and records share that buffer (`Bytes` slices), so a
//!    record kept alive keeps its read buffer alive too.
//!
//! # On-disk format
//!
//! ```text
//! <directory>/
//!   lock                              pid of the process holding the lock
//!   topics/<topic>/topic.properties   partition count and setting overrides (key=value)
//!   topics/<topic>/<partition>/<base offset, 20 digits>.log     segment: batches back to back
//!   topics/<topic>/<partition>/<base offset, 20 digits>.index   sparse offset index
//!   groups/<encoded group name>.offsets                          committed offsets
//!   transactions.state                                           the transaction coordinator's state
//! ```
//!
//! A **segment** is a sequence of batches; its name is the offset of its first record. The
//! writer starts a new segment when the next batch would take the active one past
//! `segment.bytes` (a batch is never split; a segment holds at least one batch).
//!
//! A **batch** (all integers little-endian):
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | magic | `RNB2` (format version 2); `RNB1` (version 1) is still read |
//! | 4..8 | length | `u32`, the whole batch, header included |
//! | 8..12 | crc | `u32`, CRC-32C (Castagnoli) of bytes 0..8 and 12..length |
//! | 12..20 | base offset | `u64`, the offset of the first record |
//! | 20..24 | record count | `u32` |
//! | 24..32 | max timestamp | `i64`, the largest record timestamp |
//! | 32.. | records | back to back, offsets `base`, `base + 1`, ... |
//!
//! A **record**: timestamp `i64` (milliseconds); key length `i32` (`-1` for a null key) and
//! key bytes; value length `i32` (`-1` for a null value, a tombstone) and value bytes;
//! header count `u32`, then per header the name length `u32`, the name (UTF-8), the value
//! length `u32` and the value. Headers keep their order and names may repeat, as in
//! [`runnel_backend::Record`]. In format version 1 (`RNB1`, written before null values
//! existed) the value length is a `u32` and a value is never null; the writer only writes
//! version 2, and a segment may hold batches of both versions (old ones, then new ones).
//!
//! A **transactional batch** has the magic `RNT2` (`RNT1` when its records are in format
//! version 1, still read) and, between the header and the records,
//! the producer id (`u64`), its epoch (`u32`) and a control field (`u32`: 0 records, 1 commit
//! marker, 2 abort marker); a marker is such a batch with record count 1 and no record bytes.
//! Plain batches do not change with transactions, so logs that never saw one read as before. How
//! transactions use them is in `coordinator.rs` (the protocol), `transactional_producer.rs`
//! and `transaction_index.rs` (what read-committed readers skip), and `docs/embedded-log.md`.
//!
//! An **index** entry is 8 bytes: the batch's first offset minus the segment's base (`u32`)
//! and its byte position (`u32`), for the first batch and then at least every 4 KiB of log.
//!
//! Topic settings and committed offsets are small files replaced crash-safely (write a
//! temporary file, sync, rename, sync the directory); their formats are described in
//! `topic_settings.rs` and `offset_store.rs`.
#![deny(missing_docs)]

mod assigned;
mod backend;
mod batch;
mod config;
mod consumer;
mod coordinator;
mod error;
mod files;
mod index;
mod inspect;
mod lock;
mod offset_store;
mod partition;
mod pending;
mod producer;
mod reader;
mod recovery;
mod retention;
mod segment;
mod shared;
mod topic_schemas;
mod topic_settings;
mod transaction_index;
mod transaction_state;
mod transaction_timeouts;
mod transactional_producer;
mod writer;

pub use backend::EmbeddedBackend;
pub use config::{FsyncPolicy, LogConfig};
pub use error::{Error, Result, SharedError};
pub use inspect::{LogInspector, TopicDescription};
pub use partition::PartitionStatus;
