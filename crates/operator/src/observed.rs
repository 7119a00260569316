//! [`Observed`]: what the controller found in the cluster and on Kafka for one
//! Application, the input of [`reconcile`](crate::reconcile) besides the Application itself.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt as _;
use runnel_application::Configuration;

use crate::names::STREAMLET_LABEL;

/// The objects of one Application that the operator created (labelled with the app and
/// owned by the Application), the pods of its Deployments, the topics and the lag.
#[derive(Clone, Debug)]
pub struct Observed {
    /// Deployments owned by the Application.
    pub deployments: Vec<Deployment>,
    /// ConfigMaps owned by the Application.
    pub config_maps: Vec<ConfigMap>,
    /// Secrets owned by the Application.
    pub secrets: Vec<Secret>,
    /// Services owned by the Application.
    pub services: Vec<Service>,
    /// PodDisruptionBudgets owned by the Application.
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    /// Pods labelled with the app.
    pub pods: Vec<Pod>,
    /// The user's secret configuration (`spec.secretConfiguration`), read from its Secret;
    /// `Err` says why it could not be read.
    pub secret_configuration: Result<Configuration, String>,
    /// The topics after the controller made sure the managed ones exist, or why it could
    /// not; `None` when the controller did not get that far (the spec was rejected first).
    pub topics: Option<Result<Vec<ObservedTopic>, TopicFailure>>,
    /// Consumer lag per streamlet instance, for the autoscaler (only autoscaled ones).
    pub lag: BTreeMap<String, LagSample>,
    /// The schemas the backplane keeps for the app's topics (a schema registry on Kafka),
    /// or why they could not be read; `None` where it keeps none, or the controller did not
    /// get that far.
    pub kept_schemas: Option<Result<runnel_blueprint::KeptSchemas, String>>,
}

/// A topic as Kafka describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedTopic {
    /// The name.
    pub name: String,
    /// Its partition count.
    pub partitions: i32,
}

/// Why the topics could not be made sure of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicFailure {
    /// The topic, when one topic failed.
    pub topic: Option<String>,
    /// What went wrong.
    pub message: String,
}

/// One sample of a streamlet's consumer lag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LagSample {
    /// Records on its inlet topics not yet committed by its consumer groups.
    pub lag: i64,
    /// Records per second arriving on its inlet topics, when two samples were far enough
    /// apart to tell.
    pub rate: Option<f64>,
    /// The most partitions of any of its inlet topics: more replicas would be idle.
    pub partitions: i32,
}

/// When the reconcile happens and who does it.
#[derive(Clone, Debug)]
pub struct ReconcileContext {
    /// Now.
    pub now: Timestamp,
    /// The operator's version, written into the status.
    pub operator_version: String,
    /// The Kafka cluster for Applications that name none (`runnel operator run --kafka`).
    pub default_bootstrap_servers: Option<String>,
}

impl Default for Observed {
    /// Nothing in the cluster, no secret configuration, topics not checked yet.
    fn default() -> Self {
        Observed {
            deployments: Vec::new(),
            config_maps: Vec::new(),
            secrets: Vec::new(),
            services: Vec::new(),
            pod_disruption_budgets: Vec::new(),
            pods: Vec::new(),
            secret_configuration: Ok(Configuration::default()),
            topics: None,
            lag: BTreeMap::new(),
            kept_schemas: None,
        }
    }
}

impl Observed {
    /// The Deployment of streamlet `instance`.
    pub fn deployment(&self, instance: &str) -> Option<&Deployment> {
        self.deployments
            .iter()
            .find(|d| d.labels().get(STREAMLET_LABEL).map(String::as_str) == Some(instance))
    }

    /// The pods of streamlet `instance` that are not being deleted.
    pub fn pods_of<'a>(&'a self, instance: &'a str) -> impl Iterator<Item = &'a Pod> + 'a {
        self.pods.iter().filter(move |pod| {
            pod.labels().get(STREAMLET_LABEL).map(String::as_str) == Some(instance)
                && pod.metadata.deletion_timestamp.is_none()
        })
    }
}
