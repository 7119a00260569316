//! The pending buffer of a partition: records accepted by `send` and not yet taken by the
//! writer, already encoded as the body of the next batch, and the [`Completion`] their
//! receipts wait on.
//!
//! Records are encoded once, straight into the buffer that becomes the batch on disk; the
//! writer fills in the header and checksum in place and writes it with one call. The buffer
//! is bounded: a record that does not fit waits for the writer to take the buffer
//! (backpressure), except that an empty buffer always takes one record, however large.

use std::sync::Arc;

use runnel_backend::Record;
use tokio::sync::SetOnce;

use crate::batch::{self, HEADER_LEN};
use crate::error::SharedError;

/// Completes when the batch is acknowledged, with its base offset; every receipt of a record
/// in the batch waits on it.
#[derive(Debug, Default)]
pub(crate) struct Completion {
    result: SetOnce<Result<u64, SharedError>>,
}

impl Completion {
    /// Waits for the batch's base offset.
    pub(crate) async fn wait(&self) -> Result<u64, SharedError> {
        self.result.wait().await.clone()
    }

    /// Reports the batch's outcome to everyone waiting.
    pub(crate) fn complete(&self, result: Result<u64, SharedError>) {
        // Only the writer completes a batch, once.
        let _ = self.result.set(result);
    }
}

/// Where an accepted record will be: the batch's completion and its index in the batch.
#[derive(Debug)]
pub(crate) struct Accepted {
    pub(crate) completion: Arc<Completion>,
    pub(crate) index: u32,
    /// Whether the writer was idle and must be woken.
    pub(crate) wake_writer: bool,
}

/// Why a record was refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The partition's writer stopped after this failure.
    Failed(SharedError),
    /// The log is shutting down.
    Closed,
}

/// A batch the writer took: the header space and the encoded records.
#[derive(Debug)]
pub(crate) struct TakenBatch {
    /// [`HEADER_LEN`] reserved bytes, then the records.
    pub(crate) buffer: Vec<u8>,
    pub(crate) records: u32,
    pub(crate) max_timestamp: i64,
    pub(crate) completion: Arc<Completion>,
}

/// Records waiting for the writer, and the writer's state as producers need to see it.
#[derive(Debug)]
pub(crate) struct Pending {
    buffer: Vec<u8>,
    records: u32,
    max_timestamp: i64,
    completion: Arc<Completion>,
    /// The batch the writer took last; `flush` waits on it when nothing is pending.
    in_flight: Option<Arc<Completion>>,
    /// The writer is waiting for records and must be woken by the next one.
    pub(crate) writer_idle: bool,
    /// The writer is lingering over a small batch and must be woken once it is large.
    pub(crate) writer_lingering: bool,
    /// The log is shutting down: no new records.
    pub(crate) shutdown: bool,
    /// The failure that stopped the partition's writer, if one did.
    pub(crate) failure: Option<SharedError>,
    /// The most bytes ever pending, for [`PartitionStatus`](crate::PartitionStatus).
    pub(crate) peak_bytes: usize,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            buffer: vec![0; HEADER_LEN],
            records: 0,
            max_timestamp: i64::MIN,
            completion: Arc::default(),
            in_flight: None,
            writer_idle: false,
            writer_lingering: false,
            shutdown: false,
            failure: None,
            peak_bytes: 0,
        }
    }
}

impl Pending {
    /// Accepts a record of `size` encoded bytes if it fits under `bound`; `Ok(None)` means
    /// wait for space.
    pub(crate) fn try_push(
        &mut self,
        record: &Record,
        size: usize,
        bound: usize,
    ) -> Result<Option<Accepted>, Refusal> {
        if let Some(failure) = &self.failure {
            return Err(Refusal::Failed(failure.clone()));
        }
        if self.shutdown {
            return Err(Refusal::Closed);
        }
        if self.records > 0 && (self.bytes() + size > bound || self.records == u32::MAX) {
            return Ok(None);
        }
        batch::encode_record(&mut self.buffer, record);
        self.records += 1;
        self.max_timestamp = self.max_timestamp.max(record.timestamp);
        self.peak_bytes = self.peak_bytes.max(self.bytes());
        let grown = self.writer_lingering && self.bytes() >= crate::LogConfig::LINGER_BYTES;
        if grown {
            self.writer_lingering = false;
        }
        let wake_writer = std::mem::replace(&mut self.writer_idle, false) || grown;
        Ok(Some(Accepted {
            completion: self.completion.clone(),
            index: self.records - 1,
            wake_writer,
        }))
    }

    /// Bytes of encoded records waiting.
    pub(crate) fn bytes(&self) -> usize {
        self.buffer.len() - HEADER_LEN
    }

    /// How many records are waiting.
    pub(crate) fn records(&self) -> u32 {
        self.records
    }

    /// Takes the waiting records as a batch, leaving `spare` (emptied) as the new buffer.
    pub(crate) fn take(&mut self, mut spare: Vec<u8>) -> Option<TakenBatch> {
        if self.records == 0 {
            return None;
        }
        spare.clear();
        spare.resize(HEADER_LEN, 0);
        let completion = std::mem::take(&mut self.completion);
        self.in_flight = Some(completion.clone());
        Some(TakenBatch {
            buffer: std::mem::replace(&mut self.buffer, spare),
            records: std::mem::take(&mut self.records),
            max_timestamp: std::mem::replace(&mut self.max_timestamp, i64::MIN),
            completion,
        })
    }

    /// What `flush` waits on: the pending batch, else the one being written.
    pub(crate) fn last_completion(&self) -> Option<Arc<Completion>> {
        if self.records > 0 {
            Some(self.completion.clone())
        } else {
            self.in_flight.clone()
        }
    }

    /// Fails every waiting record (the writer stopped) and refuses new ones.
    pub(crate) fn fail(&mut self, failure: SharedError) {
        if self.records > 0 {
            self.completion.complete(Err(failure.clone()));
            self.records = 0;
            self.buffer.truncate(HEADER_LEN);
        }
        self.failure = Some(failure);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_is_bounded_but_always_takes_one_record() {
        let mut pending = Pending::default();
        let record = Record::new(vec![0u8; 100]);
        let size = batch::encoded_len(&record);
        let accepted = pending.try_push(&record, size, 250).unwrap().unwrap();
        assert_eq!(accepted.index, 0);
        assert!(pending.try_push(&record, size, 250).unwrap().is_some());
        assert!(
            pending.try_push(&record, size, 250).unwrap().is_none(),
            "a third record exceeds the bound"
        );
        let taken = pending.take(Vec::new()).unwrap();
        assert_eq!(taken.records, 2);
        assert_eq!(taken.buffer.len(), HEADER_LEN + 2 * size);
        let huge = Record::new(vec![0u8; 1000]);
        assert!(
            pending
                .try_push(&huge, batch::encoded_len(&huge), 250)
                .unwrap()
                .is_some()
        );
        assert_eq!(pending.peak_bytes, batch::encoded_len(&huge));
    }

    #[test]
    fn a_failed_partition_refuses_records() {
        let mut pending = Pending::default();
        pending.fail(SharedError(Arc::new(crate::Error::Closed)));
        assert!(matches!(
            pending.try_push(&Record::new("x"), 21, 100),
            Err(Refusal::Failed(_))
        ));
    }
}
