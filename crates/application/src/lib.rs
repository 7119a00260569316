//! The Runnel `Application` resource, without Kubernetes client code: what an app binary
//! needs to write one (`app build`), and what the CLI and the operator share.
//!
//! - [`ApplicationSpec`] and [`ApplicationStatus`]: the resource's spec and status, with
//!   serde and schemars (the operator crate, `runnel-operator`, turns them into the kube
//!   `Application` type and the CustomResourceDefinition).
//! - [`Configuration`]: per-streamlet parameters, runtime settings (Kafka client settings,
//!   log level) and pod settings (resources, labels, annotations, env, volumes, where the
//!   pods may run, their service account), read from
//!   configuration files and `key=value` arguments, stacked in layers and checked against the
//!   blueprint and the descriptor.
//! - [`ApplicationDocument`]: the resource as a YAML document.
//!
//! ```
//! use runnel_application::Configuration;
//! let mut configuration = Configuration::parse_file(
//!     std::path::Path::new("prod.toml"),
//!     "[streamlets.generator]\nrecords-per-second = 100\n",
//! )?;
//! configuration.assign("generator.records-per-second=200")?; // the command line wins
//! assert_eq!(configuration.resolve("generator").parameters["records-per-second"], "200");
//! # Ok::<(), runnel_application::Problem>(())
//! ```
//!
//! Where to begin: `spec.rs`, then `configuration.rs`; `docs/kubernetes.md` is the user's
//! view of both.
//!
//! Design decisions:
//!
//! - No kube and no k8s-openapi here: every app binary links this crate for `app build`,
//!   and an app built for the cluster does not need the operator.
//! - Configuration values are text in the parameter's syntax, as in `local.toml`, so the
//!   file a pod reads is the file a local run reads.
//! - Secret values never go into the Application: [`Configuration::split_secrets`] keeps
//!   them apart for a Secret.

mod configuration;
mod document;
mod schema;
mod secret;
mod spec;
mod status;
mod yaml;

pub use configuration::{
    Affinity, Autoscaling, Configuration, DEFAULT_COOLDOWN, LabelSelector, NodeAffinity,
    NodeSelector, NodeSelectorTerm, PodAffinity, PodAffinityTerm, PodSettings,
    PreferredSchedulingTerm, Problem, Quantities, ResolvedStreamlet, ResourceSettings,
    ScalingSettings, SelectorRequirement, StreamletConfiguration, Toleration,
    WeightedPodAffinityTerm,
};
pub use document::{ApplicationDocument, DocumentError, DocumentMetadata};
pub use secret::{MASK, is_secret};
pub use spec::{
    API_VERSION, ApplicationSpec, GROUP, KIND, KafkaSpec, PLURAL, PROTOCOL_VERSION, RollbackSpec,
    StreamletSpec, TopicSpec, VERSION,
};
pub use status::{
    ApplicationStatus, AutoscalingStatus, Condition, Phase, Rollout, RunningSpec, StreamletStatus,
};
pub use yaml::to_yaml;

/// The port of the admin endpoint in a streamlet's pod (`/health/live`, `/health/ready`,
/// `/metrics`, `/api/status`): the probes and Prometheus use it.
pub const ADMIN_PORT: u16 = 9090;
