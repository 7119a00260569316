//! Kubernetes for tests: a real control plane ([`ControlPlane`]: etcd, kube-apiserver and
//! kube-controller-manager built from Go modules by `scripts/kube-dev`), a kubelet stand-in
//! that registers as its Node and runs each Pod's container as a local process
//! ([`Kubelet`]), and an in-process API server that starts in milliseconds and fails on
//! request ([`FakeApiServer`]), for the tests that inject faults.
//!
//! `docs/kubernetes.md` says which tests run against which, and what the fake server does
//! and does not do like a real one.
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
//! Where to begin: `control_plane.rs` and `kubelet.rs` for the real cluster; `server.rs`
//! for the fake server's HTTP side, `store.rs` for its semantics, `fields.rs` for its
//! server-side apply.

mod control_plane;
mod fields;
mod kinds;
mod kubelet;
mod selector;
mod server;
mod store;

pub use axum::http::Method;
pub use control_plane::ControlPlane;
pub use kubelet::{Kubelet, pod_ip};
pub use server::{FakeApiServer, Fault, Request};
