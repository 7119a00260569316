//! fjall: a log-structured merge tree (a journal, memtables, sorted tables) in pure Rust.

use std::path::Path;

use anyhow::Context;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::store::{ScanTally, Store, count_of, fold};
use crate::workload::{Key, Value};

/// A fjall database with default settings (32 MiB block cache, LZ4) and one keyspace.
pub(crate) struct FjallStore {
    database: Database,
    keyspace: Keyspace,
}

impl FjallStore {
    /// Opens a database in `directory`.
    pub(crate) fn open(directory: &Path) -> anyhow::Result<FjallStore> {
        let database = Database::builder(directory)
            .open()
            .with_context(|| format!("opening the fjall database {}", directory.display()))?;
        let keyspace = database.keyspace("state", KeyspaceCreateOptions::default)?;
        Ok(FjallStore { database, keyspace })
    }

    /// A write batch is written to the journal (the OS's buffers) without a sync, fjall's
    /// default; a checkpoint syncs the journal with `PersistMode::SyncAll`.
    fn checkpoint(&self, checkpoint: bool) -> anyhow::Result<()> {
        if checkpoint {
            self.database.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }
}

impl Store for FjallStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = self.database.batch();
        for (key, value) in entries {
            batch.insert(&self.keyspace, key.as_slice(), value.as_slice());
        }
        batch.commit()?;
        self.checkpoint(checkpoint)
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        let mut counted = 0;
        for key in keys {
            counted += count_of(key, self.keyspace.get(key)?.as_deref())?;
        }
        Ok(counted)
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, checkpoint: bool) -> anyhow::Result<()> {
        let mut batch = self.database.batch();
        for key in keys {
            let current = self
                .keyspace
                .get(key)?
                .with_context(|| format!("the update did not find the key {key:02x?}"))?;
            let updated = fold(key, &current, time);
            batch.insert(&self.keyspace, key.as_slice(), updated.as_slice());
        }
        batch.commit()?;
        self.checkpoint(checkpoint)
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let mut tally = ScanTally::new();
        for guard in self.keyspace.iter() {
            let (key, value) = guard.into_inner()?;
            tally.see(&key, &value)?;
        }
        Ok(tally)
    }
}
