//! The exclusive lock on a data directory: the file `lock`, held with `File::try_lock` for as
//! long as the log is open, holding the owner's process id for the error a second opener
//! gets. The operating system releases the lock when the process dies, so a crash never
//! leaves a stale lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The name of the lock file in the data directory.
pub(crate) const LOCK_FILE: &str = "lock";

/// Holds the lock on a data directory until dropped.
#[derive(Debug)]
pub(crate) struct DirectoryLock {
    _file: File,
}

impl DirectoryLock {
    /// Takes the lock on `directory`, or fails naming it and, if known, the holder's pid.
    pub(crate) fn acquire(directory: &Path) -> Result<DirectoryLock> {
        let path = directory.join(LOCK_FILE);
        let lock_error = |source| Error::Lock {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(lock_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut contents = String::new();
                let pid = file
                    .read_to_string(&mut contents)
                    .ok()
                    .and_then(|_| contents.trim().parse().ok());
                return Err(Error::DirectoryLocked {
                    directory: PathBuf::from(directory),
                    pid,
                });
            }
            Err(TryLockError::Error(source)) => return Err(lock_error(source)),
        }
        let pid = format!("{}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.write_all_at(pid.as_bytes(), 0))
            .map_err(lock_error)?;
        Ok(DirectoryLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_directory_and_this_process() {
        let directory = tempfile::tempdir().unwrap();
        let held = DirectoryLock::acquire(directory.path()).unwrap();
        let error = DirectoryLock::acquire(directory.path()).unwrap_err();
        assert!(matches!(
            &error,
            Error::DirectoryLocked { pid: Some(pid), .. } if *pid == std::process::id()
        ));
        drop(held);
        DirectoryLock::acquire(directory.path()).unwrap();
    }
}
