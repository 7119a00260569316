//! What every candidate store does for the workload.

use crate::workload::{Key, Statistics, Value, update_amount};

/// A candidate local store for keyed state, as the workload drives it.
pub(crate) trait Store {
    /// Inserts `entries` in one write transaction (or write batch). `checkpoint` is true for
    /// the last batch of a phase: then the store makes everything written so far durable, as
    /// a checkpoint would; other batches are not synced.
    fn insert_batch(&mut self, entries: &[(Key, Value)], checkpoint: bool) -> anyhow::Result<()>;

    /// Reads every key of `keys` (each must exist) and returns the sum of their counts.
    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64>;

    /// Reads, updates with [`fold`] and writes back every key of `keys` in one write
    /// transaction (or write batch); `checkpoint` as for [`Store::insert_batch`].
    fn update_batch(&mut self, keys: &[Key], time: u64, checkpoint: bool) -> anyhow::Result<()>;

    /// Reads every entry, in key order where the store keeps one.
    fn scan(&mut self) -> anyhow::Result<ScanTally>;

    /// Whether [`Store::scan`] returns the entries in key order.
    fn scans_in_key_order(&self) -> bool {
        true
    }
}

/// The updated value of `key`: its current value with one more record folded in.
pub(crate) fn fold(key: &Key, current: &[u8], time: u64) -> Value {
    let mut statistics = Statistics::decode(current);
    statistics.fold(update_amount(key), time);
    statistics.encode()
}

/// What a scan saw, so that a store that loses, reorders or double-applies writes fails.
#[derive(Debug, Default)]
pub(crate) struct ScanTally {
    /// Entries seen.
    pub(crate) keys: u64,
    /// Entries whose count is 2: loaded once and updated once.
    pub(crate) keys_updated_once: u64,
    /// Whether every key was greater than the one before it.
    pub(crate) in_order: bool,
    previous: Option<Key>,
}

impl ScanTally {
    /// An empty tally.
    pub(crate) fn new() -> ScanTally {
        ScanTally {
            in_order: true,
            ..ScanTally::default()
        }
    }

    /// Counts one entry.
    pub(crate) fn see(&mut self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let key: Key = key
            .try_into()
            .map_err(|_| anyhow::anyhow!("the scan found a key of {} bytes, not 16", key.len()))?;
        anyhow::ensure!(
            value.len() == 48,
            "the scan found a value of {} bytes, not 48",
            value.len()
        );
        if self.previous.is_some_and(|previous| previous >= key) {
            self.in_order = false;
        }
        self.previous = Some(key);
        self.keys += 1;
        if Statistics::decode(value).count == 2 {
            self.keys_updated_once += 1;
        }
        Ok(())
    }
}

/// The count of a value that a read found, or an error naming the missing key.
pub(crate) fn count_of(key: &Key, value: Option<&[u8]>) -> anyhow::Result<u64> {
    match value {
        Some(value) => Ok(Statistics::decode(value).count),
        None => anyhow::bail!("the key {key:02x?} was written but a read did not find it"),
    }
}
