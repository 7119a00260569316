//! The objects one streamlet instance needs: a ConfigMap and a Secret with its resolved
//! configuration, a Deployment that runs `app run-streamlet`, a PodDisruptionBudget for its
//! pods, and a Service when it serves HTTP. Pure builders: same input, same object.

mod configuration;
mod deployment;
mod disruption_budget;
mod scheduling;
mod service;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use runnel_application::ResolvedStreamlet;
use runnel_blueprint::descriptor::StreamletDescriptor;

pub(crate) use configuration::{config_hash, config_map, secret};
pub(crate) use deployment::deployment;
pub(crate) use disruption_budget::pod_disruption_budget;
pub(crate) use service::service;

use crate::Application;
use crate::names::{labels, object_name};

/// Everything the builders need to know about one streamlet instance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Streamlet<'a> {
    pub(crate) app: &'a Application,
    pub(crate) instance: &'a str,
    pub(crate) resolved: &'a ResolvedStreamlet,
    pub(crate) declared: &'a StreamletDescriptor,
    /// `None` when something else (an HPA) owns the replicas.
    pub(crate) replicas: Option<i32>,
    pub(crate) bootstrap_servers: &'a str,
}

impl Streamlet<'_> {
    /// The name of each of its objects.
    pub(crate) fn name(&self) -> String {
        object_name(self.app.name(), self.instance)
    }

    /// Metadata for one of its objects: name, namespace, labels, owner.
    pub(crate) fn metadata(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name()),
            namespace: self.app.metadata.namespace.clone(),
            labels: Some(labels(
                self.app.name(),
                self.instance,
                &self.app.spec.version,
            )),
            owner_references: Some(vec![owner(self.app)]),
            ..ObjectMeta::default()
        }
    }
}

/// The owner reference to the Application: garbage collection deletes what the operator
/// created, and nothing else, when the Application goes.
pub(crate) fn owner(app: &Application) -> OwnerReference {
    OwnerReference {
        api_version: runnel_application::API_VERSION.to_owned(),
        kind: runnel_application::KIND.to_owned(),
        name: app.name().to_owned(),
        uid: app.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
