//! [`HttpError`]: why an HTTP streamlet could not serve or call out.

use std::net::SocketAddr;

/// Why an HTTP streamlet failed. Returned to the runtime as an external error (the
/// supervisor restarts the streamlet with backoff).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The `bind-address` parameter is not an IP address.
    #[error("streamlet '{instance}': bind-address '{address}' is not an IP address")]
    InvalidAddress {
        /// The instance.
        instance: String,
        /// The text given.
        address: String,
    },
    /// The `port` parameter is not a TCP port.
    #[error("streamlet '{instance}': port {port} is not a TCP port (0 to 65535)")]
    InvalidPort {
        /// The instance.
        instance: String,
        /// The value given.
        port: i64,
    },
    /// The address could not be bound (the port is taken, say).
    #[error("streamlet '{instance}' could not listen on {address}")]
    Bind {
        /// The instance.
        instance: String,
        /// The address asked for.
        address: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Serving stopped with an error.
    #[error("streamlet '{instance}' stopped serving HTTP")]
    Serve {
        /// The instance.
        instance: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The egress's `url` parameter is not an `http://` URL.
    #[error("streamlet '{instance}': url '{url}' is not an http:// URL")]
    InvalidUrl {
        /// The instance.
        instance: String,
        /// The text given.
        url: String,
    },
    /// The egress's target kept failing with errors that may pass (connection refused,
    /// timeouts, `5xx`, `408`, `429`) after every retry.
    #[error("POST {url} failed {attempts} times in a row; the last time: {last}")]
    Unavailable {
        /// The URL.
        url: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
}
