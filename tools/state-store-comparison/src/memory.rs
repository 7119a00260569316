//! Memory and disk measurements: the process's resident set from `/proc/self/status`, and the
//! size of a store's directory.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Context;

/// A field of `/proc/self/status` given in kB, in bytes.
fn status_field_bytes(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")
        .context("reading /proc/self/status for the resident set")?;
    let line = status
        .lines()
        .find(|line| line.starts_with(field))
        .with_context(|| format!("/proc/self/status has no {field} line"))?;
    let kilobytes: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .with_context(|| format!("parsing the {field} line {line:?} of /proc/self/status"))?;
    Ok(kilobytes * 1024)
}

/// The process's resident set now (`VmRSS`).
pub(crate) fn resident_bytes() -> anyhow::Result<u64> {
    status_field_bytes("VmRSS:")
}

/// The process's peak resident set so far (`VmHWM`).
pub(crate) fn peak_resident_bytes() -> anyhow::Result<u64> {
    status_field_bytes("VmHWM:")
}

/// The size of every file under a directory.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DirectorySize {
    /// Blocks allocated on disk, as `du` counts them.
    pub(crate) allocated: u64,
    /// File lengths, as `ls` shows them (a sparse or preallocated file differs).
    pub(crate) apparent: u64,
}

/// The sizes of every file under `directory`, recursively.
pub(crate) fn directory_size(directory: &Path) -> anyhow::Result<DirectorySize> {
    let mut size = DirectorySize::default();
    let entries = std::fs::read_dir(directory)
        .with_context(|| format!("listing {} for its size", directory.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", directory.display()))?;
        let metadata = entry
            .metadata()
            .with_context(|| format!("reading the metadata of {}", entry.path().display()))?;
        if metadata.is_dir() {
            let inner = directory_size(&entry.path())?;
            size.allocated += inner.allocated;
            size.apparent += inner.apparent;
        } else {
            size.allocated += metadata.blocks() * 512;
            size.apparent += metadata.len();
        }
    }
    Ok(size)
}
