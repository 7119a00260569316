//! What goes wrong hosting a Python streamlet.

use crate::frame::Malformed;

/// An error of a Python streamlet's worker process; each names the streamlet.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    /// The interpreter could not be started.
    #[error("starting '{interpreter}' for Python streamlet '{streamlet}' failed: {source}")]
    Spawn {
        /// The streamlet reference (`module:attribute`).
        streamlet: String,
        /// The interpreter that was run.
        interpreter: String,
        /// Why.
        source: std::io::Error,
    },
    /// The process said it could not start (an import error, a bad parameter).
    #[error("Python streamlet '{streamlet}' could not start: {reason}")]
    Failed {
        /// The streamlet reference.
        streamlet: String,
        /// What the process said, with its traceback.
        reason: String,
    },
    /// The process ended, or its pipes broke, while the host talked to it.
    #[error("the process of Python streamlet '{streamlet}' exited ({status}){}", stderr_tail(.stderr))]
    Exited {
        /// The streamlet reference.
        streamlet: String,
        /// Its exit status, as the OS says it.
        status: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The process answered with something the protocol does not allow.
    #[error("Python streamlet '{streamlet}' broke the protocol: {reason}")]
    Protocol {
        /// The streamlet reference.
        streamlet: String,
        /// What was wrong.
        reason: String,
    },
    /// A frame's body was malformed.
    #[error("Python streamlet '{streamlet}': {source}")]
    Malformed {
        /// The streamlet reference.
        streamlet: String,
        /// What was wrong.
        source: Malformed,
    },
    /// `python -m runnel describe` failed or printed something else than a descriptor.
    #[error("describing Python streamlet '{streamlet}' failed: {reason}")]
    Describe {
        /// The streamlet reference.
        streamlet: String,
        /// Why.
        reason: String,
    },
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; its last words on stderr:\n{}", stderr.trim_end())
    }
}
