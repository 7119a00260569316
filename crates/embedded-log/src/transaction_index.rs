//! [`TransactionIndex`]: what read-committed readers of one partition need to know about
//! transactions: which producers have a transaction open in it (from where), and which
//! ranges of offsets belong to aborted transactions.
//!
//! A transaction is open in a partition from the moment its producer adds the partition
//! (at the partition's end offset then, a bound below every record the transaction writes
//! there) until its marker is written. The **last stable offset** is the first offset of the
//! oldest open transaction, or the end of the log when none is open: read-committed readers
//! stop there, so they never see records whose fate is undecided. An **aborted range** is a
//! producer id with the offsets from the transaction's start bound to its abort marker: a
//! transactional batch of that producer inside it is skipped by read-committed readers.
//! Kafka keeps the same two things (the last stable offset and the aborted transaction
//! index).

use std::collections::HashMap;

/// The offsets of one aborted transaction in one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AbortedRange {
    /// The producer id of the transaction.
    pub(crate) producer_id: u64,
    /// At or below the offset of the transaction's first record in the partition.
    pub(crate) first: u64,
    /// The offset of the abort marker; the transaction's records are all before it.
    pub(crate) marker: u64,
}

impl AbortedRange {
    /// Whether a batch of `producer_id` starting at `offset` belongs to this transaction.
    fn covers(&self, producer_id: u64, offset: u64) -> bool {
        self.producer_id == producer_id && self.first <= offset && offset < self.marker
    }
}

/// The open transactions and aborted ranges of one partition.
#[derive(Debug, Default)]
pub(crate) struct TransactionIndex {
    /// Producer id → the start bound of its open transaction.
    open: HashMap<u64, u64>,
    /// Aborted transactions, in the order their markers were written.
    aborted: Vec<AbortedRange>,
}

impl TransactionIndex {
    /// Records that `producer_id` opened a transaction here, with records at or after
    /// `first`. Reopening keeps the earlier bound.
    pub(crate) fn open(&mut self, producer_id: u64, first: u64) {
        self.open.entry(producer_id).or_insert(first);
    }

    /// The start bound of `producer_id`'s open transaction, if it has one here.
    pub(crate) fn open_since(&self, producer_id: u64) -> Option<u64> {
        self.open.get(&producer_id).copied()
    }

    /// Ends `producer_id`'s open transaction: committed, or aborted with its marker at
    /// `marker`.
    pub(crate) fn close(&mut self, producer_id: u64, aborted_at: Option<u64>) {
        let first = self.open.remove(&producer_id);
        if let (Some(first), Some(marker)) = (first, aborted_at) {
            self.aborted.push(AbortedRange {
                producer_id,
                first,
                marker,
            });
        }
    }

    /// Adds an aborted range known from before (the log was reopened).
    pub(crate) fn restore_aborted(&mut self, range: AbortedRange) {
        self.aborted.push(range);
    }

    /// The first offset a read-committed reader must not pass, given the log's `end`.
    pub(crate) fn last_stable_offset(&self, end: u64) -> u64 {
        self.open.values().copied().fold(end, u64::min)
    }

    /// Whether a transactional batch of `producer_id` at `offset` was aborted.
    pub(crate) fn is_aborted(&self, producer_id: u64, offset: u64) -> bool {
        self.aborted
            .iter()
            .rev()
            .any(|range| range.covers(producer_id, offset))
    }

    /// Forgets aborted ranges wholly before `start` (retention deleted their records).
    pub(crate) fn forget_before(&mut self, start: u64) {
        self.aborted.retain(|range| range.marker >= start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_stable_offset_is_the_oldest_open_start() {
        let mut index = TransactionIndex::default();
        assert_eq!(index.last_stable_offset(10), 10);
        index.open(7, 4);
        index.open(8, 2);
        index.open(7, 9);
        assert_eq!(index.last_stable_offset(10), 2);
        index.close(8, None);
        assert_eq!(index.last_stable_offset(10), 4);
        index.close(7, None);
        assert_eq!(index.last_stable_offset(12), 12);
    }

    #[test]
    fn only_the_aborted_producers_batches_in_the_range_are_aborted() {
        let mut index = TransactionIndex::default();
        index.open(7, 4);
        index.close(7, Some(9));
        assert!(index.is_aborted(7, 4) && index.is_aborted(7, 8));
        assert!(!index.is_aborted(7, 3) && !index.is_aborted(7, 9));
        assert!(!index.is_aborted(8, 5), "another producer's batch");
        index.forget_before(10);
        assert!(
            !index.is_aborted(7, 4),
            "forgotten once retention passed it"
        );
    }
}
