//! Kubernetes for tests: a real control plane ([`ControlPlane`]: etcd, kube-apiserver and
//! kube-controller-manager built from Go modules by `scripts/kube-dev`), and stand-ins that
//! start in milliseconds: an in-process API server ([`FakeApiServer`]), a Deployment
//! controller that turns Deployments into Pods, and a kubelet that runs each Pod's container
//! as a local process.
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
//! Where to begin: `server.rs` for the HTTP side, `store.rs` for the semantics,
//! `fields.rs` for server-side apply; `deployments.rs` and `kubelet.rs` for the
//! process-backed cluster ([`DeploymentController`], [`Kubelet`]).

mod control_plane;
mod deployments;
mod fields;
mod kinds;
mod kubelet;
mod selector;
mod server;
mod store;

pub use axum::http::Method;
pub use control_plane::ControlPlane;
pub use deployments::{DeploymentController, TEMPLATE_HASH};
pub use kubelet::{Kubelet, pod_ip};
pub use server::{FakeApiServer, Fault, Request};
