//! The crate's error type, for the few operations that fail rather than report diagnostics.

/// An operation of this crate that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A descriptor's JSON did not parse (or does not have the descriptor's shape).
    #[error("invalid app descriptor at line {line}, column {column}: {message}")]
    DescriptorJson {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A descriptor written in a format version this crate does not read.
    #[error("unsupported descriptor version {found} (this runnel reads version {supported})")]
    DescriptorVersion {
        /// The version in the descriptor.
        found: u32,
        /// The version this crate reads.
        supported: u32,
    },
}

/// A result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
