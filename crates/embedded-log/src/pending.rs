//! The pending buffer of a partition: records accepted by `send` and not yet taken by the
//! writer, already encoded as the body of the next batch, and the [`Completion`] their
//! receipts wait on.
//!
//! Records are encoded once, straight into the buffer that becomes the batch on disk; the
//! writer fills in the header and checksum in place and writes it with one call. The buffer
//! is bounded: a record that does not fit waits for the writer to take the buffer
//! (backpressure), except that an empty buffer always takes one record, however large.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use runnel_backend::Record;

use crate::batch::{self, HEADER_LEN, TRANSACTIONAL_HEADER_LEN, TransactionFields};
use crate::error::SharedError;

/// Completes when the batch is acknowledged, with its base offset; every receipt of a record
/// in the batch waits on it, as its [`ReceiptSource`](runnel_backend::ReceiptSource), so a
/// receipt costs no allocation of its own.
#[derive(Debug, Default)]
pub(crate) struct Completion {
    result: OnceLock<Result<u64, SharedError>>,
    /// Tasks polling before the outcome; `complete` sets it first, then takes them, and a
    /// poller looks at the outcome again under this lock, so no wake-up is missed.
    waiters: Mutex<Vec<Waker>>,
    /// The topic and partition of the batch, for its receipts' errors; set by the first
    /// receipt made.
    origin: OnceLock<(Arc<str>, u32)>,
}

impl Completion {
    /// Waits for the batch's base offset.
    pub(crate) async fn wait(&self) -> Result<u64, SharedError> {
        std::future::poll_fn(|cx| self.poll_result(cx).map(Clone::clone)).await
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<&Result<u64, SharedError>> {
        if let Some(result) = self.result.get() {
            return Poll::Ready(result);
        }
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(result) = self.result.get() {
            return Poll::Ready(result);
        }
        if !waiters.iter().any(|waiter| waiter.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Reports the batch's outcome to everyone waiting.
    pub(crate) fn complete(&self, result: Result<u64, SharedError>) {
        // Only the writer completes a batch, once.
        let _ = self.result.set(result);
        let waiters =
            std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for waiter in waiters {
            waiter.wake();
        }
    }
}

impl runnel_backend::ReceiptSource for Completion {
    fn poll_receipt(&self, index: u32, cx: &mut Context<'_>) -> Poll<runnel_backend::Result<u64>> {
        self.poll_result(cx).map(|result| match result {
            Ok(base_offset) => Ok(base_offset + u64::from(index)),
            Err(error) => {
                let (topic, partition) = self.origin.get().cloned().unwrap_or_default();
                Err(runnel_backend::Error::Produce {
                    topic: topic.to_string(),
                    partition,
                    source: Box::new(error.clone()),
                })
            }
        })
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

impl Accepted {
    /// The receipt of the record: its offset once its batch is durable, or the batch's
    /// failure, named by `topic` and `partition`.
    pub(crate) fn into_receipt(self, topic: &Arc<str>, partition: u32) -> runnel_backend::Receipt {
        self.completion
            .origin
            .get_or_init(|| (topic.clone(), partition));
        runnel_backend::Receipt::shared(self.completion, self.index)
    }
}

/// Why a record was refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The partition's writer stopped after this failure.
    Failed(SharedError),
    /// The log is shutting down.
    Closed,
    /// A marker of a newer epoch of the same producer id was written: this producer is a
    /// zombie.
    Fenced,
}

/// A batch the writer took: the header space and the encoded records.
#[derive(Debug)]
pub(crate) struct TakenBatch {
    /// The header's reserved bytes (more for a transactional batch), then the records.
    pub(crate) buffer: Vec<u8>,
    pub(crate) records: u32,
    pub(crate) max_timestamp: i64,
    /// The transactional producer of the batch; `None` for plain records.
    pub(crate) transaction: Option<TransactionFields>,
    pub(crate) completion: Arc<Completion>,
}

/// Records waiting for the writer, and the writer's state as producers need to see it.
///
/// A batch holds the records of one producer kind only: plain records, or those of one
/// transactional producer, or one marker. When the kind changes, the records so far wait in
/// `queued` as a batch of their own, and the writer takes all of them at once (written
/// back to back and synced once).
#[derive(Debug)]
pub(crate) struct Pending {
    buffer: Vec<u8>,
    records: u32,
    max_timestamp: i64,
    completion: Arc<Completion>,
    /// The producer of the records in `buffer`.
    owner: Option<TransactionFields>,
    /// Batches of other producers (and markers) accepted before `buffer`, in order.
    queued: Vec<TakenBatch>,
    /// Records and encoded bytes in `queued`.
    queued_records: u32,
    queued_bytes: usize,
    /// The newest epoch of every producer id a marker was accepted for; records of older
    /// epochs are refused.
    epochs: HashMap<u64, u32>,
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
            owner: None,
            queued: Vec::new(),
            queued_records: 0,
            queued_bytes: 0,
            epochs: HashMap::new(),
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
    /// Accepts a record of `size` encoded bytes from `owner` (`None` for a plain producer)
    /// if it fits under `bound`; `Ok(None)` means wait for space.
    pub(crate) fn try_push(
        &mut self,
        record: &Record,
        size: usize,
        bound: usize,
        owner: Option<TransactionFields>,
    ) -> Result<Option<Accepted>, Refusal> {
        self.check_open()?;
        if let Some(fields) = owner
            && self
                .epochs
                .get(&fields.producer_id)
                .is_some_and(|newest| *newest > fields.epoch)
        {
            return Err(Refusal::Fenced);
        }
        let total = self.records();
        if total > 0 && (self.bytes() + size > bound || total == u32::MAX) {
            return Ok(None);
        }
        if self.records > 0 && self.owner != owner {
            self.queue_current();
        }
        if self.records == 0 && self.owner != owner {
            self.owner = owner;
            self.buffer.clear();
            self.buffer.resize(TransactionFields::header_len(owner), 0);
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

    /// Accepts a transaction marker: a batch of its own after everything accepted so far,
    /// taking one offset. From now on, records of older epochs of its producer are refused.
    /// Markers are small and never wait for space.
    pub(crate) fn push_marker(&mut self, fields: TransactionFields) -> Result<Accepted, Refusal> {
        self.check_open()?;
        let newest = self
            .epochs
            .entry(fields.producer_id)
            .or_insert(fields.epoch);
        *newest = (*newest).max(fields.epoch);
        if self.records > 0 {
            self.queue_current();
        }
        let completion = Arc::<Completion>::default();
        self.queued.push(TakenBatch {
            buffer: vec![0; TRANSACTIONAL_HEADER_LEN],
            records: 1,
            max_timestamp: i64::MIN,
            transaction: Some(fields),
            completion: completion.clone(),
        });
        self.queued_records += 1;
        Ok(Accepted {
            completion,
            index: 0,
            wake_writer: std::mem::replace(&mut self.writer_idle, false)
                || std::mem::replace(&mut self.writer_lingering, false),
        })
    }

    fn check_open(&self) -> Result<(), Refusal> {
        if let Some(failure) = &self.failure {
            return Err(Refusal::Failed(failure.clone()));
        }
        if self.shutdown {
            return Err(Refusal::Closed);
        }
        Ok(())
    }

    /// Moves the records in `buffer` to `queued` as a batch of their own.
    fn queue_current(&mut self) {
        let header_len = TransactionFields::header_len(self.owner);
        let buffer = std::mem::replace(&mut self.buffer, vec![0; header_len]);
        self.queued_bytes += buffer.len() - header_len;
        self.queued_records += self.records;
        self.queued.push(TakenBatch {
            buffer,
            records: std::mem::take(&mut self.records),
            max_timestamp: std::mem::replace(&mut self.max_timestamp, i64::MIN),
            transaction: self.owner,
            completion: std::mem::take(&mut self.completion),
        });
    }

    /// Bytes of encoded records waiting.
    pub(crate) fn bytes(&self) -> usize {
        self.queued_bytes + self.buffer.len() - TransactionFields::header_len(self.owner)
    }

    /// How many records (and markers) are waiting.
    pub(crate) fn records(&self) -> u32 {
        self.queued_records.saturating_add(self.records)
    }

    /// Takes the waiting records as batches in the order they were accepted, leaving
    /// `spare` (emptied) as the new buffer.
    pub(crate) fn take(&mut self, mut spare: Vec<u8>) -> Option<Vec<TakenBatch>> {
        if self.records() == 0 {
            return None;
        }
        let mut batches = std::mem::take(&mut self.queued);
        if self.records > 0 {
            spare.clear();
            spare.resize(TransactionFields::header_len(self.owner), 0);
            let completion = std::mem::take(&mut self.completion);
            batches.push(TakenBatch {
                buffer: std::mem::replace(&mut self.buffer, spare),
                records: std::mem::take(&mut self.records),
                max_timestamp: std::mem::replace(&mut self.max_timestamp, i64::MIN),
                transaction: self.owner,
                completion,
            });
        }
        self.queued_records = 0;
        self.queued_bytes = 0;
        self.in_flight = batches.last().map(|batch| batch.completion.clone());
        Some(batches)
    }

    /// What `flush` waits on: the last pending batch, else the one being written.
    pub(crate) fn last_completion(&self) -> Option<Arc<Completion>> {
        if self.records > 0 {
            Some(self.completion.clone())
        } else if let Some(last) = self.queued.last() {
            Some(last.completion.clone())
        } else {
            self.in_flight.clone()
        }
    }

    /// Fails every waiting record (the writer stopped) and refuses new ones.
    pub(crate) fn fail(&mut self, failure: SharedError) {
        for batch in self.queued.drain(..) {
            batch.completion.complete(Err(failure.clone()));
        }
        self.queued_records = 0;
        self.queued_bytes = 0;
        if self.records > 0 {
            self.completion.complete(Err(failure.clone()));
            self.records = 0;
            self.buffer
                .truncate(TransactionFields::header_len(self.owner));
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
        let accepted = pending.try_push(&record, size, 250, None).unwrap().unwrap();
        assert_eq!(accepted.index, 0);
        assert!(
            pending
                .try_push(&record, size, 250, None)
                .unwrap()
                .is_some()
        );
        assert!(
            pending
                .try_push(&record, size, 250, None)
                .unwrap()
                .is_none(),
            "a third record exceeds the bound"
        );
        let taken = pending.take(Vec::new()).unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].records, 2);
        assert_eq!(taken[0].buffer.len(), HEADER_LEN + 2 * size);
        let huge = Record::new(vec![0u8; 1000]);
        assert!(
            pending
                .try_push(&huge, batch::encoded_len(&huge), 250, None)
                .unwrap()
                .is_some()
        );
        assert_eq!(pending.peak_bytes, batch::encoded_len(&huge));
    }

    #[test]
    fn each_producer_gets_batches_of_its_own_and_older_epochs_are_fenced() {
        use crate::batch::Control;
        let fields = |epoch| TransactionFields {
            producer_id: 7,
            epoch,
            control: Control::Data,
        };
        let mut pending = Pending::default();
        let record = Record::new("x");
        let size = batch::encoded_len(&record);
        for owner in [None, Some(fields(1)), Some(fields(1)), None] {
            pending
                .try_push(&record, size, 1 << 20, owner)
                .unwrap()
                .unwrap();
        }
        let marker = TransactionFields {
            control: Control::Commit,
            ..fields(2)
        };
        pending.push_marker(marker).unwrap();
        assert_eq!(pending.records(), 5);
        assert!(matches!(
            pending.try_push(&record, size, 1 << 20, Some(fields(1))),
            Err(Refusal::Fenced)
        ));
        let batches = pending.take(Vec::new()).unwrap();
        let shape: Vec<_> = batches
            .iter()
            .map(|batch| (batch.transaction, batch.records, batch.buffer.len()))
            .collect();
        assert_eq!(
            shape,
            [
                (None, 1, HEADER_LEN + size),
                (Some(fields(1)), 2, TRANSACTIONAL_HEADER_LEN + 2 * size),
                (None, 1, HEADER_LEN + size),
                (Some(marker), 1, TRANSACTIONAL_HEADER_LEN),
            ]
        );
        assert_eq!(pending.records(), 0);
    }

    #[tokio::test]
    async fn the_receipts_of_a_batch_share_its_completion() {
        let mut pending = Pending::default();
        let record = Record::new("x");
        let size = batch::encoded_len(&record);
        let topic: Arc<str> = Arc::from("readings");
        let receipts: Vec<_> = (0..2)
            .map(|_| {
                let accepted = pending.try_push(&record, size, 1 << 20, None).unwrap();
                accepted.unwrap().into_receipt(&topic, 3)
            })
            .collect();
        let waiting = tokio::spawn(futures::future::join_all(receipts));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the receipts wait for the batch");
        let taken = pending.take(Vec::new()).unwrap();
        taken[0].completion.complete(Ok(40));
        let offsets: Vec<u64> = waiting
            .await
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(offsets, [40, 41]);

        let accepted = pending.try_push(&record, size, 1 << 20, None).unwrap();
        let receipt = accepted.unwrap().into_receipt(&topic, 3);
        let failure = SharedError(Arc::new(crate::Error::Closed));
        pending.take(Vec::new()).unwrap()[0]
            .completion
            .complete(Err(failure));
        match receipt.await {
            Err(runnel_backend::Error::Produce {
                topic, partition, ..
            }) => assert_eq!((topic.as_str(), partition), ("readings", 3)),
            other => panic!("expected the batch's failure, got {other:?}"),
        }
    }

    #[test]
    fn a_failed_partition_refuses_records() {
        let mut pending = Pending::default();
        pending.fail(SharedError(Arc::new(crate::Error::Closed)));
        assert!(matches!(
            pending.try_push(&Record::new("x"), 21, 100, None),
            Err(Refusal::Failed(_))
        ));
    }
}
