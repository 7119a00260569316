//! [`PartitionReader`]: reads one partition for a consumer, from a position up to the
//! acknowledged end, in large sequential reads, checking every batch's checksum and handing
//! out records whose keys and values are slices of the read buffer.

use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{ConsumedRecord, Isolation};

use crate::batch::{self, BatchProblem, RecordCursor};
use crate::error::{Error, Result};
use crate::partition::{Partition, lock};
use crate::recovery;
use crate::segment::Segment;

/// How much one read takes at least (more when a batch is larger).
const READ_CHUNK: usize = 1 << 20;

/// A consumer's read position in one partition, with what it has read ahead.
#[derive(Debug)]
pub(crate) struct PartitionReader {
    partition: Arc<Partition>,
    /// Whether records of aborted and open transactions are skipped.
    isolation: Isolation,
    /// The offset of the next record to return.
    position: u64,
    /// The offset after the last record returned (the start position before any).
    returned_through: u64,
    /// Where reading continues; `None` until the position is located.
    cursor: Option<SegmentCursor>,
}

#[derive(Debug)]
struct SegmentCursor {
    segment: Arc<Segment>,
    /// Bytes read from the segment but not yet split into batches.
    chunk: Bytes,
    /// The file position of `chunk[0]`.
    chunk_position: u64,
    /// The offset the next batch must start at.
    expected_offset: u64,
    /// The batch being returned record by record.
    batch: Option<RecordCursor>,
    /// The file position of that batch, for errors.
    batch_position: u64,
}

impl PartitionReader {
    /// A reader that returns records from `position` on, as `isolation` allows.
    pub(crate) fn new(partition: Arc<Partition>, position: u64, isolation: Isolation) -> Self {
        PartitionReader {
            partition,
            isolation,
            position,
            returned_through: position,
            cursor: None,
        }
    }

    /// The offset of the next record [`read`](Self::read) returns.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// The offset to commit once every record before `next` is handled: the position, when
    /// `next` follows the last record returned (what lies between them was never handed out:
    /// transaction markers, aborted records, records retention deleted), else `next`.
    pub(crate) fn committable(&self, next: u64) -> u64 {
        if next == self.returned_through {
            self.position.max(next)
        } else {
            next
        }
    }

    /// Appends up to `max_records` acknowledged records to `out`; none when the reader is
    /// at the end (for a read-committed reader, the last stable offset). Transaction markers
    /// are never returned, nor, to a read-committed reader, records of aborted transactions;
    /// the position moves past them.
    pub(crate) fn read(&mut self, max_records: usize, out: &mut Vec<ConsumedRecord>) -> Result<()> {
        self.skip_deleted();
        let committed_only = self.isolation == Isolation::ReadCommitted;
        let end = if committed_only {
            self.partition.last_stable_offset()
        } else {
            self.partition.end()
        };
        let wanted = out.len() + max_records;
        while out.len() < wanted && self.position < end {
            if self.cursor.is_none() {
                // Retention may have run since the check above.
                self.skip_deleted();
                self.cursor = self.locate();
            }
            let Some(cursor) = self.cursor.as_mut() else {
                return Ok(());
            };
            if let Some(records) = cursor.batch.as_mut() {
                match records.next() {
                    Ok(Some((offset, record))) => {
                        if offset >= self.position {
                            out.push(ConsumedRecord {
                                topic: self.partition.topic.clone(),
                                partition: self.partition.number,
                                offset,
                                record,
                            });
                            self.position = offset + 1;
                            self.returned_through = self.position;
                        }
                    }
                    Ok(None) => cursor.batch = None,
                    Err(problem) => {
                        return Err(Error::CorruptBatch {
                            path: cursor.segment.log_path.clone(),
                            position: cursor.batch_position,
                            problem,
                        });
                    }
                }
                continue;
            }
            match cursor.next_batch(&self.partition, self.position, committed_only)? {
                NextBatch::Records => {}
                NextBatch::Skipped { next_offset } => self.position = next_offset,
                NextBatch::None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Moves the position up to the log start if retention deleted the records at it.
    fn skip_deleted(&mut self) {
        let start = self.partition.start();
        if self.position < start {
            tracing::warn!(
                topic = %self.partition.topic,
                partition = self.partition.number,
                position = self.position,
                start,
                "retention deleted records before they were read; skipping to the log start"
            );
            self.position = start;
            self.cursor = None;
        }
    }

    /// Finds the segment and indexed batch to start reading `position` from.
    fn locate(&self) -> Option<SegmentCursor> {
        let segment = self.partition.segment_for(self.position)?;
        let entry = segment.index_lookup(self.position);
        Some(SegmentCursor {
            chunk: Bytes::new(),
            chunk_position: u64::from(entry.position),
            expected_offset: segment.base_offset + u64::from(entry.relative_offset),
            batch: None,
            batch_position: 0,
            segment,
        })
    }
}

/// What [`SegmentCursor::next_batch`] found.
#[derive(Debug)]
enum NextBatch {
    /// A batch of records to return, now in the cursor.
    Records,
    /// A batch not to return (a marker, or an aborted transaction's records to a
    /// read-committed reader); reading goes on at `next_offset`.
    Skipped { next_offset: u64 },
    /// No acknowledged batch follows yet.
    None,
}

impl SegmentCursor {
    /// Moves to the next batch that holds records at or after `position`, skipping
    /// markers and, when `committed_only`, batches of aborted transactions.
    fn next_batch(
        &mut self,
        partition: &Partition,
        position: u64,
        committed_only: bool,
    ) -> Result<NextBatch> {
        loop {
            let acknowledged = self.segment.acknowledged_len();
            if self.chunk_position >= acknowledged {
                let Some(next) = partition.segment_for(self.expected_offset) else {
                    return Ok(NextBatch::None);
                };
                if Arc::ptr_eq(&next, &self.segment) {
                    return Ok(NextBatch::None);
                }
                if next.base_offset != self.expected_offset {
                    return Err(Error::CorruptBatch {
                        path: self.segment.log_path.clone(),
                        position: acknowledged,
                        problem: format!(
                            "the segment ends at offset {} but the next one starts at offset {}",
                            self.expected_offset, next.base_offset
                        ),
                    });
                }
                self.segment = next;
                self.chunk = Bytes::new();
                self.chunk_position = 0;
                continue;
            }
            let mut checked = batch::check(&self.chunk);
            // Read again from this batch until it is whole: the first read may not even
            // have held its header, so it can take two reads to learn its length.
            while let Err(BatchProblem::Incomplete { claimed }) = checked {
                let available = (acknowledged - self.chunk_position) as usize;
                let wanted = READ_CHUNK.max(claimed.unwrap_or(0) as usize).min(available);
                if wanted <= self.chunk.len() {
                    break;
                }
                self.chunk = self.segment.read(self.chunk_position, wanted)?;
                checked = batch::check(&self.chunk);
                if self.chunk.len() < wanted {
                    break;
                }
            }
            let header = checked.map_err(|problem| {
                recovery::corrupt(&self.segment.log_path, self.chunk_position, &problem)
            })?;
            if header.base_offset != self.expected_offset {
                return Err(Error::CorruptBatch {
                    path: self.segment.log_path.clone(),
                    position: self.chunk_position,
                    problem: format!(
                        "the batch starts at offset {}, expected {}",
                        header.base_offset, self.expected_offset
                    ),
                });
            }
            let length = header.length as usize;
            let bytes = self.chunk.slice(..length);
            self.chunk = self.chunk.slice(length..);
            if self.chunk.is_empty() {
                // An empty slice would still keep the whole read buffer alive.
                self.chunk = Bytes::new();
            }
            self.batch_position = self.chunk_position;
            self.chunk_position += length as u64;
            self.expected_offset = header.next_offset();
            // Batches entirely before the position (after an index lookup) are skipped
            // without decoding, but only after their checksum passed.
            if header.next_offset() > position {
                let skipped = match header.transaction {
                    Some(_) if header.is_control() => true,
                    Some(fields) if committed_only => lock(&partition.transactions)
                        .is_aborted(fields.producer_id, header.base_offset),
                    _ => false,
                };
                if skipped {
                    return Ok(NextBatch::Skipped {
                        next_offset: header.next_offset(),
                    });
                }
                self.batch = Some(RecordCursor::new(bytes, &header));
                return Ok(NextBatch::Records);
            }
        }
    }
}
