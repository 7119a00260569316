//! Opening segments after a restart or a crash: check the batches, truncate a torn tail of
//! the last segment, refuse corruption anywhere else, and rebuild indexes that are missing or
//! do not match their segment.

use std::fs::File;
use std::path::Path;

use crate::batch::{self, BatchProblem};
use crate::error::{Error, Result};
use crate::files;
use crate::index::{self, IndexEntry};
use crate::segment::{INDEX_EXTENSION, LOG_EXTENSION, Segment, segment_path};

/// How much of a segment one read takes while scanning.
const SCAN_CHUNK: usize = 1 << 20;

/// Whether the segment is the partition's last (its tail may be torn) or a sealed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SegmentRole {
    /// The last segment, which the writer appends to.
    Active,
    /// An earlier segment, complete and synced when it was sealed; it must end at
    /// `next_base`, the base offset of the segment after it.
    Sealed {
        /// The base offset of the next segment.
        next_base: u64,
    },
}

/// What reading batches from some position to the end of a file found.
#[derive(Debug)]
struct Scan {
    /// The end of the last good batch.
    valid_len: u64,
    /// The offset after the last good batch.
    next_offset: u64,
    /// Index entries for the good batches.
    entries: Vec<IndexEntry>,
    /// Where and why scanning stopped before the end of the file, if it did.
    problem: Option<(u64, BatchProblem)>,
}

/// Opens the segment with base offset `base_offset`, checking it as its role requires.
pub(crate) fn open_segment(
    directory: &Path,
    base_offset: u64,
    role: SegmentRole,
) -> Result<Segment> {
    let log_path = segment_path(directory, base_offset, LOG_EXTENSION);
    let index_path = segment_path(directory, base_offset, INDEX_EXTENSION);
    let file = files::open_read_write(&log_path, false)?;
    let file_len = file_length(&file, &log_path)?;
    let scan = match role {
        SegmentRole::Sealed { .. } => match stored_index(&index_path, file_len)? {
            // The index is only trusted if reading on from its last entry ends cleanly at the
            // end of the file; otherwise the whole segment is scanned again.
            Some(entries) => {
                let last = entries.last().copied().unwrap_or(IndexEntry {
                    relative_offset: 0,
                    position: 0,
                });
                let start = (
                    u64::from(last.position),
                    base_offset + u64::from(last.relative_offset),
                );
                let tail = scan(&file, &log_path, start, file_len, entries.clone())?;
                if tail.problem.is_none() {
                    tail
                } else {
                    scan(&file, &log_path, (0, base_offset), file_len, Vec::new())?
                }
            }
            None => scan(&file, &log_path, (0, base_offset), file_len, Vec::new())?,
        },
        SegmentRole::Active => scan(&file, &log_path, (0, base_offset), file_len, Vec::new())?,
    };
    let valid_len = match (&scan.problem, role) {
        (None, _) => scan.valid_len,
        (Some((position, problem)), SegmentRole::Sealed { .. }) => {
            return Err(corrupt(&log_path, *position, problem));
        }
        (Some((position, problem)), SegmentRole::Active) => {
            recover_tail(&file, &log_path, *position, problem, file_len)?;
            *position
        }
    };
    if let SegmentRole::Sealed { next_base } = role
        && scan.next_offset != next_base
    {
        return Err(Error::CorruptBatch {
            path: log_path,
            position: valid_len,
            problem: format!(
                "the segment ends at offset {} but the next segment starts at offset {next_base}",
                scan.next_offset
            ),
        });
    }
    write_index(&index_path, &scan.entries)?;
    Ok(Segment::new(
        base_offset,
        log_path,
        index_path,
        file,
        valid_len,
        scan.next_offset,
        scan.entries,
    ))
}

/// Truncates a torn or corrupt tail that starts at `position`, or refuses when a good batch
/// follows it (then the damage is not a tail).
fn recover_tail(
    file: &File,
    path: &Path,
    position: u64,
    problem: &BatchProblem,
    file_len: u64,
) -> Result<()> {
    if let Some(good) = next_good_batch(file, path, position + 1, file_len)? {
        let mut error = corrupt(path, position, problem);
        if let Error::CorruptBatch { problem, .. } = &mut error {
            problem.push_str(&format!(", and a valid batch follows at byte {good}"));
        }
        return Err(error);
    }
    tracing::warn!(
        file = %path.display(),
        position,
        dropped_bytes = file_len - position,
        problem = %describe(problem),
        "truncating the torn tail of a segment to its last valid batch"
    );
    file.set_len(position).map_err(|source| Error::Truncate {
        path: path.to_owned(),
        length: position,
        source,
    })?;
    file.sync_data().map_err(|source| Error::Sync {
        path: path.to_owned(),
        source,
    })
}

/// Reads batches from `start` (a byte position and the offset expected there) to `file_len`.
fn scan(
    file: &File,
    path: &Path,
    start: (u64, u64),
    file_len: u64,
    mut entries: Vec<IndexEntry>,
) -> Result<Scan> {
    let (mut position, mut next_offset) = start;
    let base_offset = next_offset
        - entries
            .last()
            .map_or(0, |entry| u64::from(entry.relative_offset));
    entries.retain(|entry| u64::from(entry.position) < position);
    let mut chunk = bytes::Bytes::new();
    let mut chunk_start = position;
    loop {
        if position >= file_len {
            return Ok(Scan {
                valid_len: position,
                next_offset,
                entries,
                problem: None,
            });
        }
        let within = (position - chunk_start) as usize;
        let mut checked = batch::check(chunk.get(within..).unwrap_or_default());
        // Read again from this batch until it is whole or the file ends: the first read may
        // not even have held its header, so it can take two reads to learn its length.
        while let Err(BatchProblem::Incomplete { claimed }) = checked {
            let available = (file_len - position) as usize;
            let wanted = SCAN_CHUNK.max(claimed.unwrap_or(0) as usize).min(available);
            if position == chunk_start && wanted <= chunk.len() {
                break;
            }
            chunk = read_at(file, path, position, wanted)?;
            chunk_start = position;
            checked = batch::check(&chunk);
            if chunk.len() < wanted {
                break;
            }
        }
        let header = match checked {
            Ok(header) if header.base_offset == next_offset => header,
            Ok(header) => {
                let problem = BatchProblem::Invalid(format!(
                    "the batch starts at offset {}, expected {next_offset}",
                    header.base_offset
                ));
                return Ok(Scan {
                    valid_len: position,
                    next_offset,
                    entries,
                    problem: Some((position, problem)),
                });
            }
            Err(problem) => {
                return Ok(Scan {
                    valid_len: position,
                    next_offset,
                    entries,
                    problem: Some((position, problem)),
                });
            }
        };
        if index::wants_entry(&entries, position) {
            entries.push(IndexEntry {
                relative_offset: (next_offset - base_offset) as u32,
                position: position as u32,
            });
        }
        position += u64::from(header.length);
        next_offset = header.next_offset();
    }
}

/// The position of the first good batch at or after `from`, searching for the batch marker.
fn next_good_batch(file: &File, path: &Path, from: u64, file_len: u64) -> Result<Option<u64>> {
    let mut chunk_start = from;
    while chunk_start < file_len {
        let chunk = read_at(
            file,
            path,
            chunk_start,
            SCAN_CHUNK.min((file_len - chunk_start) as usize),
        )?;
        for at in 0..chunk.len().saturating_sub(batch::MAGIC.len() - 1) {
            if batch::starts_with_magic(&chunk[at..]) {
                let candidate = chunk_start + at as u64;
                let header = read_at(file, path, candidate, batch::TRANSACTIONAL_HEADER_LEN)?;
                if let Ok(header) = batch::read_header(&header) {
                    let whole = read_at(file, path, candidate, header.length as usize)?;
                    if batch::check(&whole).is_ok() {
                        return Ok(Some(candidate));
                    }
                }
            }
        }
        // Overlap chunks so a marker split between two reads is still found.
        chunk_start += (chunk.len().max(batch::MAGIC.len()) - (batch::MAGIC.len() - 1)) as u64;
    }
    Ok(None)
}

fn read_at(file: &File, path: &Path, position: u64, length: usize) -> Result<bytes::Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buffer = vec![0; length];
    let mut filled = 0;
    while filled < length {
        match file.read_at(&mut buffer[filled..], position + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Read {
                    path: path.to_owned(),
                    position: position + filled as u64,
                    source,
                });
            }
        }
    }
    buffer.truncate(filled);
    Ok(buffer.into())
}

fn stored_index(path: &Path, segment_len: u64) -> Result<Option<Vec<IndexEntry>>> {
    let Some(bytes) = files::read_if_exists(path)? else {
        tracing::info!(file = %path.display(), "rebuilding a missing index");
        return Ok(None);
    };
    let parsed =
        index::parse(&bytes, segment_len).filter(|entries| !entries.is_empty() || segment_len == 0);
    if parsed.is_none() {
        tracing::warn!(file = %path.display(), "rebuilding an index that does not match its segment");
    }
    Ok(parsed)
}

/// Rewrites an index file to hold exactly `entries` (not synced: it is derivable).
fn write_index(path: &Path, entries: &[IndexEntry]) -> Result<()> {
    let bytes: Vec<u8> = entries.iter().flat_map(|entry| entry.to_bytes()).collect();
    if files::read_if_exists(path)?.as_deref() == Some(&bytes[..]) {
        return Ok(());
    }
    std::fs::write(path, &bytes).map_err(|source| Error::Write {
        path: path.to_owned(),
        position: 0,
        source,
    })
}

fn file_length(file: &File, path: &Path) -> Result<u64> {
    file.metadata()
        .map(|metadata| metadata.len())
        .map_err(|source| Error::Read {
            path: path.to_owned(),
            position: 0,
            source,
        })
}

fn describe(problem: &BatchProblem) -> String {
    match problem {
        BatchProblem::Incomplete {
            claimed: Some(length),
        } => {
            format!("the last batch claims {length} bytes but the file ends first")
        }
        BatchProblem::Incomplete { claimed: None } => {
            "the file ends inside a batch header".to_owned()
        }
        BatchProblem::Invalid(problem) => problem.clone(),
    }
}

/// The error for a bad batch at `position` that recovery must not truncate.
pub(crate) fn corrupt(path: &Path, position: u64, problem: &BatchProblem) -> Error {
    Error::CorruptBatch {
        path: path.to_owned(),
        position,
        problem: describe(problem),
    }
}
