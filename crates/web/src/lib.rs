//! The admin HTTP endpoint of a Runnel process.
//!
//! Every process that runs streamlets serves, on 127.0.0.1:4040 by default:
//!
//! - `/` — a live view of the blueprint: streamlets and topics drawn as a graph, with
//!   records per second, lag, restarts and state colours, refreshed every second; the page
//!   is compiled into the binary and needs no network;
//! - `/metrics` — Prometheus metrics (listed in `docs/metrics.md`);
//! - `/health/live` and `/health/ready` (ready while every streamlet is connected and none
//!   has a [`Problem`](runnel_runtime::Problem));
//! - `/api/status` — the [`Snapshot`](runnel_runtime::Snapshot) as JSON;
//! - `/api/history` — the last five minutes of samples, for the charts;
//! - `/api/state/{instance}?key=K` — the keyed state of one key of a stateful streamlet
//!   (a [`KeyState`](runnel_runtime::KeyState)), answered by the running streamlet.
//!
//! ```no_run
//! # async fn demo(board: std::sync::Arc<runnel_runtime::StatusBoard>) -> Result<(), runnel_web::ServeError> {
//! let listener = runnel_web::bind("127.0.0.1:4040".parse().unwrap(), true).await?;
//! println!("admin: http://{}/", listener.local_addr().unwrap());
//! runnel_web::serve(listener, board, tokio_util::sync::CancellationToken::new()).await;
//! # Ok(()) }
//! ```
//!
//! Where to begin: `server.rs` for the routes, `assets/` for the page. The `status`
//! commands read `/api/status` with `runnel-status`.
#![deny(missing_docs)]

mod server;

pub use server::{ServeError, bind, router, serve};
