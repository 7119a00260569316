//! [`ApplicationSpec`]: what a user asks the cluster to run.

use std::collections::BTreeMap;

use runnel_blueprint::descriptor::AppDescriptor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Configuration;

/// The API group of the Application resource.
pub const GROUP: &str = "runnel.dev";
/// The version of the Application resource.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of Application objects: `runnel.dev/v1alpha1`.
pub const API_VERSION: &str = "runnel.dev/v1alpha1";
/// The kind.
pub const KIND: &str = "Application";
/// The plural used in API paths.
pub const PLURAL: &str = "applications";

/// The protocol between the `runnel` CLI (which writes Applications) and the operator (which
/// reads them). It changes whenever one side writes something the other side of the
/// previous protocol would misread; both refuse a mismatch and say which side to upgrade.
pub const PROTOCOL_VERSION: u32 = 1;

/// The desired state of one Runnel app on a cluster: which image runs it, the blueprint and
/// descriptor it was built with, the streamlets with their replicas, the topics, and the
/// configuration.
///
/// `app build` writes it (with [`ApplicationDocument`](crate::ApplicationDocument)); `runnel
/// deploy` adds the user's configuration and creates it; the operator turns it into topics,
/// ConfigMaps, Secrets, Deployments and Services.
///
/// ```
/// use runnel_application::ApplicationSpec;
/// let spec: ApplicationSpec = serde_json::from_value(serde_json::json!({
///     "protocolVersion": 1, "version": "0.1.0", "image": "registry.example/app:0.1.0",
///     "blueprint": "name = \"app\"",
///     "descriptor": {"descriptor-version": 1, "app": "app", "streamlets": []},
///     "streamlets": [{"name": "gen", "type": "generator"}],
///     "topics": []
/// }))?;
/// assert_eq!(spec.streamlets[0].replicas, 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The protocol version of the `runnel` that wrote this spec (see `runnel version`).
    pub protocol_version: u32,
    /// The app's version (shown by `runnel list`, set as `app.kubernetes.io/version`).
    pub version: String,
    /// The image reference every streamlet's pod runs, `registry/name:tag`.
    pub image: String,
    /// Secrets in the namespace that hold credentials for pulling the image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<String>,
    /// The blueprint (`blueprint.toml`) as text.
    pub blueprint: String,
    /// The app descriptor (`app describe`), which the blueprint and the configuration are
    /// checked against.
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub descriptor: AppDescriptor,
    /// The streamlet instances of the blueprint, with their replicas.
    pub streamlets: Vec<StreamletSpec>,
    /// The topics of the blueprint.
    pub topics: Vec<TopicSpec>,
    /// Which Kafka cluster the app uses.
    #[serde(default, skip_serializing_if = "KafkaSpec::is_default")]
    pub kafka: KafkaSpec,
    /// Configuration that came with the app (`app build --conf`); replaced by every deploy.
    #[serde(default, skip_serializing_if = "Configuration::is_empty")]
    pub defaults: Configuration,
    /// Configuration the user set with `runnel deploy` and `runnel configure`; kept across
    /// deploys, wins over `defaults`. Holds no secret values.
    #[serde(default, skip_serializing_if = "Configuration::is_empty")]
    pub configuration: Configuration,
    /// The Secret (in the Application's namespace) that holds the secret values of the
    /// user's configuration, as a configuration file under the key `configuration.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_configuration: Option<String>,
    /// Whether the app is suspended (`runnel suspend`): the operator keeps every object
    /// and runs every streamlet with 0 replicas, autoscaled ones included; set back to
    /// false (`runnel resume`), the streamlets run their replicas again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspended: bool,
    /// Rollback to the last spec that ran when a new one does not become ready in time;
    /// off when unset (as in Flink's operator), on with `rollback: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackSpec>,
}

/// When to roll back a new spec (a new `metadata.generation`): if its streamlets are not
/// all ready `readinessTimeoutSeconds` after the operator first applied it, the operator
/// applies the objects of the last spec that ran (`status.lastRunningSpec`) again and does
/// not try that generation again; the next spec change is tried afresh.
///
/// ```
/// use runnel_application::RollbackSpec;
/// let rollback: RollbackSpec = serde_json::from_value(serde_json::json!({}))?;
/// assert_eq!(rollback.readiness_timeout_seconds, 300);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackSpec {
    /// How long a new spec's streamlets have to become ready, counted from when the
    /// operator first applied it; 300 (5 minutes, Flink's readiness timeout) when unset.
    #[serde(default = "default_readiness_timeout")]
    #[schemars(range(min = 1))]
    pub readiness_timeout_seconds: u32,
}

impl Default for RollbackSpec {
    fn default() -> Self {
        RollbackSpec {
            readiness_timeout_seconds: default_readiness_timeout(),
        }
    }
}

fn default_readiness_timeout() -> u32 {
    300
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl ApplicationSpec {
    /// The streamlet instance called `name`.
    pub fn streamlet(&self, name: &str) -> Option<&StreamletSpec> {
        self.streamlets
            .iter()
            .find(|streamlet| streamlet.name == name)
    }

    /// The most partitions of any topic the streamlet instance `name` reads, or `None` when
    /// it reads none. Replicas beyond it hold no partition: they stay idle.
    ///
    /// ```
    /// use runnel_application::{ApplicationSpec, TopicSpec};
    /// let spec = ApplicationSpec {
    ///     topics: vec![
    ///         TopicSpec { name: "a".into(), partitions: 2, consumers: vec!["count.in".into()], ..TopicSpec::default() },
    ///         TopicSpec { name: "b".into(), partitions: 3, consumers: vec!["count.other".into()], ..TopicSpec::default() },
    ///     ],
    ///     ..ApplicationSpec::default()
    /// };
    /// assert_eq!(spec.inlet_partitions("count"), Some(3));
    /// assert_eq!(spec.inlet_partitions("source"), None);
    /// ```
    pub fn inlet_partitions(&self, name: &str) -> Option<i32> {
        self.topics
            .iter()
            .filter(|topic| {
                topic.consumers.iter().any(|inlet| {
                    inlet
                        .split_once('.')
                        .is_some_and(|(instance, _)| instance == name)
                })
            })
            .map(|topic| topic.partitions.max(1))
            .max()
    }

    /// The user's configuration over the app's defaults (secret values not included).
    pub fn effective_configuration(&self) -> Configuration {
        let mut configuration = self.defaults.clone();
        configuration.overlay(&self.configuration);
        configuration
    }
}

/// A streamlet instance and how many pods run it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamletSpec {
    /// The instance name from the blueprint.
    pub name: String,
    /// The streamlet type it runs.
    #[serde(rename = "type")]
    pub type_name: String,
    /// How many pods run it (`runnel scale`); an autoscaled streamlet starts with this many.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
}

fn one() -> i32 {
    1
}

/// A topic of the blueprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopicSpec {
    /// The topic's name on Kafka.
    pub name: String,
    /// The partition count to create it with (the blueprint's, else 1, as `app run` does).
    #[schemars(range(min = 1))]
    pub partitions: i32,
    /// The replication factor to create it with; the broker's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub replication_factor: Option<i32>,
    /// Whether the operator creates it (it never deletes topics).
    pub managed: bool,
    /// Topic settings with Kafka's names (`retention.ms`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// The outlets that write it, `instance.port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub producers: Vec<String>,
    /// The inlets that read it, `instance.port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumers: Vec<String>,
}

/// The Kafka cluster of an app.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KafkaSpec {
    /// Bootstrap servers, `host:port[,host:port...]`; the operator's `--kafka` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_servers: Option<String>,
}

impl KafkaSpec {
    /// Whether nothing is set.
    pub fn is_default(&self) -> bool {
        *self == KafkaSpec::default()
    }
}
