//! RocksDB through the `rocksdb` crate: the C++ log-structured merge tree.

use std::path::Path;

use anyhow::Context;
use rocksdb::{DB, Options, WriteBatch};

use crate::store::{ScanTally, Store, count_of, fold};
use crate::workload::{Key, Value};

/// A RocksDB database with default options (the crate's defaults: snappy, lz4 and zstd built
/// in; RocksDB's 32 MiB block cache) and the write-ahead log on.
pub(crate) struct RocksdbStore {
    database: DB,
}

impl RocksdbStore {
    /// Opens a database in `directory`.
    pub(crate) fn open(directory: &Path) -> anyhow::Result<RocksdbStore> {
        let mut options = Options::default();
        options.create_if_missing(true);
        let database = DB::open(&options, directory)
            .with_context(|| format!("opening the RocksDB database {}", directory.display()))?;
        Ok(RocksdbStore { database })
    }

    /// A write batch goes to the write-ahead log without a sync (`WriteOptions::sync` false,
    /// the default); a checkpoint syncs the log with `flush_wal(true)`.
    fn checkpoint(&self, checkpoint: bool) -> anyhow::Result<()> {
        if checkpoint {
            self.database.flush_wal(true)?;
        }
        Ok(())
    }
}

impl Store for RocksdbStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = WriteBatch::default();
        for (key, value) in entries {
            batch.put(key, value);
        }
        self.database.write(batch)?;
        self.checkpoint(checkpoint)
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        let mut counted = 0;
        for key in keys {
            counted += count_of(key, self.database.get_pinned(key)?.as_deref())?;
        }
        Ok(counted)
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = WriteBatch::default();
        for key in keys {
            let current = self
                .database
                .get_pinned(key)?
                .with_context(|| format!("the update did not find the key {key:02x?}"))?;
            let updated = fold(key, &current, time);
            batch.put(key, updated);
        }
        self.database.write(batch)?;
        self.checkpoint(checkpoint)
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let mut tally = ScanTally::new();
        let mut iterator = self.database.raw_iterator();
        iterator.seek_to_first();
        while let (Some(key), Some(value)) = (iterator.key(), iterator.value()) {
            tally.see(key, value)?;
            iterator.next();
        }
        iterator.status()?;
        Ok(tally)
    }
}
