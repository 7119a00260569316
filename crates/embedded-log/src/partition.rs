//! [`Partition`]: one partition's log as producers, the writer and readers share it: the
//! segments, the pending buffer and the acknowledged end.

use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;

use runnel_backend::Record;
use tokio::sync::{Notify, watch};

use crate::batch::{self, TransactionFields};
use crate::config::{FsyncPolicy, LogConfig};
use crate::error::{Error, Result};
use crate::files;
use crate::pending::{Accepted, Pending, Refusal};
use crate::recovery::{self, SegmentRole};
use crate::segment::{self, INDEX_EXTENSION, LOG_EXTENSION, Segment};
use crate::topic_settings::TopicSettings;
use crate::transaction_index::TransactionIndex;

/// What a partition looks like now; see [`EmbeddedBackend::partition_status`].
///
/// ```
/// use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec};
/// use runnel_embedded_log::{EmbeddedBackend, LogConfig};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let directory = tempfile::tempdir()?;
/// let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
/// backend.create_topic(&TopicSpec::new("t", 1)).await?;
/// let producer = backend.producer(&ProducerConfig::default()).await?;
/// producer.send("t", 0, Record::new("x")).await?.await?;
/// let status = backend.partition_status("t", 0)?;
/// assert_eq!((status.start, status.end, status.segments, status.pending_records), (0, 1, 1, 0));
/// # Ok(()) }
/// ```
///
/// [`EmbeddedBackend::partition_status`]: crate::EmbeddedBackend::partition_status
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionStatus {
    /// The offset of the oldest record kept.
    pub start: u64,
    /// The offset the next record will get; everything before it is acknowledged.
    pub end: u64,
    /// How many segment files the partition has, the active one included.
    pub segments: usize,
    /// Bytes of acknowledged batches in all segments.
    pub bytes: u64,
    /// Records accepted by `send` and not yet taken by the writer.
    pub pending_records: u32,
    /// Encoded bytes of those records.
    pub pending_bytes: usize,
    /// The most bytes that were ever pending at once since the log was opened; at most
    /// [`LogConfig::max_pending_bytes`] unless a single record is larger.
    pub peak_pending_bytes: usize,
    /// Batches the writer appended since the log was opened: with many records per batch,
    /// the group commit is at work.
    pub batches_written: u64,
    /// Times the writer synced the partition to disk since the log was opened.
    pub syncs: u64,
}

/// The limits and policies the writer and producers of a partition follow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PartitionLimits {
    pub(crate) settings: TopicSettings,
    pub(crate) fsync: FsyncPolicy,
    pub(crate) max_pending_bytes: usize,
    pub(crate) max_record_bytes: usize,
    pub(crate) retention_check_interval: std::time::Duration,
    pub(crate) linger: std::time::Duration,
}

impl PartitionLimits {
    /// The limits of a topic with `settings` in a log configured by `config`.
    pub(crate) fn new(settings: TopicSettings, config: &LogConfig) -> Self {
        // The fields of `LogConfig` are public, so the bounds its setters keep are enforced
        // again here: byte positions in a segment must fit in 32 bits.
        let mut settings = settings;
        settings.segment_bytes = settings
            .segment_bytes
            .clamp(1, LogConfig::MAX_SEGMENT_BYTES);
        PartitionLimits {
            settings,
            fsync: config.fsync,
            max_pending_bytes: config
                .max_pending_bytes
                .clamp(1, LogConfig::MAX_BUFFER_BYTES),
            max_record_bytes: config
                .max_record_bytes
                .clamp(1, LogConfig::MAX_BUFFER_BYTES),
            retention_check_interval: config.retention_check_interval,
            linger: config.linger,
        }
    }
}

/// One partition of a topic.
#[derive(Debug)]
pub(crate) struct Partition {
    /// The topic's name.
    pub(crate) topic: Arc<str>,
    /// The partition number.
    pub(crate) number: u32,
    /// The directory of the partition's segments.
    pub(crate) directory: PathBuf,
    pub(crate) limits: PartitionLimits,
    pub(crate) pending: Mutex<Pending>,
    /// Wakes the writer when records arrive in an empty buffer, or at shutdown.
    pub(crate) writer_wakeup: Condvar,
    /// Wakes producers waiting for space in the pending buffer.
    pub(crate) space: Notify,
    segments: RwLock<Vec<Arc<Segment>>>,
    start: AtomicU64,
    end: AtomicU64,
    /// Counters for [`PartitionStatus`].
    batches_written: AtomicU64,
    syncs: AtomicU64,
    /// Bumped whenever acknowledged records become visible anywhere in the log.
    appended: Arc<watch::Sender<u64>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Open transactions and aborted ranges, for read-committed readers.
    pub(crate) transactions: Mutex<TransactionIndex>,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Partition {
    /// Opens (or creates) the partition in `directory`, recovering its segments. The writer
    /// is not running yet: see [`writer::start`](crate::writer::start).
    pub(crate) fn open(
        directory: PathBuf,
        topic: Arc<str>,
        number: u32,
        limits: PartitionLimits,
        appended: Arc<watch::Sender<u64>>,
    ) -> Result<Partition> {
        files::create_directory(&directory)?;
        let segments = open_segments(&directory)?;
        let start = segments.first().map_or(0, |segment| segment.base_offset);
        let end = segments
            .last()
            .map_or(0, |segment| segment.acknowledged_end());
        Ok(Partition {
            topic,
            number,
            directory,
            limits,
            pending: Mutex::default(),
            writer_wakeup: Condvar::new(),
            space: Notify::new(),
            segments: RwLock::new(segments),
            start: AtomicU64::new(start),
            end: AtomicU64::new(end),
            batches_written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            appended,
            writer: Mutex::new(None),
            transactions: Mutex::default(),
        })
    }

    /// Accepts a record into the pending buffer, waiting while it is full.
    ///
    /// Cancel safe: a record is either accepted or not, and waiting holds no space.
    pub(crate) async fn append(&self, record: &Record) -> Result<Accepted> {
        self.append_as(record, None).await
    }

    /// Accepts a record from `owner` (a transactional producer, or `None` for a plain one)
    /// into the pending buffer, waiting while it is full.
    ///
    /// Cancel safe, as [`append`](Self::append).
    pub(crate) async fn append_as(
        &self,
        record: &Record,
        owner: Option<TransactionFields>,
    ) -> Result<Accepted> {
        loop {
            // `space` is only ever notified with `notify_waiters`, which a `Notified` receives
            // from its creation on without being enabled: registering as a waiter (a lock
            // and a list entry on every append) is left to the rare append that must wait.
            let space = pin!(self.space.notified());
            match self.try_append_as(record, owner)? {
                Some(accepted) => return Ok(accepted),
                None => space.await,
            }
        }
    }

    /// Accepts a record into the pending buffer if it has room now; `None` if it is full.
    pub(crate) fn try_append(&self, record: &Record) -> Result<Option<Accepted>> {
        self.try_append_as(record, None)
    }

    fn try_append_as(
        &self,
        record: &Record,
        owner: Option<TransactionFields>,
    ) -> Result<Option<Accepted>> {
        let size = batch::encoded_len(record);
        if size > self.limits.max_record_bytes {
            return Err(Error::RecordTooLarge {
                size,
                limit: self.limits.max_record_bytes,
            });
        }
        let pushed =
            lock(&self.pending).try_push(record, size, self.limits.max_pending_bytes, owner);
        match pushed {
            Ok(Some(accepted)) => {
                if accepted.wake_writer {
                    self.writer_wakeup.notify_one();
                }
                Ok(Some(accepted))
            }
            Ok(None) => Ok(None),
            Err(Refusal::Failed(source)) => Err(Error::PartitionFailed {
                path: self.directory.clone(),
                source,
            }),
            Err(Refusal::Closed) => Err(Error::Closed),
            Err(Refusal::Fenced) => Err(Error::ProducerFenced),
        }
    }

    /// Accepts a transaction marker of `fields`' producer, after every record accepted so
    /// far; the returned completion says when it is durable and at which offset.
    pub(crate) fn append_marker(&self, fields: TransactionFields) -> Result<Accepted> {
        let pushed = lock(&self.pending).push_marker(fields);
        match pushed {
            Ok(accepted) => {
                if accepted.wake_writer {
                    self.writer_wakeup.notify_one();
                }
                Ok(accepted)
            }
            Err(Refusal::Failed(source)) => Err(Error::PartitionFailed {
                path: self.directory.clone(),
                source,
            }),
            Err(Refusal::Closed | Refusal::Fenced) => Err(Error::Closed),
        }
    }

    /// The offset read-committed readers stop at: the start of the oldest open
    /// transaction, or the end.
    pub(crate) fn last_stable_offset(&self) -> u64 {
        let transactions = lock(&self.transactions);
        // Read under the lock: a transaction opens at an end read under it too.
        transactions.last_stable_offset(self.end())
    }

    /// Records that `producer_id` has a transaction open here from now on; returns its
    /// start bound.
    pub(crate) fn open_transaction(&self, producer_id: u64) -> u64 {
        let mut transactions = lock(&self.transactions);
        let end = self.end();
        transactions.open(producer_id, end);
        transactions.open_since(producer_id).unwrap_or(end)
    }

    /// Wakes consumers, so read-committed ones see a moved last stable offset.
    pub(crate) fn wake_readers(&self) {
        self.appended
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// The offset of the oldest record kept.
    pub(crate) fn start(&self) -> u64 {
        self.start.load(Ordering::Acquire)
    }

    /// The offset after the last acknowledged record.
    pub(crate) fn end(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// Makes records up to `end` visible and wakes waiting consumers.
    pub(crate) fn publish_end(&self, end: u64) {
        self.end.store(end, Ordering::Release);
        self.appended
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Counts a batch appended to a segment.
    pub(crate) fn count_batch(&self) {
        self.batches_written.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a sync of the partition's data.
    pub(crate) fn count_sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Every segment, oldest first.
    pub(crate) fn segments(&self) -> Vec<Arc<Segment>> {
        self.segments
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The segment that holds `offset`: the last one starting at or before it.
    pub(crate) fn segment_for(&self, offset: u64) -> Option<Arc<Segment>> {
        let segments = self.segments.read().unwrap_or_else(PoisonError::into_inner);
        let after = segments.partition_point(|segment| segment.base_offset <= offset);
        after.checked_sub(1).map(|at| segments[at].clone())
    }

    /// Adds a new active segment.
    pub(crate) fn push_segment(&self, segment: Arc<Segment>) {
        self.segments
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(segment);
    }

    /// Removes the oldest sealed segments that `expired` picks (given the sealed segments,
    /// oldest first, and the active one, it returns how many to drop) from the list, moves
    /// the start offset, and returns them for their files to be removed.
    pub(crate) fn drop_oldest_segments(
        &self,
        expired: impl FnOnce(&[Arc<Segment>], &Segment) -> usize,
    ) -> Vec<Arc<Segment>> {
        let mut segments = self
            .segments
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let Some((active, sealed)) = segments.split_last() else {
            return Vec::new();
        };
        let count = expired(sealed, active).min(sealed.len());
        let removed: Vec<Arc<Segment>> = segments.drain(..count).collect();
        if let Some(first) = segments.first() {
            self.start.store(first.base_offset, Ordering::Release);
        }
        removed
    }

    /// A snapshot of the partition's state.
    pub(crate) fn status(&self) -> PartitionStatus {
        let segments = self.segments();
        let pending = lock(&self.pending);
        PartitionStatus {
            start: self.start(),
            end: self.end(),
            segments: segments.len(),
            bytes: segments
                .iter()
                .map(|segment| segment.acknowledged_len())
                .sum(),
            pending_records: pending.records(),
            pending_bytes: pending.bytes(),
            peak_pending_bytes: pending.peak_bytes,
            batches_written: self.batches_written.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
        }
    }

    /// Remembers the writer thread, to join it at shutdown.
    pub(crate) fn set_writer(&self, handle: JoinHandle<()>) {
        *lock(&self.writer) = Some(handle);
    }

    /// Stops accepting records, lets the writer append and sync what it already accepted,
    /// and waits for it to finish.
    pub(crate) fn shut_down(&self) {
        lock(&self.pending).shutdown = true;
        self.writer_wakeup.notify_all();
        self.space.notify_waiters();
        if let Some(writer) = lock(&self.writer).take()
            && writer.join().is_err()
        {
            tracing::error!(directory = %self.directory.display(), "the partition writer panicked");
        }
    }
}

/// Opens every segment of a partition directory, or creates the first one.
fn open_segments(directory: &Path) -> Result<Vec<Arc<Segment>>> {
    let entries = files::list_directory(directory)?;
    let mut bases: Vec<u64> = entries
        .iter()
        .filter_map(|path| segment::base_offset_of(path))
        .collect();
    bases.sort_unstable();
    for path in &entries {
        // An index whose segment is gone was left by retention interrupted by a crash.
        let orphan = path
            .extension()
            .is_some_and(|extension| extension == INDEX_EXTENSION)
            && !path.with_extension(LOG_EXTENSION).exists();
        if orphan {
            files::remove_file(path)?;
        }
    }
    if bases.is_empty() {
        return Ok(vec![Arc::new(Segment::create(directory, 0)?)]);
    }
    let mut segments = Vec::with_capacity(bases.len());
    for (at, base) in bases.iter().enumerate() {
        let role = match bases.get(at + 1) {
            Some(next_base) => SegmentRole::Sealed {
                next_base: *next_base,
            },
            None => SegmentRole::Active,
        };
        segments.push(Arc::new(recovery::open_segment(directory, *base, role)?));
    }
    Ok(segments)
}
