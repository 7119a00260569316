//! [`Error`]: why an image could not be built or read.

use std::path::PathBuf;

/// Why an image could not be built, written or unpacked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("reading {} failed", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("writing {} failed", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file that should be an ELF executable or library is not one.
    #[error("{} is not an ELF file runnel can read: {reason}", path.display())]
    NotElf {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A shared library is nowhere the loader would look.
    #[error("library {library}, needed by {}, is not in any of {}", needed_by.display(), searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    LibraryNotFound {
        /// Its name.
        library: String,
        /// The object that needs it.
        needed_by: PathBuf,
        /// Where it was looked for.
        searched: Vec<PathBuf>,
    },
    /// An image layout is not what the OCI image spec says.
    #[error("{} is not a valid OCI image layout: {reason}", path.display())]
    Layout {
        /// The layout directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The reference is not `name[:tag]`.
    #[error("'{0}' is not an image reference (write it like registry.example.com/team/app:1.0)")]
    Reference(String),
}
