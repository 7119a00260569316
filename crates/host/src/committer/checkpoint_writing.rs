//! Writing checkpoints: a keyed state's changelog records ([`ChangelogWriter`]), and the
//! checkpoint records that name them, written once the changelog is durable. At least once
//! this runs as an [`InFlight`] checkpoint while the committer goes on taking events.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{CommitOffset, Producer, Receipt, Record};

use super::CommitError;
use runnel_streamlet::checkpoint::{
    self, CHANGELOG_ENTRIES_HEADER, CHANGELOG_WRITER_HEADER, ChangelogBatch, ChangelogRange,
    InletOffset,
};

/// The most bytes of entries in one changelog record holding many: well under any
/// backplane's record limit (Kafka's default is 1 MB), large enough that the per-record
/// cost vanishes.
const CHANGELOG_PART_BYTES: usize = 256 * 1024;

/// Where a keyed state's changelog goes, and which of its records make up each partition's
/// state as of the last checkpoint.
#[derive(Debug)]
pub(crate) struct ChangelogWriter {
    backend: Arc<dyn runnel_backend::Backend>,
    topic: Arc<str>,
    /// Whether the topic is compacted (a record per entry) or not (records of many).
    compacted: bool,
    /// Partition -> its ranges (restored with the partition).
    ranges: BTreeMap<u32, Vec<ChangelogRange>>,
    /// Partitions whose records below an offset no snapshot since needs, to delete once the
    /// checkpoint that superseded them is durable.
    superseded: Vec<(u32, u64)>,
}

impl ChangelogWriter {
    /// Writes to `topic`, compacted or not, with no partition's ranges known yet.
    pub(crate) fn new(
        backend: Arc<dyn runnel_backend::Backend>,
        topic: Arc<str>,
        compacted: bool,
    ) -> Self {
        ChangelogWriter {
            compacted,
            backend,
            topic,
            ranges: BTreeMap::new(),
            superseded: Vec::new(),
        }
    }

    /// Takes `ranges` as a restored partition's.
    pub(crate) fn restored(&mut self, partition: u32, ranges: Vec<ChangelogRange>) {
        self.ranges.insert(partition, ranges);
    }

    /// Takes `ranges`, which a checkpoint names, as the partition's. When they start later
    /// than the partition's did (a snapshot), the records before the previous start are no
    /// longer needed by any checkpoint: one generation is kept, so that a restore from the
    /// checkpoint before the snapshot still finds its records (a member that took the
    /// partition over from a process that wrote one last checkpoint after losing it).
    pub(super) fn adopt(&mut self, partition: u32, ranges: Vec<ChangelogRange>) {
        let start = |ranges: &[ChangelogRange]| ranges.first().map(|range| range.from);
        let previous = self.ranges.insert(partition, ranges);
        // A compacted changelog drops superseded records by key: nothing to delete.
        if !self.compacted
            && let Some(previous) = previous.as_deref().and_then(start)
            && let Some(now) = self.ranges.get(&partition).and_then(|ranges| start(ranges))
            && now > previous
        {
            self.superseded.push((partition, previous));
        }
    }

    /// Deletes the records superseded snapshots left behind, where the backplane deletes
    /// records (the embedded log, by whole segments; Kafka, with `DeleteRecords`; a
    /// compacted changelog drops them by key instead). Failing to is not an error: the
    /// records are only kept longer.
    pub(super) async fn delete_superseded(&mut self) {
        for (partition, below) in std::mem::take(&mut self.superseded) {
            match self
                .backend
                .delete_records_before(&self.topic, partition, below)
                .await
            {
                Ok(_) | Err(runnel_backend::Error::Unsupported { .. }) => {}
                Err(error) => tracing::warn!(
                    topic = %self.topic,
                    partition,
                    below,
                    error = %error,
                    "deleting superseded changelog records failed; they are kept"
                ),
            }
        }
    }

    /// Sends one checkpoint's changes of `partition`. Exactly once, the partition's ranges
    /// are known at once (the transaction commits the records with the checkpoint record);
    /// at least once, when the records are durable ([`ChangelogSent::ranges`]), since the
    /// checkpoint record naming them must not be durable before them.
    pub(super) async fn send(
        &mut self,
        producer: &dyn Producer,
        partition: u32,
        changes: &ChangelogBatch,
        exactly_once: bool,
    ) -> Result<ChangelogSent, CommitError> {
        let failed = |source| CommitError::Checkpoint {
            topic: self.topic.clone(),
            source,
        };
        let mut ranges = self.ranges.get(&partition).cloned().unwrap_or_default();
        if exactly_once && (changes.snapshot || ranges.is_empty()) {
            // Read committed from here on: this partition has no other writer (a zombie's
            // transaction is fenced, so aborted), and a snapshot needs nothing before it.
            let from = if changes.snapshot {
                self.backend
                    .offsets(&self.topic)
                    .await
                    .map_err(failed)?
                    .get(partition as usize)
                    .map_or(0, |offsets| offsets.end)
            } else {
                0
            };
            ranges = vec![ChangelogRange {
                from,
                to: None,
                writer: None,
            }];
        }
        let writer = Bytes::from(format!("{:x}", changes.writer));
        let records: Vec<Record> = if self.compacted {
            // One record per entry, keyed by the entry's key: the log keeps each key's last.
            changes
                .entries
                .each()
                .map(|(key, value)| {
                    match value {
                        Some(value) => Record::new(value),
                        None => Record::null(),
                    }
                    .with_key(key)
                    .with_header(CHANGELOG_WRITER_HEADER, writer.clone())
                })
                .collect()
        } else {
            // Nothing compacts the log: records of many entries cost the log and the
            // producer once per part rather than once per entry.
            changes
                .entries
                .parts(CHANGELOG_PART_BYTES)
                .into_iter()
                .map(|(part, count)| {
                    Record::new(part)
                        .with_header(CHANGELOG_WRITER_HEADER, writer.clone())
                        .with_header(CHANGELOG_ENTRIES_HEADER, count.to_string())
                })
                .collect()
        };
        let mut receipts = Vec::with_capacity(records.len());
        for record in records {
            let receipt = producer
                .send(&self.topic, partition, record)
                .await
                .map_err(failed)?;
            receipts.push(receipt);
        }
        if exactly_once {
            self.adopt(partition, ranges.clone());
            receipts.clear(); // the commit waits for them with every other record
        }
        Ok(ChangelogSent {
            topic: self.topic.clone(),
            ranges,
            receipts,
            snapshot: changes.snapshot && !exactly_once,
            writer: changes.writer,
        })
    }
}

/// One checkpoint's changelog records of one partition, sent.
pub(super) struct ChangelogSent {
    topic: Arc<str>,
    /// The partition's ranges before these records (exactly once: with them).
    ranges: Vec<ChangelogRange>,
    /// At least once: the receipts of the records, which the ranges wait for.
    receipts: Vec<Receipt>,
    /// At least once: whether the records are the whole state, replacing the ranges.
    snapshot: bool,
    writer: u64,
}

impl ChangelogSent {
    /// The partition's ranges with these records, once they are durable.
    async fn ranges(self) -> Result<Vec<ChangelogRange>, CommitError> {
        let mut ranges = self.ranges;
        let mut written: Option<(u64, u64)> = None;
        for receipt in self.receipts {
            let offset = receipt.await.map_err(|source| CommitError::Checkpoint {
                topic: self.topic.clone(),
                source,
            })?;
            written = Some(written.map_or((offset, offset), |(first, last)| {
                (first.min(offset), last.max(offset))
            }));
        }
        if self.snapshot {
            ranges.clear();
        }
        if let Some((first, last)) = written {
            match ranges.last_mut() {
                Some(range) if range.writer == Some(self.writer) => range.to = Some(last + 1),
                _ => ranges.push(ChangelogRange {
                    from: first,
                    to: Some(last + 1),
                    writer: Some(self.writer),
                }),
            }
        }
        Ok(ranges)
    }
}

/// At least once: a checkpoint being written while the committer goes on taking events.
/// It completes with what the committer does once it is durable.
pub(super) struct InFlight(
    pub(super) futures::future::BoxFuture<'static, Result<Written, CommitError>>,
);

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InFlight")
    }
}

/// A checkpoint made durable: the changelog ranges its records named, and the offsets it
/// reflects, per inlet, to write to the consumer groups.
pub(super) struct Written {
    pub(super) ranges: Vec<(u32, Vec<ChangelogRange>)>,
    pub(super) offsets: Vec<Vec<CommitOffset>>,
}

/// One partition's checkpoint record, to write once its changelog records are durable.
pub(super) struct PendingRecord {
    pub(super) partition: u32,
    pub(super) state: Bytes,
    pub(super) offsets: Vec<InletOffset>,
    pub(super) changelog: Option<ChangelogSent>,
}

/// Writes the checkpoint records of `pending` to their partitions of `topic`, each once its
/// changelog records are durable and its ranges known, and with `durable` waits until they
/// are durable too (at least once; exactly once the transaction's commit waits for them).
/// Returns the changelog ranges each record named.
pub(super) async fn write_records(
    producer: Arc<dyn Producer>,
    topic: Arc<str>,
    instance: Arc<str>,
    pending: Vec<PendingRecord>,
    durable: bool,
) -> Result<Vec<(u32, Vec<ChangelogRange>)>, CommitError> {
    let failed = |source| CommitError::checkpoint(topic.clone(), source);
    let mut named = Vec::new();
    let mut receipts = Vec::with_capacity(pending.len());
    for record in pending {
        let ranges = match record.changelog {
            Some(sent) => Some(sent.ranges().await?),
            None => None,
        };
        let checkpoint =
            checkpoint::record(&instance, record.state, &record.offsets, ranges.as_deref());
        receipts.push(
            producer
                .send(&topic, record.partition, checkpoint)
                .await
                .map_err(failed)?,
        );
        if let Some(ranges) = ranges {
            named.push((record.partition, ranges));
        }
    }
    if durable {
        for receipt in receipts {
            receipt.await.map_err(failed)?;
        }
    }
    Ok(named)
}
