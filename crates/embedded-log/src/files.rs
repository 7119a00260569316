//! Small file operations with the error context the rest of the crate needs, and the
//! crash-safe replacement of a whole file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The suffix of a file being written by [`replace_file`]; leftovers are removed on open.
pub(crate) const TEMPORARY_SUFFIX: &str = ".tmp";

/// Replaces `path` with `contents` so that after a crash the file holds either the old or
/// the new contents, never a mix: write a temporary file, sync it, rename it over `path`,
/// sync the directory.
pub(crate) fn replace_file(path: &Path, contents: &[u8]) -> Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(TEMPORARY_SUFFIX);
    let temporary = PathBuf::from(temporary);
    let mut file = File::create(&temporary).map_err(|source| Error::OpenFile {
        path: temporary.clone(),
        source,
    })?;
    file.write_all(contents).map_err(|source| Error::Write {
        path: temporary.clone(),
        position: 0,
        source,
    })?;
    file.sync_all().map_err(|source| Error::Sync {
        path: temporary.clone(),
        source,
    })?;
    drop(file);
    fs::rename(&temporary, path).map_err(|source| Error::Rename {
        from: temporary,
        to: path.to_owned(),
        source,
    })?;
    sync_directory(parent(path))
}

/// Syncs a directory, so that files created, renamed or removed in it stay that way.
pub(crate) fn sync_directory(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|directory| directory.sync_all())
        .map_err(|source| Error::Sync {
            path: path.to_owned(),
            source,
        })
}

/// Creates a directory and its parents, and syncs the parent so the new entry is durable.
pub(crate) fn create_directory(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|source| Error::CreateDirectory {
        path: path.to_owned(),
        source,
    })?;
    sync_directory(parent(path))
}

/// Opens a file for reading and writing, creating it if `create`.
pub(crate) fn open_read_write(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|source| Error::OpenFile {
            path: path.to_owned(),
            source,
        })
}

/// Reads a whole file, or `None` if it does not exist.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read {
            path: path.to_owned(),
            position: 0,
            source,
        }),
    }
}

/// The entries of a directory, as paths.
pub(crate) fn list_directory(path: &Path) -> Result<Vec<PathBuf>> {
    let error = |source| Error::ListDirectory {
        path: path.to_owned(),
        source,
    };
    let mut entries = Vec::new();
    for entry in fs::read_dir(path).map_err(error)? {
        entries.push(entry.map_err(error)?.path());
    }
    entries.sort();
    Ok(entries)
}

/// Removes a file; a file that is already gone is fine.
pub(crate) fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Remove {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Removes leftovers of [`replace_file`] interrupted by a crash.
pub(crate) fn remove_temporary_files(directory: &Path) -> Result<()> {
    for path in list_directory(directory)? {
        if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().ends_with(TEMPORARY_SUFFIX))
        {
            remove_file(&path)?;
        }
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_holds_the_new_contents_and_no_temporary_is_left() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("offsets");
        replace_file(&path, b"one").unwrap();
        replace_file(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(list_directory(directory.path()).unwrap(), [path]);
    }
}
