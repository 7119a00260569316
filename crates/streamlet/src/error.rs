//! [`Error`]: what streamlet code returns, and how the runtime should react to it.

use std::error::Error as StdError;
use std::fmt;

/// A boxed error, the cause an [`Error`] carries.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// How the runtime should react to a failed streamlet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A bug or an unexpected state: the streamlet is restarted with backoff. The default for
    /// anything converted with `?`.
    Internal,
    /// A system outside the streamlet failed (a broker, a database, an HTTP service):
    /// restarted with backoff, and the failure is reported as external.
    External,
    /// A record could not be understood. Inlets apply their bad-data policy to decoding
    /// failures; a streamlet that returns this kind itself is restarted like any other.
    BadData,
}

impl ErrorKind {
    /// A short name for logs and metric labels: `internal`, `external` or `bad_data`.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Internal => "internal",
            ErrorKind::External => "external",
            ErrorKind::BadData => "bad_data",
        }
    }
}

/// The error type of streamlet code: anything that implements [`std::error::Error`] converts
/// into it with `?`, as with `anyhow`, and constructors say how the runtime should react.
///
/// ```
/// use runnel_streamlet::{Error, ErrorKind};
/// fn parse(text: &str) -> Result<i64, Error> {
///     Ok(text.parse::<i64>()?)
/// }
/// assert_eq!(parse("x").unwrap_err().kind(), ErrorKind::Internal);
/// let unavailable = Error::external(std::io::Error::other("connection refused"));
/// assert_eq!(unavailable.to_string(), "connection refused");
/// ```
///
/// `Display` prints the outermost message; the alternate form (`{:#}`) prints the whole
/// chain of causes separated by `: `.
pub struct Error {
    kind: ErrorKind,
    cause: BoxError,
}

impl Error {
    /// An internal error with this message.
    pub fn msg(message: impl fmt::Display) -> Self {
        Error {
            kind: ErrorKind::Internal,
            cause: message.to_string().into(),
        }
    }

    /// A failure of an external system; see [`ErrorKind::External`].
    pub fn external(cause: impl Into<BoxError>) -> Self {
        Error {
            kind: ErrorKind::External,
            cause: cause.into(),
        }
    }

    /// A record that cannot be understood; see [`ErrorKind::BadData`].
    pub fn bad_data(cause: impl Into<BoxError>) -> Self {
        Error {
            kind: ErrorKind::BadData,
            cause: cause.into(),
        }
    }

    /// How the runtime reacts.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The underlying error.
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.cause
    }
}

impl<E: StdError + Send + Sync + 'static> From<E> for Error {
    fn from(cause: E) -> Self {
        Error {
            kind: ErrorKind::Internal,
            cause: Box::new(cause),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.cause)?;
        if f.alternate() {
            let mut source = self.cause.source();
            while let Some(cause) = source {
                write!(f, ": {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {:#}", self.kind.label(), self)
    }
}

/// The result type of streamlet code.
pub type Result<T = (), E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading the sensor failed")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn alternate_display_prints_the_chain_once() {
        let error = Error::from(Outer(std::io::Error::other("timed out")));
        assert_eq!(error.to_string(), "reading the sensor failed");
        assert_eq!(format!("{error:#}"), "reading the sensor failed: timed out");
    }
}
