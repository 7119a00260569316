//! What one streamlet instance gets from the layers: [`ResolvedStreamlet`], and the
//! `local.toml`-format file its pod reads.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::{Configuration, PodSettings};
use crate::secret::is_secret;

/// The default cool-down between two autoscaling decisions.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(120);

/// One streamlet instance's settings, with app-wide values applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvedStreamlet {
    /// Parameter values set by the configuration (the app applies the descriptor's defaults
    /// to the rest).
    pub parameters: BTreeMap<String, String>,
    /// Kafka client settings: the app's, then the streamlet's.
    pub kafka: BTreeMap<String, String>,
    /// The log level: the streamlet's, else the app's, else `info`.
    pub log_level: String,
    /// Pod settings.
    pub pod: PodSettings,
    /// Autoscaling, when a maximum is set.
    pub autoscaling: Option<Autoscaling>,
    /// Whether another autoscaler (an HPA) sets the replicas.
    pub external_scaling: bool,
}

/// Lag-based autoscaling bounds and targets of one streamlet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Autoscaling {
    /// The fewest replicas.
    pub min_replicas: i32,
    /// The most replicas.
    pub max_replicas: i32,
    /// Records of lag per replica.
    pub target_lag: Option<i64>,
    /// Seconds of lag the streamlet should stay under.
    pub target_lag_seconds: Option<i64>,
    /// The wait after a change.
    pub cooldown: Duration,
}

#[derive(Serialize)]
struct LocalFile<'a> {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    streamlets: BTreeMap<&'a str, BTreeMap<&'a str, &'a str>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    kafka: BTreeMap<&'a str, &'a str>,
}

impl Configuration {
    /// The settings of streamlet `instance`.
    ///
    /// ```
    /// use runnel_application::Configuration;
    /// let mut configuration = Configuration::default();
    /// configuration.assign("kafka.linger.ms=5")?;
    /// configuration.assign("runtime.streamlets.gen.kafka.linger.ms=1")?;
    /// configuration.assign("runtime.log-level=warn")?;
    /// let resolved = configuration.resolve("gen");
    /// assert_eq!((resolved.kafka["linger.ms"].as_str(), resolved.log_level.as_str()), ("1", "warn"));
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    pub fn resolve(&self, instance: &str) -> ResolvedStreamlet {
        let streamlet = self.streamlets.get(instance).cloned().unwrap_or_default();
        let mut kafka = self.kafka.clone();
        kafka.extend(streamlet.kafka.clone());
        let log_level = streamlet
            .log_level
            .clone()
            .or_else(|| self.log_level.clone())
            .unwrap_or_else(|| "info".to_owned())
            .trim()
            .to_ascii_lowercase();
        let scaling = &streamlet.scaling;
        let autoscaling = scaling.max_replicas.map(|max_replicas| Autoscaling {
            min_replicas: scaling.min_replicas.unwrap_or(1),
            max_replicas,
            target_lag: scaling.target_lag,
            target_lag_seconds: scaling.target_lag_seconds,
            cooldown: scaling
                .cooldown
                .as_deref()
                .and_then(|text| humantime::parse_duration(text.trim()).ok())
                .unwrap_or(DEFAULT_COOLDOWN),
        });
        ResolvedStreamlet {
            parameters: streamlet.parameters,
            kafka,
            log_level,
            pod: streamlet.pod,
            autoscaling,
            external_scaling: scaling.external == Some(true),
        }
    }
}

impl ResolvedStreamlet {
    /// The configuration file (`local.toml` format: `[streamlets.<instance>]` and `[kafka]`)
    /// that `app run-streamlet --config` reads in the pod: the public values, or with
    /// `secrets` only the secret ones.
    ///
    /// ```
    /// use runnel_application::Configuration;
    /// let mut configuration = Configuration::default();
    /// configuration.assign("gen.count=5")?;
    /// configuration.assign("kafka.sasl.password=hunter2")?;
    /// let resolved = configuration.resolve("gen");
    /// assert_eq!(resolved.config_file("gen", false), "[streamlets.gen]\ncount = \"5\"\n");
    /// assert_eq!(resolved.config_file("gen", true), "[kafka]\n\"sasl.password\" = \"hunter2\"\n");
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    pub fn config_file(&self, instance: &str, secrets: bool) -> String {
        let wanted = |key: &str| is_secret(key) == secrets;
        let parameters: BTreeMap<&str, &str> = self
            .parameters
            .iter()
            .filter(|(key, _)| wanted(key))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut streamlets = BTreeMap::new();
        if !parameters.is_empty() {
            streamlets.insert(instance, parameters);
        }
        let kafka = self
            .kafka
            .iter()
            .filter(|(key, _)| wanted(key))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        toml::to_string(&LocalFile { streamlets, kafka }).expect("strings always serialize")
    }

    /// The environment variables of the container: the public ones, or with `secrets` only
    /// the secret ones.
    pub fn env(&self, secrets: bool) -> BTreeMap<String, String> {
        self.pod
            .env
            .iter()
            .filter(|(key, _)| is_secret(key) == secrets)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
