//! The writer of a partition: a dedicated thread that takes the pending buffer as one batch,
//! appends it to the active segment, syncs it per the [`FsyncPolicy`], publishes it to
//! readers and completes its receipts (group commit). It also seals segments and runs
//! retention.
//!
//! While the writer writes and syncs one batch, producers fill the pending buffer with the
//! next, so the batch size adapts to the disk: the slower the sync, the larger the batch. A
//! batch smaller than [`LogConfig::LINGER_BYTES`](crate::LogConfig::LINGER_BYTES) also waits
//! up to the configured linger for more records, trading a little latency for fewer writes
//! and syncs.
//! Any failed write or sync stops the partition (every waiting and later append fails)
//! until the log is reopened and recovery has run: after a failed `fsync` the state of the
//! file is unknown, so guessing would risk acknowledging lost data.

use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::batch;
use crate::config::FsyncPolicy;
use crate::error::{Error, Result, SharedError};
use crate::files;
use crate::partition::{Partition, lock};
use crate::pending::TakenBatch;
use crate::retention;
use crate::segment::Segment;

/// Starts the writer thread of a partition that was just opened.
pub(crate) fn start(partition: &Arc<Partition>) -> Result<()> {
    let active = partition
        .segments()
        .pop()
        .expect("an open partition has an active segment");
    let index_file = files::open_read_write(&active.index_path, false)?;
    let writer = Writer {
        written_len: active.acknowledged_len(),
        next_offset: active.acknowledged_end(),
        partition: partition.clone(),
        active,
        index_file,
        unsynced_since: None,
        spare: Vec::new(),
        next_retention_check: Instant::now(),
    };
    let name = format!("runnel-log-{}-{}", partition.topic, partition.number);
    let handle = std::thread::Builder::new()
        .name(name)
        .spawn(move || writer.run())
        .map_err(|source| Error::OpenFile {
            path: partition.directory.clone(),
            source,
        })?;
    partition.set_writer(handle);
    Ok(())
}

struct Writer {
    partition: Arc<Partition>,
    active: Arc<Segment>,
    index_file: File,
    /// Bytes written to the active segment.
    written_len: u64,
    /// The offset the next record gets.
    next_offset: u64,
    /// When the first write not yet synced happened (policy `Interval` and `Never`).
    unsynced_since: Option<Instant>,
    /// The buffer of the last batch, reused for the next to save allocations.
    spare: Vec<u8>,
    next_retention_check: Instant,
}

impl Writer {
    fn run(mut self) {
        loop {
            let batches = match self.next_batch() {
                Ok(Some(batches)) => batches,
                Ok(None) => break,
                Err(error) => return self.stop(error),
            };
            let completions: Vec<_> = batches
                .iter()
                .map(|batch| batch.completion.clone())
                .collect();
            match self.append(batches) {
                Ok(base_offsets) => {
                    for (completion, base_offset) in completions.iter().zip(base_offsets) {
                        completion.complete(Ok(base_offset));
                    }
                }
                Err(error) => {
                    // The partition is marked failed first, so whoever sees this batch fail
                    // also finds later appends refused.
                    let error = SharedError(Arc::new(error));
                    self.stop_shared(error.clone());
                    for completion in completions {
                        completion.complete(Err(error.clone()));
                    }
                    return;
                }
            }
        }
        if self.unsynced_since.is_some()
            && let Err(error) = self.sync()
        {
            tracing::error!(error = %error, "syncing a partition at shutdown failed");
        }
    }

    /// Waits for records, running timed work (interval syncs, retention) meanwhile; `None`
    /// at shutdown once everything accepted was taken.
    fn next_batch(&mut self) -> Result<Option<Vec<TakenBatch>>> {
        let partition = self.partition.clone();
        let mut pending = lock(&partition.pending);
        // A small batch waits up to the linger for company, once.
        let mut linger_until: Option<Instant> = None;
        loop {
            // Timers run between batches too, so a steady stream of appends neither delays
            // an interval sync nor retention.
            let now = Instant::now();
            let deadline = self.next_deadline();
            if deadline <= now {
                drop(pending);
                self.run_timers(now)?;
                pending = lock(&partition.pending);
                continue;
            }
            let small = pending.bytes() < crate::LogConfig::LINGER_BYTES;
            if pending.records() > 0 && small && !pending.shutdown {
                let until = *linger_until.get_or_insert(now + partition.limits.linger);
                if until > now {
                    pending.writer_lingering = true;
                    pending = partition
                        .writer_wakeup
                        .wait_timeout(pending, until.min(deadline) - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                    pending.writer_lingering = false;
                    continue;
                }
            }
            if pending.records() > 0 {
                let batch = pending.take(std::mem::take(&mut self.spare));
                drop(pending);
                partition.space.notify_waiters();
                return Ok(batch);
            }
            if pending.shutdown {
                return Ok(None);
            }
            pending.writer_idle = true;
            pending = partition
                .writer_wakeup
                .wait_timeout(pending, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
            pending.writer_idle = false;
        }
    }

    fn next_deadline(&self) -> Instant {
        let sync = match (self.partition.limits.fsync, self.unsynced_since) {
            (FsyncPolicy::Interval(interval), Some(since)) => since + interval,
            _ => self.next_retention_check,
        };
        sync.min(self.next_retention_check)
    }

    fn run_timers(&mut self, now: Instant) -> Result<()> {
        if let (FsyncPolicy::Interval(interval), Some(since)) =
            (self.partition.limits.fsync, self.unsynced_since)
            && now >= since + interval
        {
            self.sync()?;
            self.unsynced_since = None;
        }
        if now >= self.next_retention_check {
            self.enforce_retention();
        }
        Ok(())
    }

    fn enforce_retention(&mut self) {
        self.next_retention_check = Instant::now()
            + self
                .partition
                .limits
                .retention_check_interval
                .max(Duration::from_millis(1));
        if let Err(error) = retention::enforce(&self.partition, SystemTime::now()) {
            tracing::warn!(error = %error, "enforcing retention failed; trying again later");
        }
    }

    /// Appends batches back to back and syncs once per the policy, returning their base
    /// offsets once they are acknowledged.
    fn append(&mut self, batches: Vec<TakenBatch>) -> Result<Vec<u64>> {
        let mut base_offsets = Vec::with_capacity(batches.len());
        for mut batch in batches {
            let length = batch.buffer.len() as u64;
            if self.written_len > 0
                && self.written_len + length > self.partition.limits.settings.segment_bytes
            {
                self.roll()?;
            }
            let base_offset = self.next_offset;
            match batch.transaction {
                Some(fields) => batch::seal_transactional(
                    &mut batch.buffer,
                    fields,
                    base_offset,
                    batch.records,
                    batch.max_timestamp,
                ),
                None => batch::seal(
                    &mut batch.buffer,
                    base_offset,
                    batch.records,
                    batch.max_timestamp,
                ),
            }
            let position = self.written_len;
            if let Err(error) = self.write(&batch.buffer, base_offset, position) {
                self.cut_unacknowledged();
                return Err(error);
            }
            self.written_len += length;
            self.next_offset += u64::from(batch.records);
            self.partition.count_batch();
            base_offsets.push(base_offset);
            if batch.buffer.capacity() <= 2 * self.partition.limits.max_pending_bytes {
                self.spare = batch.buffer;
            }
        }
        if let Err(error) = self.sync_per_policy() {
            self.cut_unacknowledged();
            return Err(error);
        }
        self.acknowledge();
        Ok(base_offsets)
    }

    /// Best effort after a failed write or sync: cuts what was written but not acknowledged
    /// off the active segment; recovery does it otherwise.
    fn cut_unacknowledged(&self) {
        let acknowledged = self.active.acknowledged_len();
        let _ = self.active.truncate(acknowledged);
        self.active.forget_index_from(acknowledged);
    }

    /// Makes everything written to the active segment visible to readers.
    fn acknowledge(&self) {
        if self.active.acknowledged_end() != self.next_offset {
            self.active.acknowledge(self.written_len, self.next_offset);
            self.partition.publish_end(self.next_offset);
        }
    }

    fn write(&mut self, bytes: &[u8], base_offset: u64, position: u64) -> Result<()> {
        self.active.write(position, bytes)?;
        self.active
            .index_batch(&self.index_file, base_offset, position)
    }

    fn sync_per_policy(&mut self) -> Result<()> {
        match self.partition.limits.fsync {
            FsyncPolicy::Always => self.sync(),
            FsyncPolicy::Interval(_) | FsyncPolicy::Never => {
                self.unsynced_since.get_or_insert_with(Instant::now);
                Ok(())
            }
        }
    }

    /// Seals the active segment (synced whatever the policy, so sealed segments are whole)
    /// and starts a new one at the next offset.
    fn roll(&mut self) -> Result<()> {
        self.sync()?;
        self.unsynced_since = None;
        // Batches of this round written before the roll are synced now: publish them, as
        // readers move to the next segment only past the acknowledged end of this one.
        self.acknowledge();
        let segment = Arc::new(Segment::create(
            &self.partition.directory,
            self.next_offset,
        )?);
        self.index_file = files::open_read_write(&segment.index_path, false)?;
        self.partition.push_segment(segment.clone());
        self.active = segment;
        self.written_len = 0;
        self.enforce_retention();
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.active.sync()?;
        self.partition.count_sync();
        Ok(())
    }

    fn stop(self, error: Error) {
        self.stop_shared(SharedError(Arc::new(error)));
    }

    /// Fails everything waiting and refuses new records.
    fn stop_shared(self, error: SharedError) {
        tracing::error!(
            directory = %self.partition.directory.display(),
            error = %error,
            "the partition stopped accepting records after a failure; reopen the log to recover"
        );
        lock(&self.partition.pending).fail(error);
        self.partition.space.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use runnel_backend::Record;
    use tokio::sync::watch;

    use super::*;
    use crate::LogConfig;
    use crate::partition::PartitionLimits;
    use crate::topic_settings::TopicSettings;

    fn open_partition(directory: &std::path::Path) -> Arc<Partition> {
        let config = LogConfig::default();
        let settings = TopicSettings {
            segment_bytes: config.segment_bytes,
            retention_bytes: None,
            retention: None,
        };
        let partition = Partition::open(
            directory.to_owned(),
            Arc::from("t"),
            0,
            PartitionLimits::new(settings, &config),
            Arc::new(watch::Sender::new(0)),
        )
        .unwrap();
        Arc::new(partition)
    }

    #[test]
    fn a_failed_sync_fails_the_batch_stops_the_partition_and_loses_nothing_acknowledged() {
        let directory = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let partition = open_partition(directory.path());
        start(&partition).unwrap();
        runtime.block_on(async {
            let first = partition.append(&Record::new("kept")).await.unwrap();
            assert_eq!(first.completion.wait().await.unwrap(), 0);

            partition.segments()[0]
                .fail_syncs
                .store(true, Ordering::SeqCst);
            let second = partition.append(&Record::new("lost")).await.unwrap();
            let error = second.completion.wait().await.unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "syncing '{}' to disk failed",
                    partition.segments()[0].log_path.display()
                )
            );
            assert_eq!(partition.end(), 1, "the failed batch never became visible");

            let refused = partition.append(&Record::new("refused")).await.unwrap_err();
            assert!(
                matches!(refused, Error::PartitionFailed { .. }),
                "{refused}"
            );
        });
        partition.shut_down();
        drop(partition);

        // The unacknowledged batch was cut off; reopening finds only the acknowledged one.
        let reopened = open_partition(directory.path());
        assert_eq!((reopened.start(), reopened.end()), (0, 1));
        assert_eq!(
            reopened.segments()[0].acknowledged_len(),
            std::fs::metadata(&reopened.segments()[0].log_path)
                .unwrap()
                .len()
        );
    }
}
