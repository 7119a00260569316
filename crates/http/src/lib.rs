//! HTTP streamlets for Runnel: getting records in over HTTP, and out.
//!
//! - [`HttpIngress`] serves `POST /` and writes each accepted JSON body (or, with
//!   [`HttpIngress::lines`], each line of newline-delimited JSON) to its outlet, answering
//!   only once the log has acknowledged the record; a body that does not decode or
//!   validate gets `400` naming the field ([`Invalid`]), an oversized one `413`, and a full
//!   ingress `503` with `Retry-After`.
//! - [`HttpEgress`] POSTs each record of its inlet to a URL as JSON, retries failures that
//!   may pass, and sends records the target refuses to the dead-letter topic.
//!
//! ```
//! use runnel_http::{HttpEgress, HttpIngress};
//! use runnel_streamlet::prelude::*;
//!
//! #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
//! pub struct Reading { pub sensor: String, pub celsius: f64 }
//!
//! pub const READINGS: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());
//!
//! let ingress = HttpIngress::new(READINGS);
//! let forward = HttpEgress::new(READINGS.as_inlet());
//! # let _ = (ingress, forward);
//! ```
//!
//! Register them in an app like any streamlet and give each instance its parameters
//! (`port` for the ingress, `url` for the egress) in `local.toml` or with `--set`. This
//! crate is separate from the streamlet API so that apps without HTTP do not build a web
//! server. Where to begin: [`HttpIngress`].

mod decode;
mod delivery;
mod egress;
mod error;
mod ingress;
mod routes;

pub use decode::{Invalid, Validation};
pub use egress::{HttpEgress, MAX_RETRIES, RETRY_BACKOFF, TIMEOUT, URL};
pub use error::HttpError;
pub use ingress::{BIND_ADDRESS, HttpIngress, MAX_BODY_SIZE, MAX_IN_FLIGHT, PORT, RETRY_AFTER};
