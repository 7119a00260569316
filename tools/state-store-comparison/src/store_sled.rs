//! sled: a lock-free B-tree over a log-structured page store, in pure Rust.

use std::path::Path;

use anyhow::Context;

use crate::store::{ScanTally, Store, count_of, fold};
use crate::workload::{Key, Value};

/// A sled database with default settings (1 GB page cache) except that the background flush
/// every 500 ms is off, so that, as for every other candidate, only a checkpoint syncs.
pub(crate) struct SledStore {
    database: sled::Db,
}

impl SledStore {
    /// Opens a database in `directory`.
    pub(crate) fn open(directory: &Path) -> anyhow::Result<SledStore> {
        let database = sled::Config::new()
            .path(directory)
            .flush_every_ms(None)
            .open()
            .with_context(|| format!("opening the sled database {}", directory.display()))?;
        Ok(SledStore { database })
    }

    /// A checkpoint flushes (and syncs) everything written so far.
    fn checkpoint(&self, checkpoint: bool) -> anyhow::Result<()> {
        if checkpoint {
            self.database.flush()?;
        }
        Ok(())
    }
}

impl Store for SledStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = sled::Batch::default();
        for (key, value) in entries {
            batch.insert(key.as_slice(), value.as_slice());
        }
        self.database.apply_batch(batch)?;
        self.checkpoint(checkpoint)
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        let mut counted = 0;
        for key in keys {
            counted += count_of(key, self.database.get(key)?.as_deref())?;
        }
        Ok(counted)
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = sled::Batch::default();
        for key in keys {
            let current = self
                .database
                .get(key)?
                .with_context(|| format!("the update did not find the key {key:02x?}"))?;
            let updated = fold(key, &current, time);
            batch.insert(key.as_slice(), updated.as_slice());
        }
        self.database.apply_batch(batch)?;
        self.checkpoint(checkpoint)
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let mut tally = ScanTally::new();
        for entry in self.database.iter() {
            let (key, value) = entry?;
            tally.see(&key, &value)?;
        }
        Ok(tally)
    }
}
