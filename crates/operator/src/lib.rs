//! The Runnel operator: the [`Application`] custom resource and the controller that runs
//! it on Kubernetes.
//!
//! For every Application the operator creates the app's Kafka topics (never deleting
//! any), one ConfigMap and one Secret per streamlet with its resolved configuration, one
//! Deployment per streamlet running `app run-streamlet` with a PodDisruptionBudget for its
//! pods, and a Service for streamlets that serve HTTP; it writes the Application's status
//! from what it observes.
//!
//! ```
//! let crd = runnel_operator::crd();
//! assert_eq!(crd.spec.names.kind, "Application");
//! ```
//!
//! Where to begin: [`reconcile`] is the whole decision, a pure function from an
//! Application and the [`Observed`] objects to a [`Plan`]; `desired/` builds the objects;
//! `status.rs` computes the status; `autoscale.rs` decides replicas from lag. [`run`]
//! (`controller.rs`) is the kube controller around it: `observe.rs` reads the cluster,
//! `backplane.rs` makes sure of topics and samples lag, `execute.rs` applies the plan,
//! `leader.rs` elects one replica. `verify.rs` holds the spec checks that the reconcile
//! and the validating admission webhook share ([`admission::review`] decides,
//! [`webhook::serve`] serves it over TLS).
//!
//! Design decisions:
//!
//! - The decision is pure and the controller only observes and carries out: every case
//!   (first deploy, scaling, a configuration change, a bad blueprint, a failed topic
//!   creation, an edited Deployment, undeploy) is a unit test without a cluster.
//! - Server-side apply with one field manager: fields others set (an HPA's replicas, a
//!   user's annotations) stay theirs.
//! - Nothing the operator did not create is ever deleted: children are found by label
//!   *and* owner reference, and undeploy is Kubernetes' garbage collection of the
//!   Application's dependents.

pub mod admission;
mod autoscale;
mod backplane;
mod controller;
mod crd;
mod desired;
mod error;
mod events;
mod execute;
pub mod leader;
pub mod manifests;
pub mod names;
mod observe;
mod observed;
mod plan;
mod reconcile;
mod resource;
mod status;
mod verify;
pub mod webhook;

#[cfg(feature = "kafka")]
pub use backplane::KafkaBackplanes;
pub use backplane::{Backplanes, SingleBackplane};
pub use controller::{OperatorConfig, run};
pub use crd::crd;
pub use error::Error;
pub use observe::SECRET_CONFIGURATION_KEY;
pub use observed::{LagSample, Observed, ObservedTopic, ReconcileContext, TopicFailure};
pub use plan::{Desired, Event, Outcome, Plan, Stale};
pub use reconcile::reconcile;
pub use resource::Application;
pub use status::is_ready;
