//! Kubernetes without Kubernetes, for tests: an in-process API server
//! ([`FakeApiServer`]), a Deployment controller that turns Deployments into Pods, and a
//! kubelet that runs each Pod's container as a local process.
//!
//! No API server can run on the machines Runnel is developed and tested on, so the operator
//! and the CLI are tested against this one; `docs/kubernetes.md` says what it does and does
//! not do like a real cluster.
//!
//! ```no_run
//! # async fn demo() {
//! let server = runnel_test_cluster::FakeApiServer::start().await;
//! std::fs::write("kubeconfig", server.kubeconfig("apps")).unwrap();
//! let client = server.client("apps");
//! # let _ = client;
//! # }
//! ```
//!
//! Where to begin: `server.rs` for the HTTP side, `store.rs` for the semantics,
//! `fields.rs` for server-side apply; `deployments.rs` and `kubelet.rs` for the
//! process-backed cluster ([`DeploymentController`], [`Kubelet`]).

mod deployments;
mod fields;
mod kinds;
mod kubelet;
mod selector;
mod server;
mod store;

pub use axum::http::Method;
pub use deployments::{DeploymentController, TEMPLATE_HASH};
pub use kubelet::Kubelet;
pub use server::{FakeApiServer, Fault, Request};
