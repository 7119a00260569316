//! [`Configuration`]: parameter values, runtime settings and pod settings of an app's
//! streamlets, as layers that stack.
//!
//! A layer comes from a configuration file ([`Configuration::parse_file`], format in
//! `docs/kubernetes.md`) or from `key=value` arguments ([`Configuration::assign`]). Layers
//! stack with [`Configuration::overlay`]: a later layer wins key by key and never removes
//! what it does not mention, so a redeploy or a `configure` keeps every value the user did
//! not change. [`check`](Configuration::check) validates a layer against the blueprint and
//! the descriptor and lists every problem at once.

mod assignment;
mod check;
mod file;
mod resolve;
mod scheduling;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use check::Problem;
pub use resolve::{Autoscaling, DEFAULT_COOLDOWN, ResolvedStreamlet};
pub use scheduling::{
    Affinity, LabelSelector, NodeAffinity, NodeSelector, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PreferredSchedulingTerm, SelectorRequirement, Toleration,
    WeightedPodAffinityTerm,
};

use crate::secret::is_secret;

/// A configuration layer: every field optional, maps merged key by key.
///
/// ```
/// use runnel_application::Configuration;
/// let mut deployed = Configuration::default();
/// deployed.assign("generator.records-per-second=5")?;
/// deployed.assign("runtime.log-level=info")?;
/// let mut change = Configuration::default();
/// change.assign("runtime.log-level=debug")?;
/// deployed.overlay(&change);
/// assert_eq!(deployed.log_level.as_deref(), Some("debug"));
/// assert_eq!(deployed.streamlets["generator"].parameters["records-per-second"], "5");
/// # Ok::<(), runnel_application::Problem>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// Kafka client settings (librdkafka names) for every streamlet.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kafka: BTreeMap<String, String>,
    /// The log level of every streamlet: `error`, `warn`, `info`, `debug` or `trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// Per streamlet instance.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub streamlets: BTreeMap<String, StreamletConfiguration>,
}

/// The configuration of one streamlet instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamletConfiguration {
    /// Parameter values, as text in the parameter's syntax.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Kafka client settings for this streamlet, over the app-wide ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kafka: BTreeMap<String, String>,
    /// This streamlet's log level, over the app-wide one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// Pod settings.
    #[serde(default, skip_serializing_if = "PodSettings::is_empty")]
    pub pod: PodSettings,
    /// Lag-based autoscaling.
    #[serde(default, skip_serializing_if = "ScalingSettings::is_empty")]
    pub scaling: ScalingSettings,
}

/// Settings of the pods that run a streamlet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSettings {
    /// CPU and memory requests and limits.
    #[serde(default, skip_serializing_if = "ResourceSettings::is_empty")]
    pub resources: ResourceSettings,
    /// Extra labels on the pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra annotations on the pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Environment variables of the container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// PersistentVolumeClaims bound to the volume mounts the streamlet declares: mount name
    /// to claim name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub volumes: BTreeMap<String, String>,
    /// The port the streamlet serves HTTP on; the operator exposes it with a Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub http_port: Option<u16>,
    /// Taints of nodes the pods tolerate. A layer that sets them replaces the earlier
    /// layers' list whole (an empty list clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Node labels a node must have for the pods to run on it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Node and pod affinity and anti-affinity. A layer that sets it replaces the earlier
    /// layers' whole (an empty object clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// The service account the pods run as; its token is then mounted (without one the
    /// pods get no token: a streamlet needs no Kubernetes API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// Requests and limits, as Kubernetes quantities (`250m`, `64Mi`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSettings {
    /// What the scheduler reserves.
    #[serde(default, skip_serializing_if = "Quantities::is_empty")]
    pub requests: Quantities,
    /// What the container may use at most.
    #[serde(default, skip_serializing_if = "Quantities::is_empty")]
    pub limits: Quantities,
}

/// CPU and memory quantities.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quantities {
    /// CPU, such as `250m` or `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory, such as `64Mi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// Lag-based autoscaling of one streamlet; on when `max_replicas` is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingSettings {
    /// The fewest replicas (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_replicas: Option<i32>,
    /// The most replicas; never more than the partitions of the streamlet's inlet topics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_replicas: Option<i32>,
    /// The consumer lag in records one replica should carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub target_lag: Option<i64>,
    /// The lag in seconds of input (lag divided by the input rate) the streamlet should
    /// stay under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub target_lag_seconds: Option<i64>,
    /// How long to wait after a change before the next one (default `2m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<String>,
    /// Whether something else (a HorizontalPodAutoscaler) sets the replicas: the operator
    /// then leaves the Deployment's `spec.replicas` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
}

impl Configuration {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Configuration::default()
    }

    /// Puts `other` over this layer: its values win, what it does not set stays.
    pub fn overlay(&mut self, other: &Configuration) {
        self.kafka.extend(other.kafka.clone());
        overlay_option(&mut self.log_level, &other.log_level);
        for (name, streamlet) in &other.streamlets {
            self.streamlets
                .entry(name.clone())
                .or_default()
                .overlay(streamlet);
        }
    }

    /// Splits the layer into what may be stored in the Application (first) and the secret
    /// values (second): Kafka settings, parameters and environment variables whose name
    /// says password, secret, token, credential or private key.
    pub fn split_secrets(&self) -> (Configuration, Configuration) {
        let mut public = self.clone();
        let mut secret = Configuration::default();
        take_secrets(&mut public.kafka, &mut secret.kafka);
        for (name, streamlet) in &mut public.streamlets {
            let mut hidden = StreamletConfiguration::default();
            take_secrets(&mut streamlet.parameters, &mut hidden.parameters);
            take_secrets(&mut streamlet.kafka, &mut hidden.kafka);
            take_secrets(&mut streamlet.pod.env, &mut hidden.pod.env);
            if hidden != StreamletConfiguration::default() {
                secret.streamlets.insert(name.clone(), hidden);
            }
        }
        public
            .streamlets
            .retain(|_, streamlet| *streamlet != StreamletConfiguration::default());
        (public, secret)
    }

    /// Whether any value is a secret (see [`split_secrets`](Configuration::split_secrets)).
    pub fn has_secrets(&self) -> bool {
        !self.split_secrets().1.is_empty()
    }

    /// The same layer with every secret value replaced by `[redacted]`.
    pub fn masked(&self) -> Configuration {
        let (mut public, secret) = self.split_secrets();
        let mask = |map: &BTreeMap<String, String>, into: &mut BTreeMap<String, String>| {
            for key in map.keys() {
                into.insert(key.clone(), crate::secret::MASK.to_owned());
            }
        };
        mask(&secret.kafka, &mut public.kafka);
        for (name, hidden) in &secret.streamlets {
            let streamlet = public.streamlets.entry(name.clone()).or_default();
            mask(&hidden.parameters, &mut streamlet.parameters);
            mask(&hidden.kafka, &mut streamlet.kafka);
            mask(&hidden.pod.env, &mut streamlet.pod.env);
        }
        public
    }

    /// Drops the settings of streamlet instances `keep` does not accept (instances that are
    /// gone from the blueprint) and returns their names.
    pub fn retain_streamlets(&mut self, mut keep: impl FnMut(&str) -> bool) -> Vec<String> {
        let mut dropped = Vec::new();
        self.streamlets.retain(|name, _| {
            let kept = keep(name);
            if !kept {
                dropped.push(name.clone());
            }
            kept
        });
        dropped
    }
}

impl StreamletConfiguration {
    /// Puts `other` over this one.
    pub fn overlay(&mut self, other: &StreamletConfiguration) {
        self.parameters.extend(other.parameters.clone());
        self.kafka.extend(other.kafka.clone());
        overlay_option(&mut self.log_level, &other.log_level);
        let (pod, theirs) = (&mut self.pod, &other.pod);
        overlay_option(
            &mut pod.resources.requests.cpu,
            &theirs.resources.requests.cpu,
        );
        overlay_option(
            &mut pod.resources.requests.memory,
            &theirs.resources.requests.memory,
        );
        overlay_option(&mut pod.resources.limits.cpu, &theirs.resources.limits.cpu);
        overlay_option(
            &mut pod.resources.limits.memory,
            &theirs.resources.limits.memory,
        );
        pod.labels.extend(theirs.labels.clone());
        pod.annotations.extend(theirs.annotations.clone());
        pod.env.extend(theirs.env.clone());
        pod.volumes.extend(theirs.volumes.clone());
        overlay_option(&mut pod.http_port, &theirs.http_port);
        overlay_option(&mut pod.tolerations, &theirs.tolerations);
        pod.node_selector.extend(theirs.node_selector.clone());
        overlay_option(&mut pod.affinity, &theirs.affinity);
        overlay_option(&mut pod.service_account_name, &theirs.service_account_name);
        let (scaling, theirs) = (&mut self.scaling, &other.scaling);
        overlay_option(&mut scaling.min_replicas, &theirs.min_replicas);
        overlay_option(&mut scaling.max_replicas, &theirs.max_replicas);
        overlay_option(&mut scaling.target_lag, &theirs.target_lag);
        overlay_option(&mut scaling.target_lag_seconds, &theirs.target_lag_seconds);
        overlay_option(&mut scaling.cooldown, &theirs.cooldown);
        overlay_option(&mut scaling.external, &theirs.external);
    }
}

impl PodSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == PodSettings::default()
    }
}

impl ResourceSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ResourceSettings::default()
    }
}

impl Quantities {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Quantities::default()
    }
}

impl ScalingSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ScalingSettings::default()
    }
}

fn overlay_option<T: Clone>(mine: &mut Option<T>, theirs: &Option<T>) {
    if let Some(value) = theirs {
        *mine = Some(value.clone());
    }
}

fn take_secrets(from: &mut BTreeMap<String, String>, into: &mut BTreeMap<String, String>) {
    let secret: Vec<String> = from.keys().filter(|key| is_secret(key)).cloned().collect();
    for key in secret {
        if let Some(value) = from.remove(&key) {
            into.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(assignments: &[&str]) -> Configuration {
        let mut configuration = Configuration::default();
        for assignment in assignments {
            configuration.assign(assignment).unwrap();
        }
        configuration
    }

    #[test]
    fn later_layers_win_key_by_key_and_keep_the_rest() {
        let mut deployed = layer(&[
            "generator.count=10",
            "generator.devices=4",
            "pods.generator.resources.limits.memory=64Mi",
            "kafka.linger.ms=5",
        ]);
        deployed.overlay(&layer(&[
            "generator.count=20",
            "pods.generator.resources.requests.cpu=100m",
        ]));
        let generator = &deployed.streamlets["generator"];
        assert_eq!(generator.parameters["count"], "20");
        assert_eq!(generator.parameters["devices"], "4");
        assert_eq!(
            generator.pod.resources.limits.memory.as_deref(),
            Some("64Mi")
        );
        assert_eq!(
            generator.pod.resources.requests.cpu.as_deref(),
            Some("100m")
        );
        assert_eq!(deployed.kafka["linger.ms"], "5");
    }

    #[test]
    fn secrets_are_split_off_and_masked() {
        let configuration = layer(&[
            "kafka.sasl.password=hunter2",
            "kafka.security.protocol=SASL_SSL",
            "source.api-token=abc",
            "source.rate=5",
            "pods.source.env.DB_PASSWORD=pw",
            "pods.source.env.MODE=fast",
        ]);
        let (public, secret) = configuration.split_secrets();
        assert!(!serde_json::to_string(&public).unwrap().contains("hunter2"));
        assert_eq!(secret.kafka["sasl.password"], "hunter2");
        assert_eq!(secret.streamlets["source"].parameters["api-token"], "abc");
        assert_eq!(secret.streamlets["source"].pod.env["DB_PASSWORD"], "pw");
        assert_eq!(public.streamlets["source"].parameters["rate"], "5");
        let mut joined = public.clone();
        joined.overlay(&secret);
        assert_eq!(joined, configuration);
        let masked = configuration.masked();
        assert_eq!(masked.kafka["sasl.password"], "[redacted]");
        assert_eq!(masked.streamlets["source"].pod.env["MODE"], "fast");
        assert_eq!(
            masked.streamlets["source"].parameters["api-token"],
            "[redacted]"
        );
    }
}
