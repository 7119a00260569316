//! `key=value` arguments: one configuration value each, the key a dotted path that mirrors
//! the configuration file's tables.
//!
//! | key | sets |
//! |---|---|
//! | `streamlets.<instance>.<parameter>` or `<instance>.<parameter>` | a parameter value |
//! | `kafka.<setting>` | a Kafka client setting of every streamlet |
//! | `runtime.log-level` | the log level of every streamlet |
//! | `runtime.streamlets.<instance>.log-level` | one streamlet's log level |
//! | `runtime.streamlets.<instance>.kafka.<setting>` | one streamlet's Kafka setting |
//! | `pods.<instance>.resources.<requests\|limits>.<cpu\|memory>` | a resource quantity |
//! | `pods.<instance>.<labels\|annotations\|env\|volumes>.<name>` | a label, annotation, environment variable or volume claim |
//! | `pods.<instance>.http-port` | the port the streamlet serves HTTP on |
//! | `pods.<instance>.node-selector.<label>` | a node label the pods' nodes must have |
//! | `pods.<instance>.service-account-name` | the service account the pods run as |
//! | `pods.<instance>.<tolerations\|affinity>` | the whole list or object, as JSON or a TOML inline value |
//! | `scaling.<instance>.<min-replicas\|max-replicas\|target-lag\|target-lag-seconds\|cooldown>` | lag-based autoscaling |
//! | `scaling.<instance>.external` | `true` when an HPA sets the replicas |
//!
//! The short form `<instance>.<parameter>` is the one `app run --set` takes; an instance
//! named like one of the tables above needs the long form.

use super::scheduling::read_strict;
use super::{Configuration, Problem, StreamletConfiguration};

/// The first segments that name a table rather than an instance.
const TABLES: [&str; 5] = ["streamlets", "kafka", "runtime", "pods", "scaling"];

impl Configuration {
    /// Sets the one value `assignment` (`key=value`) names; see the module table for keys.
    ///
    /// ```
    /// use runnel_application::Configuration;
    /// let mut configuration = Configuration::default();
    /// configuration.assign("pods.generator.resources.limits.memory=128Mi")?;
    /// configuration.assign("kafka.linger.ms=5")?;
    /// assert_eq!(configuration.kafka["linger.ms"], "5");
    /// let error = configuration.assign("pods.generator.colour=red").unwrap_err();
    /// assert_eq!(error.to_string(), "argument 'pods.generator.colour=red': unknown pod setting 'colour' (known: resources.requests.cpu, resources.requests.memory, resources.limits.cpu, resources.limits.memory, labels.NAME, annotations.NAME, env.NAME, volumes.MOUNT, http-port, node-selector.LABEL, tolerations, affinity, service-account-name)");
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the argument has no `=`, the key names nothing, or a number does not parse.
    pub fn assign(&mut self, assignment: &str) -> Result<(), Problem> {
        let problem = |message: String| Problem::new(format!("argument '{assignment}'"), message);
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| problem("expected key=value".to_owned()))?;
        let key = key.trim();
        let segments: Vec<&str> = key.split('.').collect();
        if segments.iter().any(|segment| segment.is_empty()) {
            return Err(problem(format!("'{key}' has an empty part")));
        }
        let rest = |from: usize| segments[from..].join(".");
        let value = value.to_owned();
        match segments.as_slice() {
            ["kafka", _, ..] => {
                self.kafka.insert(rest(1), value);
            }
            ["runtime", "log-level"] => self.log_level = Some(value),
            ["runtime", "streamlets", instance, "log-level"] => {
                self.streamlet(instance).log_level = Some(value);
            }
            ["runtime", "streamlets", instance, "kafka", _, ..] => {
                self.streamlet(instance).kafka.insert(rest(4), value);
            }
            ["runtime", ..] => {
                return Err(problem(format!(
                    "unknown runtime setting '{}' (known: runtime.log-level, runtime.streamlets.INSTANCE.log-level, runtime.streamlets.INSTANCE.kafka.SETTING)",
                    rest(1)
                )));
            }
            ["pods", instance, setting @ ..] => {
                let setting = setting.join(".");
                assign_pod(self.streamlet(instance), instance, &setting, value).map_err(problem)?;
            }
            ["scaling", instance, setting] => {
                assign_scaling(self.streamlet(instance), setting, value).map_err(problem)?;
            }
            ["scaling", ..] => {
                return Err(problem(
                    "scaling keys are scaling.INSTANCE.SETTING".to_owned(),
                ));
            }
            ["streamlets", instance, _, ..] => {
                self.streamlet(instance).parameters.insert(rest(2), value);
            }
            [table, ..] if TABLES.contains(table) => {
                return Err(problem(format!("'{key}' names no value")));
            }
            [instance, _, ..] => {
                self.streamlet(instance).parameters.insert(rest(1), value);
            }
            _ => {
                return Err(problem(format!(
                    "'{key}' names no value: write INSTANCE.PARAMETER=VALUE or one of the keys in docs/kubernetes.md"
                )));
            }
        }
        Ok(())
    }

    /// Every value of the layer as `key=value` pairs (the keys [`assign`](Configuration::assign)
    /// takes, always in the long form), sorted by key.
    ///
    /// ```
    /// use runnel_application::Configuration;
    /// let mut configuration = Configuration::default();
    /// configuration.assign("gen.count=5")?;
    /// configuration.assign("pods.gen.labels.team=a")?;
    /// let entries: Vec<String> = configuration.entries().iter().map(|(k, v)| format!("{k}={v}")).collect();
    /// assert_eq!(entries, ["pods.gen.labels.team=a", "streamlets.gen.count=5"]);
    /// # Ok::<(), runnel_application::Problem>(())
    /// ```
    pub fn entries(&self) -> std::collections::BTreeMap<String, String> {
        let mut entries = std::collections::BTreeMap::new();
        for (key, value) in &self.kafka {
            entries.insert(format!("kafka.{key}"), value.clone());
        }
        if let Some(level) = &self.log_level {
            entries.insert("runtime.log-level".to_owned(), level.clone());
        }
        for (name, streamlet) in &self.streamlets {
            for (key, value) in &streamlet.parameters {
                entries.insert(format!("streamlets.{name}.{key}"), value.clone());
            }
            if let Some(level) = &streamlet.log_level {
                entries.insert(
                    format!("runtime.streamlets.{name}.log-level"),
                    level.clone(),
                );
            }
            for (key, value) in &streamlet.kafka {
                entries.insert(
                    format!("runtime.streamlets.{name}.kafka.{key}"),
                    value.clone(),
                );
            }
            let pod = &streamlet.pod;
            for (what, quantities) in [
                ("requests", &pod.resources.requests),
                ("limits", &pod.resources.limits),
            ] {
                if let Some(cpu) = &quantities.cpu {
                    entries.insert(format!("pods.{name}.resources.{what}.cpu"), cpu.clone());
                }
                if let Some(memory) = &quantities.memory {
                    entries.insert(
                        format!("pods.{name}.resources.{what}.memory"),
                        memory.clone(),
                    );
                }
            }
            for (what, map) in [
                ("labels", &pod.labels),
                ("annotations", &pod.annotations),
                ("env", &pod.env),
                ("volumes", &pod.volumes),
            ] {
                for (key, value) in map {
                    entries.insert(format!("pods.{name}.{what}.{key}"), value.clone());
                }
            }
            if let Some(port) = pod.http_port {
                entries.insert(format!("pods.{name}.http-port"), port.to_string());
            }
            for (key, value) in &pod.node_selector {
                entries.insert(format!("pods.{name}.node-selector.{key}"), value.clone());
            }
            if let Some(tolerations) = &pod.tolerations {
                entries.insert(format!("pods.{name}.tolerations"), json_text(tolerations));
            }
            if let Some(affinity) = &pod.affinity {
                entries.insert(format!("pods.{name}.affinity"), json_text(affinity));
            }
            if let Some(account) = &pod.service_account_name {
                entries.insert(format!("pods.{name}.service-account-name"), account.clone());
            }
            let scaling = &streamlet.scaling;
            let numbers = [
                ("min-replicas", scaling.min_replicas.map(i64::from)),
                ("max-replicas", scaling.max_replicas.map(i64::from)),
                ("target-lag", scaling.target_lag),
                ("target-lag-seconds", scaling.target_lag_seconds),
            ];
            for (what, value) in numbers {
                if let Some(value) = value {
                    entries.insert(format!("scaling.{name}.{what}"), value.to_string());
                }
            }
            if let Some(cooldown) = &scaling.cooldown {
                entries.insert(format!("scaling.{name}.cooldown"), cooldown.clone());
            }
            if let Some(external) = scaling.external {
                entries.insert(format!("scaling.{name}.external"), external.to_string());
            }
        }
        entries
    }

    fn streamlet(&mut self, instance: &str) -> &mut StreamletConfiguration {
        self.streamlets.entry(instance.to_owned()).or_default()
    }
}

fn assign_pod(
    streamlet: &mut StreamletConfiguration,
    instance: &str,
    setting: &str,
    value: String,
) -> Result<(), String> {
    let pod = &mut streamlet.pod;
    let (head, name) = setting.split_once('.').unwrap_or((setting, ""));
    match (head, name) {
        ("resources", "requests.cpu") => pod.resources.requests.cpu = Some(value),
        ("resources", "requests.memory") => pod.resources.requests.memory = Some(value),
        ("resources", "limits.cpu") => pod.resources.limits.cpu = Some(value),
        ("resources", "limits.memory") => pod.resources.limits.memory = Some(value),
        ("labels", name) if !name.is_empty() => {
            pod.labels.insert(name.to_owned(), value);
        }
        ("annotations", name) if !name.is_empty() => {
            pod.annotations.insert(name.to_owned(), value);
        }
        ("env", name) if !name.is_empty() => {
            pod.env.insert(name.to_owned(), value);
        }
        ("volumes", name) if !name.is_empty() => {
            pod.volumes.insert(name.to_owned(), value);
        }
        ("http-port", "") => {
            pod.http_port = Some(
                value
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{value}' is not a port number"))?,
            );
        }
        ("node-selector", name) if !name.is_empty() => {
            pod.node_selector.insert(name.to_owned(), value);
        }
        ("service-account-name", "") => pod.service_account_name = Some(value),
        ("tolerations", "") => {
            let place = format!("pods.{instance}.tolerations");
            pod.tolerations = Some(read_strict(&place, inline_value(&value)?)?);
        }
        ("affinity", "") => {
            let place = format!("pods.{instance}.affinity");
            pod.affinity = Some(read_strict(&place, inline_value(&value)?)?);
        }
        ("tolerations" | "affinity", _) => {
            return Err(format!(
                "{head} is set whole: write pods.{instance}.{head}=VALUE with the {} as JSON or a TOML inline value, or use a configuration file",
                if head == "tolerations" {
                    "list"
                } else {
                    "object"
                }
            ));
        }
        _ => {
            return Err(format!(
                "unknown pod setting '{setting}' (known: resources.requests.cpu, resources.requests.memory, resources.limits.cpu, resources.limits.memory, labels.NAME, annotations.NAME, env.NAME, volumes.MOUNT, http-port, node-selector.LABEL, tolerations, affinity, service-account-name)"
            ));
        }
    }
    Ok(())
}

/// A structured value of a `key=value` argument: JSON (`[{"key": "a", "operator":
/// "Exists"}]`, as kubectl prints) or a TOML inline value (`[{ key = "a", operator =
/// "Exists" }]`, as in a configuration file).
fn inline_value(text: &str) -> Result<serde_json::Value, String> {
    let json = match serde_json::from_str(text) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let toml = match toml::from_str::<toml::Table>(&format!("value = {text}")) {
        Ok(mut table) => {
            let value = table
                .remove("value")
                .expect("the table has the key just parsed");
            return Ok(serde_json::to_value(value).expect("TOML values are JSON values"));
        }
        Err(error) => error,
    };
    let toml = toml.message().to_owned();
    Err(format!(
        "'{text}' is neither JSON ({json}) nor a TOML inline value ({toml})"
    ))
}

/// Compact JSON, which [`inline_value`] reads back.
fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("configuration values serialize")
}

fn assign_scaling(
    streamlet: &mut StreamletConfiguration,
    setting: &str,
    value: String,
) -> Result<(), String> {
    let scaling = &mut streamlet.scaling;
    let number = |value: &str| -> Result<i64, String> {
        value
            .trim()
            .parse()
            .map_err(|_| format!("'{value}' is not a whole number"))
    };
    let replicas = |value: &str| -> Result<i32, String> {
        value
            .trim()
            .parse()
            .map_err(|_| format!("'{value}' is not a replica count"))
    };
    match setting {
        "min-replicas" => scaling.min_replicas = Some(replicas(&value)?),
        "max-replicas" => scaling.max_replicas = Some(replicas(&value)?),
        "target-lag" => scaling.target_lag = Some(number(&value)?),
        "target-lag-seconds" => scaling.target_lag_seconds = Some(number(&value)?),
        "cooldown" => scaling.cooldown = Some(value),
        "external" => {
            scaling.external = Some(match value.trim() {
                "true" => true,
                "false" => false,
                _ => return Err(format!("'{value}' is not true or false")),
            });
        }
        other => {
            return Err(format!(
                "unknown scaling setting '{other}' (known: min-replicas, max-replicas, target-lag, target-lag-seconds, cooldown, external)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_form_lands_where_the_file_would_put_it() {
        let mut configuration = Configuration::default();
        for assignment in [
            "gen.count=10",
            "streamlets.kafka.rate=3",
            "kafka.security.protocol=SSL",
            "runtime.log-level=warn",
            "runtime.streamlets.gen.log-level=debug",
            "runtime.streamlets.gen.kafka.fetch.min.bytes=1",
            "pods.gen.labels.team=sensors",
            "pods.gen.annotations.example.com/owner=ops",
            "pods.gen.env.RUST_BACKTRACE=1",
            "pods.gen.volumes.data=gen-claim",
            "pods.gen.http-port=8080",
            "pods.gen.node-selector.kubernetes.io/arch=amd64",
            "pods.gen.service-account-name=gen-reader",
            r#"pods.gen.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}]"#,
            r#"pods.gen.affinity={ podAntiAffinity = { preferredDuringSchedulingIgnoredDuringExecution = [{ weight = 100, podAffinityTerm = { topologyKey = "kubernetes.io/hostname" } }] } }"#,
            "scaling.gen.max-replicas=4",
            "scaling.gen.cooldown=30s",
        ] {
            configuration.assign(assignment).unwrap();
        }
        let generator = &configuration.streamlets["gen"];
        assert_eq!(generator.parameters["count"], "10");
        assert_eq!(configuration.streamlets["kafka"].parameters["rate"], "3");
        assert_eq!(configuration.kafka["security.protocol"], "SSL");
        assert_eq!(configuration.log_level.as_deref(), Some("warn"));
        assert_eq!(generator.log_level.as_deref(), Some("debug"));
        assert_eq!(generator.kafka["fetch.min.bytes"], "1");
        assert_eq!(generator.pod.labels["team"], "sensors");
        assert_eq!(generator.pod.annotations["example.com/owner"], "ops");
        assert_eq!(generator.pod.env["RUST_BACKTRACE"], "1");
        assert_eq!(generator.pod.volumes["data"], "gen-claim");
        assert_eq!(generator.pod.http_port, Some(8080));
        assert_eq!(generator.pod.node_selector["kubernetes.io/arch"], "amd64");
        assert_eq!(
            generator.pod.service_account_name.as_deref(),
            Some("gen-reader")
        );
        let tolerations = generator.pod.tolerations.as_ref().unwrap();
        assert_eq!(
            (
                tolerations[0].key.as_deref(),
                tolerations[0].effect.as_deref()
            ),
            (Some("dedicated"), Some("NoSchedule"))
        );
        let anti = generator.pod.affinity.as_ref().unwrap();
        let preferred = &anti
            .pod_anti_affinity
            .as_ref()
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution[0];
        assert_eq!(preferred.weight, 100);
        assert_eq!(
            preferred.pod_affinity_term.topology_key,
            "kubernetes.io/hostname"
        );
        assert_eq!(generator.scaling.max_replicas, Some(4));
        assert_eq!(generator.scaling.cooldown.as_deref(), Some("30s"));
    }

    #[test]
    fn entries_assign_back_to_the_same_layer() {
        let mut configuration = Configuration::default();
        for assignment in [
            "gen.count=10",
            "kafka.security.protocol=SSL",
            "runtime.log-level=warn",
            "runtime.streamlets.gen.log-level=debug",
            "runtime.streamlets.gen.kafka.fetch.min.bytes=1",
            "pods.gen.resources.limits.memory=1Gi",
            "pods.gen.annotations.example.com/owner=ops",
            "pods.gen.http-port=8080",
            "pods.gen.node-selector.disktype=ssd",
            "pods.gen.service-account-name=gen",
            r#"pods.gen.tolerations=[{ operator = "Exists" }]"#,
            r#"pods.gen.affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}"#,
            "scaling.gen.max-replicas=4",
            "scaling.gen.external=false",
        ] {
            configuration.assign(assignment).unwrap();
        }
        let mut again = Configuration::default();
        for (key, value) in configuration.entries() {
            again.assign(&format!("{key}={value}")).unwrap();
        }
        assert_eq!(again, configuration);
    }

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let mut configuration = Configuration::default();
        let message = |text: &str, configuration: &mut Configuration| {
            configuration.assign(text).unwrap_err().to_string()
        };
        assert_eq!(
            message("gen.count", &mut configuration),
            "argument 'gen.count': expected key=value"
        );
        assert_eq!(
            message("count=1", &mut configuration),
            "argument 'count=1': 'count' names no value: write INSTANCE.PARAMETER=VALUE or one of the keys in docs/kubernetes.md"
        );
        assert_eq!(
            message("pods.gen.http-port=http", &mut configuration),
            "argument 'pods.gen.http-port=http': 'http' is not a port number"
        );
        assert_eq!(
            message("scaling.gen.max=3", &mut configuration),
            "argument 'scaling.gen.max=3': unknown scaling setting 'max' (known: min-replicas, max-replicas, target-lag, target-lag-seconds, cooldown, external)"
        );
        assert_eq!(
            message("gen..count=1", &mut configuration),
            "argument 'gen..count=1': 'gen..count' has an empty part"
        );
        assert_eq!(
            message("pods.gen.affinity.nodeAffinity={}", &mut configuration),
            "argument 'pods.gen.affinity.nodeAffinity={}': affinity is set whole: write pods.gen.affinity=VALUE with the object as JSON or a TOML inline value, or use a configuration file"
        );
        assert_eq!(
            message(
                r#"pods.gen.tolerations=[{"key": "a", "effect": "NoSchedule", "sconds": 5}]"#,
                &mut configuration
            ),
            r#"argument 'pods.gen.tolerations=[{"key": "a", "effect": "NoSchedule", "sconds": 5}]': pods.gen.tolerations[0].sconds: unknown field 'sconds'"#
        );
        let garbled = message("pods.gen.tolerations=[{key: a}]", &mut configuration);
        assert!(
            garbled.starts_with(
                "argument 'pods.gen.tolerations=[{key: a}]': '[{key: a}]' is neither JSON (key must be a string at line 1 column 3) nor a TOML inline value ("
            ),
            "{garbled}"
        );
    }
}
