//! A segment: one `.log` file of batches, starting at a base offset, with its sparse
//! `.index`. Readers share a [`Segment`]; only the partition's writer appends to it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::files;
use crate::index::{self, IndexEntry};

/// The extension of segment files.
pub(crate) const LOG_EXTENSION: &str = "log";
/// The extension of index files.
pub(crate) const INDEX_EXTENSION: &str = "index";

/// One segment file of a partition, shared by its writer and its readers.
#[derive(Debug)]
pub(crate) struct Segment {
    /// The offset of the segment's first record.
    pub(crate) base_offset: u64,
    /// The `.log` file.
    pub(crate) log_path: PathBuf,
    /// The `.index` file.
    pub(crate) index_path: PathBuf,
    file: File,
    /// Bytes of whole batches that are acknowledged; readers never look past this.
    acknowledged_len: AtomicU64,
    /// The offset after the last acknowledged record.
    acknowledged_end: AtomicU64,
    index: RwLock<Vec<IndexEntry>>,
    /// Makes the next syncs fail, to test how the writer handles a failing disk.
    #[cfg(test)]
    pub(crate) fail_syncs: std::sync::atomic::AtomicBool,
}

/// The path of a segment's file with `extension` in a partition directory: the base offset in
/// 20 digits, so names sort by offset.
pub(crate) fn segment_path(directory: &Path, base_offset: u64, extension: &str) -> PathBuf {
    directory.join(format!("{base_offset:020}.{extension}"))
}

/// The base offset of a `.log` file, or `None` for any other file.
pub(crate) fn base_offset_of(path: &Path) -> Option<u64> {
    if path.extension()? != LOG_EXTENSION {
        return None;
    }
    let stem = path.file_stem()?.to_str()?;
    (stem.len() == 20).then(|| stem.parse().ok()).flatten()
}

impl Segment {
    /// Creates an empty segment and its index, durably.
    pub(crate) fn create(directory: &Path, base_offset: u64) -> Result<Segment> {
        let log_path = segment_path(directory, base_offset, LOG_EXTENSION);
        let index_path = segment_path(directory, base_offset, INDEX_EXTENSION);
        let file = files::open_read_write(&log_path, true)?;
        let index_file = files::open_read_write(&index_path, true)?;
        index_file.set_len(0).map_err(|source| Error::Truncate {
            path: index_path.clone(),
            length: 0,
            source,
        })?;
        files::sync_directory(directory)?;
        Ok(Segment::new(
            base_offset,
            log_path,
            index_path,
            file,
            0,
            base_offset,
            Vec::new(),
        ))
    }

    /// A segment over an open file whose first `length` bytes, up to offset `end`, are
    /// checked batches described by `index`.
    pub(crate) fn new(
        base_offset: u64,
        log_path: PathBuf,
        index_path: PathBuf,
        file: File,
        length: u64,
        end: u64,
        index: Vec<IndexEntry>,
    ) -> Segment {
        Segment {
            base_offset,
            log_path,
            index_path,
            file,
            acknowledged_len: AtomicU64::new(length),
            acknowledged_end: AtomicU64::new(end),
            index: RwLock::new(index),
            #[cfg(test)]
            fail_syncs: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Bytes of acknowledged batches.
    pub(crate) fn acknowledged_len(&self) -> u64 {
        self.acknowledged_len.load(Ordering::Acquire)
    }

    /// The offset after the last acknowledged record.
    pub(crate) fn acknowledged_end(&self) -> u64 {
        self.acknowledged_end.load(Ordering::Acquire)
    }

    /// Makes batches up to `length` bytes and offset `end` visible to readers.
    pub(crate) fn acknowledge(&self, length: u64, end: u64) {
        self.acknowledged_end.store(end, Ordering::Release);
        self.acknowledged_len.store(length, Ordering::Release);
    }

    /// Reads up to `length` bytes at `position`; fewer only at the end of the file.
    pub(crate) fn read(&self, position: u64, length: usize) -> Result<Bytes> {
        let mut buffer = BytesMut::zeroed(length);
        let mut filled = 0;
        while filled < length {
            match self
                .file
                .read_at(&mut buffer[filled..], position + filled as u64)
            {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Read {
                        path: self.log_path.clone(),
                        position: position + filled as u64,
                        source,
                    });
                }
            }
        }
        buffer.truncate(filled);
        Ok(buffer.freeze())
    }

    /// Writes a whole batch at `position`.
    pub(crate) fn write(&self, position: u64, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, position)
            .map_err(|source| Error::Write {
                path: self.log_path.clone(),
                position,
                source,
            })
    }

    /// Syncs the segment's data to disk.
    pub(crate) fn sync(&self) -> Result<()> {
        #[cfg(test)]
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(Error::Sync {
                path: self.log_path.clone(),
                source: std::io::Error::other("injected failure"),
            });
        }
        self.file.sync_data().map_err(|source| Error::Sync {
            path: self.log_path.clone(),
            source,
        })
    }

    /// Cuts the file to `length` bytes and syncs, so the cut survives a crash.
    pub(crate) fn truncate(&self, length: u64) -> Result<()> {
        self.file
            .set_len(length)
            .map_err(|source| Error::Truncate {
                path: self.log_path.clone(),
                length,
                source,
            })?;
        self.sync()
    }

    /// When the segment was last written: what age retention judges.
    pub(crate) fn modified(&self) -> Result<SystemTime> {
        self.file
            .metadata()
            .and_then(|metadata| metadata.modified())
            .map_err(|source| Error::Read {
                path: self.log_path.clone(),
                position: 0,
                source,
            })
    }

    /// The index entry to start reading from to find `offset`.
    pub(crate) fn index_lookup(&self, offset: u64) -> IndexEntry {
        let entries = self.index.read().unwrap_or_else(PoisonError::into_inner);
        index::lookup(&entries, offset.saturating_sub(self.base_offset))
    }

    /// Adds an index entry for a batch at `position` starting at `offset` if one is due,
    /// and appends it to the index file (which is never synced: it is derivable).
    pub(crate) fn index_batch(&self, index_file: &File, offset: u64, position: u64) -> Result<()> {
        let mut entries = self.index.write().unwrap_or_else(PoisonError::into_inner);
        if !index::wants_entry(&entries, position) {
            return Ok(());
        }
        let entry = IndexEntry {
            relative_offset: (offset - self.base_offset) as u32,
            position: position as u32,
        };
        let at = (entries.len() * index::ENTRY_LEN) as u64;
        index_file
            .write_all_at(&entry.to_bytes(), at)
            .map_err(|source| Error::Write {
                path: self.index_path.clone(),
                position: at,
                source,
            })?;
        entries.push(entry);
        Ok(())
    }

    /// Drops index entries at or past `position` (after a failed write was cut off).
    pub(crate) fn forget_index_from(&self, position: u64) {
        let mut entries = self.index.write().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|entry| u64::from(entry.position) < position);
    }

    /// Removes the segment's files (readers that still hold it keep reading the open file).
    pub(crate) fn remove_files(&self) -> Result<()> {
        files::remove_file(&self.log_path)?;
        files::remove_file(&self.index_path)
    }
}
