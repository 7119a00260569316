//! [`HttpIngress`]: a streamlet that serves HTTP and writes each accepted request body to
//! its outlet.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use runnel_streamlet::{
    Context, Data, Error, MemorySize, Outlet, Parameter, Result, Shape, Streamlet,
};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::HttpError;
use crate::decode::Validation;
use crate::routes::{Admission, accept_lines, accept_one};

/// The TCP port to serve on; `0` lets the system pick a free one (the log line
/// `listening on ADDRESS` says which).
pub const PORT: Parameter<i64> =
    Parameter::int("port").describe("the TCP port to serve on; 0 picks a free port (logged)");
/// The address to bind.
pub const BIND_ADDRESS: Parameter<String> = Parameter::string("bind-address")
    .describe("the IP address to listen on")
    .default("0.0.0.0");
/// The largest request body (or, for newline-delimited JSON, the longest line) accepted.
pub const MAX_BODY_SIZE: Parameter<MemorySize> = Parameter::memory_size("max-body-size")
    .describe("the largest request body (newline-delimited JSON: the longest line) accepted; larger ones get 413")
    .default("1Mi");
/// How many records may wait for the log at once before requests get `503`.
pub const MAX_IN_FLIGHT: Parameter<i64> = Parameter::int("max-in-flight")
    .describe("records waiting for the log's acknowledgement at most; beyond that requests get 503")
    .default("1024");
/// What `Retry-After` says on a `503`.
pub const RETRY_AFTER: Parameter<Duration> = Parameter::duration("retry-after")
    .describe("the Retry-After of a 503 answer (rounded up to whole seconds)")
    .default("1s");

/// How an ingress reads request bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One JSON value per request.
    Json,
    /// One JSON value per line, streamed.
    Lines,
}

/// A streamlet that serves HTTP and writes each accepted request body, decoded from JSON
/// into the outlet's value type, to its outlet (encoded with the outlet's codec, keyed by
/// its key function).
///
/// `POST /` takes one JSON value ([`HttpIngress::new`]) or newline-delimited JSON, one
/// value per line, streamed ([`HttpIngress::lines`]). The answer comes only once the log
/// has acknowledged the record, so a request answered `200` is never lost:
///
/// | answer | when |
/// |---|---|
/// | `200 {"accepted":1,"partition":P,"offset":O}` | the record is durable (JSON mode) |
/// | `200 {"accepted":N}` | every line's record is durable (lines mode) |
/// | `400 {"error":...,"field":...}` | the body (or line `"line"`) does not decode or validate; nothing of it is written |
/// | `413 {"error":...}` | the body (lines mode: a line) is larger than `max-body-size`, or than the topic accepts |
/// | `503 {"error":...}` + `Retry-After` | `max-in-flight` records already wait for the log, or the log refused the record |
///
/// In lines mode the lines before a refused one are written and counted in `accepted`;
/// a client resends from the line after them. Memory stays bounded: at most
/// `max-in-flight` records (and as many bodies of at most `max-body-size`) are held at
/// once, and a streamed body is read only as fast as the log takes its records.
///
/// Parameters: `port` (required; `0` picks a free port), `bind-address` (`0.0.0.0`),
/// `max-body-size` (`1Mi`), `max-in-flight` (`1024`), `retry-after` (`1s`). The ingress
/// binds its port as soon as it starts, logs `listening on ADDRESS` and only then reports
/// itself ready (so the process's `/health/ready` waits for the port); a port that cannot
/// be bound fails the streamlet with an external error, so the supervisor retries it.
/// On shutdown it stops accepting connections and answers the requests in progress.
///
/// ```
/// use runnel_http::{HttpIngress, Invalid};
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
/// pub struct Payment { pub card: String, pub amount: f64 }
///
/// pub const PAYMENTS: Outlet<Payment> = Outlet::new("out").keyed_by(|p| p.card.clone());
///
/// pub fn ingress() -> impl Streamlet {
///     HttpIngress::new(PAYMENTS).validate(|payment| {
///         if payment.amount > 0.0 { Ok(()) } else { Err(Invalid::field("amount", "must be positive")) }
///     })
/// }
/// # let _ = ingress();
/// ```
pub struct HttpIngress<T> {
    outlet: Outlet<T>,
    mode: Mode,
    validation: Option<Validation<T>>,
    description: &'static str,
}

impl<T: Data> HttpIngress<T> {
    /// An ingress taking one JSON value per `POST /`.
    pub fn new(outlet: Outlet<T>) -> Self {
        HttpIngress {
            outlet,
            mode: Mode::Json,
            validation: None,
            description: "serves HTTP: POST / with one JSON value writes it to the outlet",
        }
    }

    /// An ingress taking newline-delimited JSON (one value per line) per `POST /`, streamed,
    /// and answering with how many records were accepted.
    pub fn lines(outlet: Outlet<T>) -> Self {
        HttpIngress {
            mode: Mode::Lines,
            description: "serves HTTP: POST / with newline-delimited JSON writes one record per line to the outlet",
            ..HttpIngress::new(outlet)
        }
    }

    /// Checks every decoded value with `validation` before writing it.
    pub fn validate(mut self, validation: Validation<T>) -> Self {
        self.validation = Some(validation);
        self
    }

    /// Says what the ingress does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

impl<T: Data> Streamlet for HttpIngress<T> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .outlet(self.outlet)
            .parameter(PORT)
            .parameter(BIND_ADDRESS)
            .parameter(MAX_BODY_SIZE)
            .parameter(MAX_IN_FLIGHT)
            .parameter(RETRY_AFTER)
            .reports_readiness()
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let instance = ctx.instance().to_owned();
        let address = address(&ctx)?;
        let listener = TcpListener::bind(address).await.map_err(|source| {
            Error::external(HttpError::Bind {
                instance: instance.clone(),
                address,
                source,
            })
        })?;
        let local = listener.local_addr().unwrap_or(address);
        tracing::info!("listening on {local}");
        ctx.report_ready();

        let in_flight = ctx.parameter(MAX_IN_FLIGHT).max(1) as usize;
        let admission = Arc::new(Admission {
            outlet: ctx.outlet(self.outlet),
            validation: self.validation,
            max_body_size: usize::try_from(ctx.parameter(MAX_BODY_SIZE).0).unwrap_or(usize::MAX),
            in_flight: Arc::new(Semaphore::new(in_flight)),
            retry_after: ctx.parameter(RETRY_AFTER).as_secs_f64().ceil().max(1.0) as u64,
        });
        let router = match self.mode {
            Mode::Json => Router::new().route("/", post(accept_one::<T>)),
            Mode::Lines => Router::new().route("/", post(accept_lines::<T>)),
        }
        .with_state(admission);
        let shutdown = ctx.shutdown_token();
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .map_err(|source| Error::external(HttpError::Serve { instance, source }))
    }
}

/// The socket address the parameters ask for.
fn address(ctx: &Context) -> Result<SocketAddr> {
    let instance = ctx.instance().to_owned();
    let text = ctx.parameter(BIND_ADDRESS);
    let ip: IpAddr = text.parse().map_err(|_| {
        Error::from(HttpError::InvalidAddress {
            instance: instance.clone(),
            address: text.clone(),
        })
    })?;
    let port = ctx.parameter(PORT);
    let port =
        u16::try_from(port).map_err(|_| Error::from(HttpError::InvalidPort { instance, port }))?;
    Ok(SocketAddr::new(ip, port))
}

impl<T> std::fmt::Debug for HttpIngress<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpIngress")
            .field("outlet", &self.outlet)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}
