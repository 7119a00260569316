//! Measures candidate local stores for Runnel's keyed streamlet state (issue 13, item 2).
//!
//! One process measures one candidate, so that the process's peak resident set (`VmHWM`) is
//! that candidate's alone; `run.sh` builds each candidate from clean, runs them interleaved and
//! prints the table that `docs/benchmarks.md` quotes.
//!
//! ```text
//! state-store-comparison <candidate> <scratch directory> [keys]
//! ```
//!
//! `candidate` is one of `btreemap`, `hashmap` (always built: what Runnel keeps state in now)
//! or `redb`, `fjall`, `sled`, `rocksdb` (each behind the cargo feature of the same name, so
//! that each one's build time can be measured on its own). The scratch directory must not
//! exist; the embedded stores keep their files there, and it is removed at the end.
//!
//! The workload is what keyed state does in a streamlet: keys of 16 bytes (a card id), values
//! of 48 bytes (running statistics: six little-endian `u64`s), one million keys by default, all
//! in a deterministic pseudo-random order:
//!
//! 1. **load**: insert every key, in batches of 10,000, one write transaction (or write batch)
//!    per batch. No batch is synced to disk; the last batch of the phase is, because that is
//!    where a streamlet's checkpoint would make the state durable (its changelog on the log is
//!    what makes each record durable, not the local store).
//! 2. **read**: one point read of every key, in another pseudo-random order.
//! 3. **update**: read-modify-write of every key (count + 1, sum, min, max, last time), batched
//!    as in the load, synced at the end in the same way.
//! 4. **scan**: every key in key order, as a snapshot checkpoint would read the state (the
//!    `HashMap` has no order: it is scanned in its own order, which is all a snapshot needs).
//!
//! Every phase checks its results (every read finds its key, every key was updated once, the
//! scan sees every key with count 2), so a store that loses or duplicates writes fails the run
//! instead of reporting a rate. The output is one line of `name=value` pairs for `run.sh`.

mod maps;
mod memory;
mod store;
#[cfg(feature = "fjall")]
mod store_fjall;
#[cfg(feature = "redb")]
mod store_redb;
#[cfg(feature = "rocksdb")]
mod store_rocksdb;
#[cfg(feature = "sled")]
mod store_sled;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail, ensure};

use crate::store::Store;
use crate::workload::{BATCH_SIZE, Key, Value};

fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let (candidate, directory, key_count) = match arguments.as_slice() {
        [candidate, directory] => (candidate.as_str(), PathBuf::from(directory), 1_000_000),
        [candidate, directory, keys] => (
            candidate.as_str(),
            PathBuf::from(directory),
            keys.parse::<u64>()
                .with_context(|| format!("parsing the key count {keys:?}"))?,
        ),
        _ => bail!("usage: state-store-comparison <candidate> <scratch directory> [keys]"),
    };
    ensure!(
        key_count > 0 && key_count % BATCH_SIZE as u64 == 0,
        "the key count {key_count} must be a positive multiple of the batch size {BATCH_SIZE}"
    );
    ensure!(
        workload::orders_are_permutations(key_count),
        "the key count {key_count} shares a factor with an order's multiplier; take another"
    );
    ensure!(
        !directory.exists(),
        "the scratch directory {} already exists; give one that does not",
        directory.display()
    );
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("creating the scratch directory {}", directory.display()))?;

    let result = measure(candidate, &directory, key_count);
    let removal = std::fs::remove_dir_all(&directory)
        .with_context(|| format!("removing the scratch directory {}", directory.display()));
    let line = result?;
    removal?;
    println!("{line}");
    Ok(())
}

/// Opens the candidate's store in `directory` (the maps ignore it).
fn open(candidate: &str, directory: &Path) -> anyhow::Result<Box<dyn Store>> {
    // `directory` is unused by the in-memory maps, and by every store whose feature is off.
    let _ = directory;
    Ok(match candidate {
        "btreemap" => Box::new(maps::BTreeMapStore::default()),
        "hashmap" => Box::new(maps::HashMapStore::default()),
        #[cfg(feature = "redb")]
        "redb" => Box::new(store_redb::RedbStore::open(directory)?),
        #[cfg(feature = "fjall")]
        "fjall" => Box::new(store_fjall::FjallStore::open(directory)?),
        #[cfg(feature = "sled")]
        "sled" => Box::new(store_sled::SledStore::open(directory)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(store_rocksdb::RocksdbStore::open(directory)?),
        other => bail!(
            "unknown candidate {other:?} (or its cargo feature is off); one of btreemap, hashmap, \
             redb, fjall, sled, rocksdb"
        ),
    })
}

/// Runs the four phases and returns the output line.
fn measure(candidate: &str, directory: &Path, key_count: u64) -> anyhow::Result<String> {
    let mut store = open(candidate, directory)?;
    let resident_before_load = memory::resident_bytes()?;
    let batches = key_count / BATCH_SIZE as u64;

    // 1. Load: keys in the order of their index; the keys themselves are hashes of the index,
    // so this is a random order in key space.
    let started = Instant::now();
    let mut entries: Vec<(Key, Value)> = Vec::with_capacity(BATCH_SIZE);
    for batch in 0..batches {
        entries.clear();
        for index in batch * BATCH_SIZE as u64..(batch + 1) * BATCH_SIZE as u64 {
            entries.push((workload::key(index), workload::initial_value(index)));
        }
        store.insert_batch(&entries, batch + 1 == batches)?;
    }
    let load_seconds = started.elapsed().as_secs_f64();
    let resident_after_load = memory::resident_bytes()?;
    let disk_after_load = memory::directory_size(directory)?;

    // 2. Point reads of every key, in a second pseudo-random order.
    let started = Instant::now();
    let mut keys: Vec<Key> = Vec::with_capacity(BATCH_SIZE);
    let mut counted = 0_u64;
    for batch in 0..batches {
        keys.clear();
        for position in batch * BATCH_SIZE as u64..(batch + 1) * BATCH_SIZE as u64 {
            keys.push(workload::key(workload::read_order(position, key_count)));
        }
        counted += store.read(&keys)?;
    }
    let read_seconds = started.elapsed().as_secs_f64();
    ensure!(
        counted == key_count,
        "{candidate}: the reads found counts adding up to {counted}, not {key_count}"
    );

    // 3. Read-modify-write of every key, in a third order, batched like the load.
    let started = Instant::now();
    for batch in 0..batches {
        keys.clear();
        for position in batch * BATCH_SIZE as u64..(batch + 1) * BATCH_SIZE as u64 {
            keys.push(workload::key(workload::update_order(position, key_count)));
        }
        store.update_batch(&keys, position_time(batch), batch + 1 == batches)?;
    }
    let update_seconds = started.elapsed().as_secs_f64();

    // 4. Full scan in key order.
    let started = Instant::now();
    let scan = store.scan()?;
    let scan_seconds = started.elapsed().as_secs_f64();
    ensure!(
        scan.keys == key_count
            && scan.keys_updated_once == key_count
            && (scan.in_order || !store.scans_in_key_order()),
        "{candidate}: the scan saw {} keys (in key order: {}), {} of them updated exactly once; \
         expected {key_count} keys, all updated once",
        scan.keys,
        scan.in_order,
        scan.keys_updated_once,
    );

    let disk_at_end = memory::directory_size(directory)?;
    drop(store);
    let peak_resident = memory::peak_resident_bytes()?;
    let per_second = |seconds: f64| key_count as f64 / seconds;
    Ok(format!(
        "candidate={candidate} keys={key_count} load_per_second={:.0} read_per_second={:.0} \
         update_per_second={:.0} scan_per_second={:.0} peak_resident_bytes={peak_resident} \
         resident_growth_per_key={:.1} disk_after_load_bytes={} disk_after_load_apparent_bytes={} \
         disk_at_end_bytes={}",
        per_second(load_seconds),
        per_second(read_seconds),
        per_second(update_seconds),
        per_second(scan_seconds),
        resident_after_load.saturating_sub(resident_before_load) as f64 / key_count as f64,
        disk_after_load.allocated,
        disk_after_load.apparent,
        disk_at_end.allocated,
    ))
}

/// The event time the updates of a batch carry (any value that differs between batches).
fn position_time(batch: u64) -> u64 {
    1_700_000_000_000 + batch
}
