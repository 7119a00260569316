//! Configuration files: TOML, a superset of the `local.toml` an app reads for local runs.
//!
//! ```toml
//! [streamlets.generator]            # parameter values, as in local.toml
//! records-per-second = 100
//!
//! [kafka]                           # Kafka client settings of every streamlet, as in local.toml
//! "linger.ms" = 20
//!
//! [runtime]
//! log-level = "info"                # every streamlet
//! [runtime.streamlets.generator]
//! log-level = "debug"               # one streamlet
//! kafka = { "batch.size" = 65536 }
//!
//! [pods.generator]
//! resources = { requests = { cpu = "100m", memory = "64Mi" }, limits = { memory = "256Mi" } }
//! labels = { team = "sensors" }
//! env = { RUST_BACKTRACE = "1" }
//! volumes = { data = "generator-data" }   # declared volume mount -> PersistentVolumeClaim
//! http-port = 8080
//! node-selector = { "kubernetes.io/arch" = "amd64" }
//! tolerations = [{ key = "dedicated", operator = "Equal", value = "streaming", effect = "NoSchedule" }]
//! service-account-name = "generator"
//! # Kubernetes' Affinity, with its field names
//! [[pods.generator.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution]]
//! weight = 100
//! podAffinityTerm = { topologyKey = "kubernetes.io/hostname", labelSelector = { matchLabels = { "runnel.dev/streamlet" = "generator" } } }
//!
//! [scaling.to-metrics]
//! min-replicas = 1
//! max-replicas = 4
//! target-lag = 1000
//! cooldown = "2m"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::scheduling::read_strict;
use super::{
    Configuration, PodSettings, Problem, Quantities, ResourceSettings, ScalingSettings,
    StreamletConfiguration,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    streamlets: BTreeMap<String, BTreeMap<String, toml::Value>>,
    #[serde(default)]
    kafka: BTreeMap<String, toml::Value>,
    #[serde(default)]
    runtime: RuntimeFile,
    #[serde(default)]
    pods: BTreeMap<String, PodFile>,
    #[serde(default)]
    scaling: BTreeMap<String, ScalingFile>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RuntimeFile {
    log_level: Option<String>,
    #[serde(default)]
    streamlets: BTreeMap<String, StreamletRuntimeFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct StreamletRuntimeFile {
    log_level: Option<String>,
    #[serde(default)]
    kafka: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PodFile {
    #[serde(default)]
    resources: ResourcesFile,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    env: BTreeMap<String, toml::Value>,
    #[serde(default)]
    volumes: BTreeMap<String, String>,
    http_port: Option<u16>,
    tolerations: Option<toml::Value>,
    #[serde(default)]
    node_selector: BTreeMap<String, String>,
    affinity: Option<toml::Value>,
    service_account_name: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourcesFile {
    #[serde(default)]
    requests: QuantitiesFile,
    #[serde(default)]
    limits: QuantitiesFile,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuantitiesFile {
    cpu: Option<toml::Value>,
    memory: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ScalingFile {
    min_replicas: Option<i32>,
    max_replicas: Option<i32>,
    target_lag: Option<i64>,
    target_lag_seconds: Option<i64>,
    cooldown: Option<String>,
    external: Option<bool>,
}

impl Configuration {
    /// Reads a configuration file's text; `path` is for messages.
    ///
    /// ```
    /// use std::path::Path;
    /// use runnel_application::Configuration;
    /// let text = "[streamlets.generator]\ncount = 10\n[pods.generator]\nresources = { limits = { memory = \"64Mi\" } }\n";
    /// let configuration = Configuration::parse_file(Path::new("prod.toml"), text)?;
    /// assert_eq!(configuration.streamlets["generator"].parameters["count"], "10");
    /// let error = Configuration::parse_file(Path::new("prod.toml"), "[pod.generator]\n").unwrap_err();
    /// assert!(error.to_string().starts_with("prod.toml: TOML parse error at line 1, column 2"), "{error}");
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the text is not TOML of the documented shape (unknown tables and keys included),
    /// with the line and column.
    pub fn parse_file(path: &Path, text: &str) -> Result<Configuration, Problem> {
        let place = || path.display().to_string();
        let file: File = toml::from_str(text)
            .map_err(|error| Problem::new(place(), error.to_string().trim_end().to_owned()))?;
        let mut configuration = Configuration {
            kafka: flatten_settings(&file.kafka).map_err(|key| {
                Problem::new(place(), format!("kafka setting '{key}' {NOT_SCALAR}"))
            })?,
            log_level: file.runtime.log_level,
            streamlets: BTreeMap::new(),
        };
        fn streamlet<'a>(
            configuration: &'a mut Configuration,
            name: &str,
        ) -> &'a mut StreamletConfiguration {
            configuration.streamlets.entry(name.to_owned()).or_default()
        }
        for (name, values) in &file.streamlets {
            let mut parameters = BTreeMap::new();
            for (key, value) in values {
                let text = scalar(value).ok_or_else(|| {
                    Problem::new(
                        place(),
                        format!("streamlets.{name}.{key} must be a string, number or boolean"),
                    )
                })?;
                parameters.insert(key.clone(), text);
            }
            streamlet(&mut configuration, name).parameters = parameters;
        }
        for (name, runtime) in &file.runtime.streamlets {
            let settings = flatten_settings(&runtime.kafka).map_err(|key| {
                Problem::new(
                    place(),
                    format!("runtime.streamlets.{name}.kafka setting '{key}' {NOT_SCALAR}"),
                )
            })?;
            let streamlet = streamlet(&mut configuration, name);
            streamlet.log_level = runtime.log_level.clone();
            streamlet.kafka = settings;
        }
        for (name, pod) in file.pods {
            let mut env = BTreeMap::new();
            for (key, value) in &pod.env {
                let text = scalar(value).ok_or_else(|| {
                    Problem::new(place(), format!("pods.{name}.env.{key} {NOT_SCALAR}"))
                })?;
                env.insert(key.clone(), text);
            }
            let cpu = |value: &Option<toml::Value>| value.as_ref().and_then(scalar);
            let tolerations = pod
                .tolerations
                .map(|value| {
                    read_strict(&format!("pods.{name}.tolerations"), json_of(&value))
                        .map_err(|message| Problem::new(place(), message))
                })
                .transpose()?;
            let affinity = pod
                .affinity
                .map(|value| {
                    read_strict(&format!("pods.{name}.affinity"), json_of(&value))
                        .map_err(|message| Problem::new(place(), message))
                })
                .transpose()?;
            streamlet(&mut configuration, &name).pod = PodSettings {
                resources: ResourceSettings {
                    requests: Quantities {
                        cpu: cpu(&pod.resources.requests.cpu),
                        memory: pod.resources.requests.memory,
                    },
                    limits: Quantities {
                        cpu: cpu(&pod.resources.limits.cpu),
                        memory: pod.resources.limits.memory,
                    },
                },
                labels: pod.labels,
                annotations: pod.annotations,
                env,
                volumes: pod.volumes,
                http_port: pod.http_port,
                tolerations,
                node_selector: pod.node_selector,
                affinity,
                service_account_name: pod.service_account_name,
            };
        }
        for (name, scaling) in file.scaling {
            streamlet(&mut configuration, &name).scaling = ScalingSettings {
                min_replicas: scaling.min_replicas,
                max_replicas: scaling.max_replicas,
                target_lag: scaling.target_lag,
                target_lag_seconds: scaling.target_lag_seconds,
                cooldown: scaling.cooldown,
                external: scaling.external,
            };
        }
        Ok(configuration)
    }
}

impl Configuration {
    /// The layer as a configuration file, which [`parse_file`](Configuration::parse_file)
    /// reads back as the same layer.
    ///
    /// ```
    /// use std::path::Path;
    /// use runnel_application::Configuration;
    /// let mut configuration = Configuration::default();
    /// configuration.assign("kafka.sasl.password=hunter2")?;
    /// configuration.assign("pods.gen.env.TOKEN=abc")?;
    /// let text = configuration.to_file();
    /// assert_eq!(Configuration::parse_file(Path::new("secret"), &text)?, configuration);
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    pub fn to_file(&self) -> String {
        use toml::{Table, Value};
        fn strings(map: &BTreeMap<String, String>) -> Table {
            map.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect()
        }
        let mut root = Table::new();
        let mut streamlets = Table::new();
        let mut runtime = Table::new();
        let mut runtime_streamlets = Table::new();
        let mut pods = Table::new();
        let mut scaling = Table::new();
        if let Some(level) = &self.log_level {
            runtime.insert("log-level".into(), Value::String(level.clone()));
        }
        for (name, streamlet) in &self.streamlets {
            if !streamlet.parameters.is_empty() {
                streamlets.insert(name.clone(), Value::Table(strings(&streamlet.parameters)));
            }
            let mut own = Table::new();
            if let Some(level) = &streamlet.log_level {
                own.insert("log-level".into(), Value::String(level.clone()));
            }
            if !streamlet.kafka.is_empty() {
                own.insert("kafka".into(), Value::Table(strings(&streamlet.kafka)));
            }
            if !own.is_empty() {
                runtime_streamlets.insert(name.clone(), Value::Table(own));
            }
            let pod = &streamlet.pod;
            let mut table = Table::new();
            let mut resources = Table::new();
            for (what, quantities) in [
                ("requests", &pod.resources.requests),
                ("limits", &pod.resources.limits),
            ] {
                let mut inner = Table::new();
                if let Some(cpu) = &quantities.cpu {
                    inner.insert("cpu".into(), Value::String(cpu.clone()));
                }
                if let Some(memory) = &quantities.memory {
                    inner.insert("memory".into(), Value::String(memory.clone()));
                }
                if !inner.is_empty() {
                    resources.insert(what.into(), Value::Table(inner));
                }
            }
            if !resources.is_empty() {
                table.insert("resources".into(), Value::Table(resources));
            }
            for (what, map) in [
                ("labels", &pod.labels),
                ("annotations", &pod.annotations),
                ("env", &pod.env),
                ("volumes", &pod.volumes),
            ] {
                if !map.is_empty() {
                    table.insert(what.into(), Value::Table(strings(map)));
                }
            }
            if let Some(port) = pod.http_port {
                table.insert("http-port".into(), Value::Integer(i64::from(port)));
            }
            if !pod.node_selector.is_empty() {
                table.insert(
                    "node-selector".into(),
                    Value::Table(strings(&pod.node_selector)),
                );
            }
            if let Some(tolerations) = &pod.tolerations {
                table.insert(
                    "tolerations".into(),
                    Value::try_from(tolerations).expect("tolerations are TOML values"),
                );
            }
            if let Some(affinity) = &pod.affinity {
                table.insert(
                    "affinity".into(),
                    Value::try_from(affinity).expect("an affinity is a TOML value"),
                );
            }
            if let Some(account) = &pod.service_account_name {
                table.insert(
                    "service-account-name".into(),
                    Value::String(account.clone()),
                );
            }
            if !table.is_empty() {
                pods.insert(name.clone(), Value::Table(table));
            }
            let settings = &streamlet.scaling;
            let mut table = Table::new();
            for (what, value) in [
                ("min-replicas", settings.min_replicas.map(i64::from)),
                ("max-replicas", settings.max_replicas.map(i64::from)),
                ("target-lag", settings.target_lag),
                ("target-lag-seconds", settings.target_lag_seconds),
            ] {
                if let Some(value) = value {
                    table.insert(what.into(), Value::Integer(value));
                }
            }
            if let Some(cooldown) = &settings.cooldown {
                table.insert("cooldown".into(), Value::String(cooldown.clone()));
            }
            if let Some(external) = settings.external {
                table.insert("external".into(), Value::Boolean(external));
            }
            if !table.is_empty() {
                scaling.insert(name.clone(), Value::Table(table));
            }
        }
        if !runtime_streamlets.is_empty() {
            runtime.insert("streamlets".into(), Value::Table(runtime_streamlets));
        }
        for (name, table) in [
            ("streamlets", streamlets),
            ("kafka", strings(&self.kafka)),
            ("runtime", runtime),
            ("pods", pods),
            ("scaling", scaling),
        ] {
            if !table.is_empty() {
                root.insert(name.into(), Value::Table(table));
            }
        }
        toml::to_string(&root).expect("a table always serializes")
    }
}

const NOT_SCALAR: &str = "must be a string, number or boolean";

/// A TOML value as the JSON value serde reads the same way.
fn json_of(value: &toml::Value) -> serde_json::Value {
    serde_json::to_value(value).expect("TOML values are JSON values")
}

/// A scalar TOML value as text.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(number) => Some(number.to_string()),
        toml::Value::Float(number) => Some(number.to_string()),
        toml::Value::Boolean(flag) => Some(flag.to_string()),
        toml::Value::Datetime(datetime) => Some(datetime.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

/// Kafka settings with dotted keys: `linger.ms = 5` is a nested table in TOML and means the
/// setting `linger.ms`, as in `local.toml`. The error is the offending key.
fn flatten_settings(
    table: &BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, String>, String> {
    fn walk(
        prefix: &str,
        table: &BTreeMap<String, toml::Value>,
        into: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        for (key, value) in table {
            let key = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            match value {
                toml::Value::Table(nested) => {
                    let nested: BTreeMap<String, toml::Value> =
                        nested.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    walk(&key, &nested, into)?;
                }
                other => {
                    into.insert(key.clone(), scalar(other).ok_or(key)?);
                }
            }
        }
        Ok(())
    }
    let mut settings = BTreeMap::new();
    walk("", table, &mut settings)?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
[streamlets.generator]
records-per-second = 100
enabled = true

[kafka]
"linger.ms" = 20
security.protocol = "SSL"

[runtime]
log-level = "info"
[runtime.streamlets.generator]
log-level = "debug"
kafka = { "batch.size" = 65536 }

[pods.generator]
resources = { requests = { cpu = 0.5, memory = "64Mi" }, limits = { memory = "256Mi" } }
labels = { team = "sensors" }
env = { RUST_BACKTRACE = 1 }
volumes = { data = "generator-data" }
http-port = 8080
node-selector = { "kubernetes.io/arch" = "amd64" }
tolerations = [{ key = "dedicated", operator = "Equal", value = "streaming", effect = "NoSchedule" }]
service-account-name = "generator"
[[pods.generator.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution]]
weight = 100
podAffinityTerm = { topologyKey = "kubernetes.io/hostname", labelSelector = { matchLabels = { "runnel.dev/streamlet" = "generator" } } }

[scaling.to-metrics]
max-replicas = 4
target-lag = 1000
"#;

    #[test]
    fn the_documented_example_reads_as_the_same_values_as_key_value_arguments() {
        let from_file = Configuration::parse_file(Path::new("c.toml"), EXAMPLE).unwrap();
        let mut from_arguments = Configuration::default();
        for assignment in [
            "generator.records-per-second=100",
            "generator.enabled=true",
            "kafka.linger.ms=20",
            "kafka.security.protocol=SSL",
            "runtime.log-level=info",
            "runtime.streamlets.generator.log-level=debug",
            "runtime.streamlets.generator.kafka.batch.size=65536",
            "pods.generator.resources.requests.cpu=0.5",
            "pods.generator.resources.requests.memory=64Mi",
            "pods.generator.resources.limits.memory=256Mi",
            "pods.generator.labels.team=sensors",
            "pods.generator.env.RUST_BACKTRACE=1",
            "pods.generator.volumes.data=generator-data",
            "pods.generator.http-port=8080",
            "pods.generator.node-selector.kubernetes.io/arch=amd64",
            r#"pods.generator.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}]"#,
            "pods.generator.service-account-name=generator",
            r#"pods.generator.affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "generator"}}}}]}}"#,
            "scaling.to-metrics.max-replicas=4",
            "scaling.to-metrics.target-lag=1000",
        ] {
            from_arguments.assign(assignment).unwrap();
        }
        assert_eq!(from_file, from_arguments);
    }

    #[test]
    fn a_written_file_reads_back_as_the_same_layer() {
        let configuration = Configuration::parse_file(Path::new("c.toml"), EXAMPLE).unwrap();
        let text = configuration.to_file();
        assert_eq!(
            Configuration::parse_file(Path::new("again.toml"), &text).unwrap(),
            configuration,
            "{text}"
        );
    }

    #[test]
    fn unknown_keys_are_errors_with_their_position() {
        let error =
            Configuration::parse_file(Path::new("c.toml"), "[pods.generator]\nmemory = \"1Gi\"\n")
                .unwrap_err()
                .to_string();
        assert!(
            error.starts_with("c.toml: TOML parse error at line 2, column 1"),
            "{error}"
        );
        assert!(error.contains("unknown field `memory`"), "{error}");
    }

    #[test]
    fn structured_pod_settings_name_the_offending_field() {
        let error = Configuration::parse_file(
            Path::new("c.toml"),
            "[pods.gen]\ntolerations = [{ key = \"a\", operator = \"Exists\", efect = \"NoSchedule\" }]\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "c.toml: pods.gen.tolerations[0].efect: unknown field 'efect'"
        );
        let error = Configuration::parse_file(
            Path::new("c.toml"),
            "[pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution]\nnodeSelectorTerms = [{ matchExpressions = [{ key = \"zone\", values = [\"a\"] }] }]\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "c.toml: pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: missing field `operator`"
        );
        // An empty list or object in a later layer clears an earlier one's.
        let mut layered = Configuration::parse_file(Path::new("c.toml"), EXAMPLE).unwrap();
        let clearing = Configuration::parse_file(
            Path::new("d.toml"),
            "[pods.generator]\ntolerations = []\naffinity = {}\n",
        )
        .unwrap();
        layered.overlay(&clearing);
        let pod = &layered.streamlets["generator"].pod;
        assert_eq!(pod.tolerations.as_deref(), Some(&[][..]));
        assert!(pod.affinity.as_ref().unwrap().is_empty());
        assert_eq!(
            Configuration::parse_file(Path::new("e.toml"), &layered.to_file()).unwrap(),
            layered
        );
    }
}
