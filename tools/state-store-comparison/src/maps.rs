//! The in-memory baselines: what Runnel keeps state in now. Keys and values are `Vec<u8>`, as
//! a store of serialized state for any key and value type would hold them.

use std::collections::{BTreeMap, HashMap};

use crate::store::{ScanTally, Store, count_of, fold};
use crate::workload::{Key, Value};

/// A `BTreeMap<Vec<u8>, Vec<u8>>`: ordered, so a snapshot can be written in key order.
#[derive(Debug, Default)]
pub(crate) struct BTreeMapStore {
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Store for BTreeMapStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], _checkpoint: bool) -> anyhow::Result<()> {
        for (key, value) in entries {
            self.entries.insert(key.to_vec(), value.to_vec());
        }
        Ok(())
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        keys.iter()
            .map(|key| count_of(key, self.entries.get(key.as_slice()).map(Vec::as_slice)))
            .sum()
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, _checkpoint: bool) -> anyhow::Result<()> {
        for key in keys {
            // In place: an in-memory store needs no write back.
            let value = self
                .entries
                .get_mut(key.as_slice())
                .ok_or_else(|| anyhow::anyhow!("the update did not find the key {key:02x?}"))?;
            let updated = fold(key, value, time);
            value.copy_from_slice(&updated);
        }
        Ok(())
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let mut tally = ScanTally::new();
        for (key, value) in &self.entries {
            tally.see(key, value)?;
        }
        Ok(tally)
    }
}

/// A `HashMap<Vec<u8>, Vec<u8>>` with the standard hasher: unordered.
#[derive(Debug, Default)]
pub(crate) struct HashMapStore {
    entries: HashMap<Vec<u8>, Vec<u8>>,
}

impl Store for HashMapStore {
    fn insert_batch(&mut self, entries: &[(Key, Value)], _checkpoint: bool) -> anyhow::Result<()> {
        for (key, value) in entries {
            self.entries.insert(key.to_vec(), value.to_vec());
        }
        Ok(())
    }

    fn read(&mut self, keys: &[Key]) -> anyhow::Result<u64> {
        keys.iter()
            .map(|key| count_of(key, self.entries.get(key.as_slice()).map(Vec::as_slice)))
            .sum()
    }

    fn update_batch(&mut self, keys: &[Key], time: u64, _checkpoint: bool) -> anyhow::Result<()> {
        for key in keys {
            let value = self
                .entries
                .get_mut(key.as_slice())
                .ok_or_else(|| anyhow::anyhow!("the update did not find the key {key:02x?}"))?;
            let updated = fold(key, value, time);
            value.copy_from_slice(&updated);
        }
        Ok(())
    }

    fn scan(&mut self) -> anyhow::Result<ScanTally> {
        let mut tally = ScanTally::new();
        for (key, value) in &self.entries {
            tally.see(key, value)?;
        }
        Ok(tally)
    }

    fn scans_in_key_order(&self) -> bool {
        false
    }
}
