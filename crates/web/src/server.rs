//! The admin HTTP server: routes and serving.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use runnel_runtime::{QueryError, StateQueryError, StatusBoard, render_prometheus};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The page, its script and its style, compiled into the binary: the view works offline.
const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

/// Why the admin endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("binding the admin endpoint to {address} failed")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The routes of the admin endpoint over `board`:
///
/// | path | what |
/// |---|---|
/// | `/` | the live web view of the blueprint |
/// | `/metrics` | Prometheus metrics |
/// | `/health/live` | 200 while the process serves requests and no inlet is stuck without partitions ([`STUCK_WITHOUT_PARTITIONS`](runnel_runtime::STUCK_WITHOUT_PARTITIONS)); 503 with the reasons otherwise |
/// | `/health/ready` | 200 while every streamlet is connected and none has a problem; 503 with the reasons otherwise |
/// | `/api/status` | the status as JSON (a [`Snapshot`](runnel_runtime::Snapshot)) |
/// | `/api/history` | the last minutes of samples as JSON (a [`History`](runnel_runtime::History)) |
/// | `/api/state/{instance}?key=K` | the keyed state of key `K` (UTF-8; `key_hex=` for other bytes) in a streamlet with keyed state, as JSON (a [`KeyState`](runnel_runtime::KeyState)): 200 from the process holding the key's partition, 421 with the same JSON and a `message` from another; 404 for an unknown instance or one without keyed state, 503 while it is not running or busy, 400 without a valid key |
pub fn router(board: Arc<StatusBoard>) -> Router {
    Router::new()
        .route("/", get(index))
        .route(
            "/app.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    APP_JS,
                )
            }),
        )
        .route(
            "/app.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS) }),
        )
        .route("/metrics", get(metrics))
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/api/status", get(status))
        .route("/api/history", get(history))
        .route("/api/state/{instance}", get(state))
        .with_state(board)
}

/// Binds `address`; when it is taken and `fall_back` is set, binds the same host on a port
/// the system picks, so a second app on the machine still gets an endpoint.
///
/// # Errors
///
/// When nothing could be bound.
pub async fn bind(address: SocketAddr, fall_back: bool) -> Result<TcpListener, ServeError> {
    match TcpListener::bind(address).await {
        Ok(listener) => Ok(listener),
        Err(_) if fall_back => {
            let any = SocketAddr::new(address.ip(), 0);
            TcpListener::bind(any)
                .await
                .map_err(|source| ServeError::Bind {
                    address: any,
                    source,
                })
        }
        Err(source) => Err(ServeError::Bind { address, source }),
    }
}

/// Serves [`router`] on `listener` until `shutdown` fires.
pub async fn serve(listener: TcpListener, board: Arc<StatusBoard>, shutdown: CancellationToken) {
    let served = axum::serve(listener, router(board))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await;
    if let Err(error) = served {
        tracing::error!("the admin endpoint stopped: {error}");
    }
}

async fn index() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
        .into_response()
}

async fn metrics(State(board): State<Arc<StatusBoard>>) -> Response {
    let text = render_prometheus(&board);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn ready(State(board): State<Arc<StatusBoard>>) -> Response {
    health("ready", "not ready", board.readiness())
}

async fn live(State(board): State<Arc<StatusBoard>>) -> Response {
    health("live", "not live", board.liveness())
}

/// 200 with `good`, or 503 with `bad` and a line per reason.
fn health(good: &str, bad: &str, verdict: Result<(), Vec<String>>) -> Response {
    match verdict {
        Ok(()) => (StatusCode::OK, format!("{good}\n")).into_response(),
        Err(reasons) => {
            let mut body = format!("{bad}\n");
            for reason in reasons {
                body.push_str(&reason);
                body.push('\n');
            }
            (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
        }
    }
}

async fn history(State(board): State<Arc<StatusBoard>>) -> Response {
    axum::Json(board.history()).into_response()
}

async fn status(State(board): State<Arc<StatusBoard>>) -> Response {
    let mut snapshot = board.latest().borrow().clone();
    snapshot.ready = board.readiness().is_ok();
    axum::Json(snapshot).into_response()
}

/// The key of a state query: text, or bytes in hexadecimal.
#[derive(Debug, Deserialize)]
struct KeyParameters {
    key: Option<String>,
    key_hex: Option<String>,
}

impl KeyParameters {
    fn bytes(self) -> Result<Vec<u8>, String> {
        match (self.key, self.key_hex) {
            (Some(key), None) => Ok(key.into_bytes()),
            (None, Some(hex)) => decode_hex(&hex),
            (Some(_), Some(_)) => Err("give the key once: as `key` or as `key_hex`".to_owned()),
            (None, None) => Err(
                "no key: ask for `?key=TEXT`, or `?key_hex=HEX` for a key that is not UTF-8"
                    .to_owned(),
            ),
        }
    }
}

/// `0a1b` as bytes.
fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    let invalid = || format!("key_hex '{hex}' is not an even number of hexadecimal digits");
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return Err(invalid());
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).map_err(|_| invalid()))
        .collect()
}

async fn state(
    State(board): State<Arc<StatusBoard>>,
    Path(instance): Path<String>,
    Query(parameters): Query<KeyParameters>,
) -> Response {
    let key = match parameters.bytes() {
        Ok(key) => key,
        Err(reason) => return error(StatusCode::BAD_REQUEST, reason),
    };
    match board.query_state(&instance, key).await {
        Ok(state) if state.owner => axum::Json(state).into_response(),
        // Another member of the group holds the key's partition; the body says which.
        Ok(state) => (StatusCode::MISDIRECTED_REQUEST, axum::Json(state)).into_response(),
        Err(failure) => {
            let code = match failure.query_error() {
                None | Some(QueryError::NotKeyed | QueryError::WholeState) => StatusCode::NOT_FOUND,
                Some(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            error(code, error_chain(&failure))
        }
    }
}

/// A JSON error body: `{"error": reason}`.
fn error(code: StatusCode, reason: String) -> Response {
    (code, axum::Json(serde_json::json!({ "error": reason }))).into_response()
}

/// `error: cause: cause`.
fn error_chain(error: &StateQueryError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
