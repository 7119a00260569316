//! redb: a copy-on-write B+tree in one file, with ACID write transactions.

use std::path::Path;

use anyhow::Context;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use crate::store::{ScanTally, Store, count_of, fold};
use crate::workload::{Key, Statistics, Value};

/// The one table the state lives in.
const STATE: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("state");

/// A redb database with default settings (1 GiB page cache).
pub(crate) struct RedbStore {
    database: Database,
}

impl RedbStore {
    /// Creates the database file `state.redb` in `directory`.
    pub(crate) fn open(directory: &Path) -> anyhow::Result<RedbStore> {
        let path = directory.join("state.redb");
        let database = Database::create(&path)
            .with_context(|| format!("creating the redb database {}", path.display()))?;
        Ok(RedbStore { database })
    }

    /// `Durability::None` for a batch (the commit is visible but not written durably until a
    /// later durable commit), `Durability::Immediate` (fsync) for a checkpoint.
    fn durability(checkpoint: bool) -> Durability {
        if checkpoint {
            Durability::Immediate
        } else {
            Durability::None
        }
    }
}

impl Store for RedbStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], checkpoint: bool) -> anyhow::Result<()> {
        let mut transaction = self.database.begin_write()?;
        transaction.set_durability(RedbStore::durability(checkpoint))?;
        {
            let mut table = transaction.open_table(STATE)?;
            for (key, value) in entries {
                table.insert(key.as_slice(), value.as_slice())?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        let transaction = self.database.begin_read()?;
        let table = transaction.open_table(STATE)?;
        let mut counted = 0;
        for key in keys {
            let guard = table.get(key.as_slice())?;
            counted += count_of(key, guard.as_ref().map(|guard| guard.value()))?;
        }
        Ok(counted)
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, checkpoint: bool) -> anyhow::Result<()> {
        let mut transaction = self.database.begin_write()?;
        transaction.set_durability(RedbStore::durability(checkpoint))?;
        {
            let mut table = transaction.open_table(STATE)?;
            for key in keys {
                // The guard borrows the table, so the value is copied out before the insert.
                let current = {
                    let guard = table
                        .get(key.as_slice())?
                        .with_context(|| format!("the update did not find the key {key:02x?}"))?;
                    Statistics::decode(guard.value())
                };
                let updated = fold(key, &current.encode(), time);
                table.insert(key.as_slice(), updated.as_slice())?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let transaction = self.database.begin_read()?;
        let table = transaction.open_table(STATE)?;
        let mut tally = ScanTally::new();
        for entry in table.iter()? {
            let (key, value) = entry?;
            tally.see(key.value(), value.value())?;
        }
        Ok(tally)
    }
}
