//! [`LogConfig`]: the settings of a whole log, and [`FsyncPolicy`]: when an append counts as
//! acknowledged.

use std::time::Duration;

/// When the log calls `fsync`, and so what an acknowledged record survives.
///
/// ```
/// use std::time::Duration;
/// use runnel_embedded_log::{FsyncPolicy, LogConfig};
/// let config = LogConfig::default().with_fsync(FsyncPolicy::Interval(Duration::from_millis(50)));
/// assert_eq!(config.fsync, FsyncPolicy::Interval(Duration::from_millis(50)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// A receipt completes only after the batch holding its record is written and synced:
    /// an acknowledged record survives a process crash, an OS crash and a power loss (as far
    /// as the disk honours `fsync`). Appends arriving while a sync runs form the next batch
    /// (group commit), so the cost is one sync per batch, not per record.
    #[default]
    Always,
    /// A receipt completes once its batch is written to the operating system; the writer
    /// syncs at most this long after a write. An acknowledged record survives a process
    /// crash; an OS crash or power loss may lose the records of the last interval.
    Interval(Duration),
    /// A receipt completes once its batch is written to the operating system, which decides
    /// when to write it to disk. An acknowledged record survives a process crash, not an OS
    /// crash or power loss. The writer still syncs a segment when it is sealed and every
    /// partition at a clean shutdown.
    Never,
}

/// Settings of an [`EmbeddedBackend`](crate::EmbeddedBackend): defaults for every topic
/// (each topic may override `segment.bytes`, `retention.bytes` and `retention.ms`) and
/// the writer's limits.
///
/// ```
/// use std::time::Duration;
/// use runnel_embedded_log::LogConfig;
/// let config = LogConfig::default()
///     .with_segment_bytes(64 << 20)
///     .with_retention(Some(Duration::from_secs(3600)));
/// assert_eq!(config.segment_bytes, 64 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogConfig {
    /// When appends are synced to disk; see [`FsyncPolicy`].
    pub fsync: FsyncPolicy,
    /// A segment is sealed and a new one started when the next batch would take the active
    /// segment past this size (Kafka's `segment.bytes`). Default 128 MiB; at most
    /// [`MAX_SEGMENT_BYTES`](Self::MAX_SEGMENT_BYTES).
    pub segment_bytes: u64,
    /// Sealed segments are deleted, oldest first, while the partition would still hold at
    /// least this many bytes without them (Kafka's `retention.bytes`). `None`, the default,
    /// keeps everything.
    pub retention_bytes: Option<u64>,
    /// Sealed segments last written longer ago than this are deleted (Kafka's
    /// `retention.ms`). Default 7 days; `None` keeps everything.
    pub retention: Option<Duration>,
    /// How often each partition checks retention, besides whenever it seals a segment.
    /// Default 5 minutes.
    pub retention_check_interval: Duration,
    /// The most bytes of encoded records a partition buffers before the writer takes them;
    /// a send that would exceed it waits (backpressure). Default 4 MiB.
    pub max_pending_bytes: usize,
    /// The largest record (key, value and headers, encoded) a send accepts. Default 16 MiB.
    pub max_record_bytes: usize,
    /// How long the writer waits for more records before writing a batch smaller than
    /// [`LINGER_BYTES`](Self::LINGER_BYTES), as Kafka's `linger.ms` does for producers.
    /// Fewer, larger batches mean fewer writes and syncs (under a steady stream, a third
    /// less CPU per record in the pipeline benchmark) at the cost of up to this much
    /// latency per hop. Default 1 ms; zero writes whatever is pending at once.
    pub linger: Duration,
}

impl LogConfig {
    /// The largest `segment.bytes`: byte positions in a segment are stored in 32 bits.
    pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;

    /// A pending batch at least this large is written without lingering.
    pub const LINGER_BYTES: usize = 64 << 10;

    /// The largest [`max_pending_bytes`](Self::max_pending_bytes) and
    /// [`max_record_bytes`](Self::max_record_bytes): a batch must fit in a segment.
    pub const MAX_BUFFER_BYTES: usize = 1 << 30;

    /// Sets when appends are synced to disk.
    pub fn with_fsync(mut self, fsync: FsyncPolicy) -> Self {
        self.fsync = fsync;
        self
    }

    /// Sets the default segment size, clamped to `1..=MAX_SEGMENT_BYTES`.
    pub fn with_segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes.clamp(1, Self::MAX_SEGMENT_BYTES);
        self
    }

    /// Sets the default size retention; `None` keeps everything.
    pub fn with_retention_bytes(mut self, bytes: Option<u64>) -> Self {
        self.retention_bytes = bytes;
        self
    }

    /// Sets the default age retention; `None` keeps everything.
    pub fn with_retention(mut self, age: Option<Duration>) -> Self {
        self.retention = age;
        self
    }

    /// Sets how often retention is checked.
    pub fn with_retention_check_interval(mut self, interval: Duration) -> Self {
        self.retention_check_interval = interval;
        self
    }

    /// Sets the per-partition pending buffer bound, clamped to `1..=MAX_BUFFER_BYTES`.
    pub fn with_max_pending_bytes(mut self, bytes: usize) -> Self {
        self.max_pending_bytes = bytes.clamp(1, Self::MAX_BUFFER_BYTES);
        self
    }

    /// Sets how long the writer waits to fill small batches.
    pub fn with_linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Sets the largest accepted record, clamped to `1..=MAX_BUFFER_BYTES`.
    pub fn with_max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes.clamp(1, Self::MAX_BUFFER_BYTES);
        self
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            fsync: FsyncPolicy::Always,
            segment_bytes: 128 << 20,
            retention_bytes: None,
            retention: Some(Duration::from_secs(7 * 24 * 3600)),
            retention_check_interval: Duration::from_secs(300),
            max_pending_bytes: 4 << 20,
            max_record_bytes: 16 << 20,
            linger: Duration::from_millis(1),
        }
    }
}
