//! Checking a configuration against the blueprint and the descriptor, every problem at once.

use std::sync::LazyLock;

use regex::Regex;
use runnel_blueprint::Blueprint;
use runnel_blueprint::descriptor::{AppDescriptor, StreamletDescriptor};

use super::{Configuration, StreamletConfiguration};
use crate::ADMIN_PORT;

/// One problem with a configuration: where (a file, an argument, or a key such as
/// `streamlets.generator.count`) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct Problem {
    /// Where: a file, `argument '...'`, or the key of the value.
    pub place: String,
    /// What is wrong, lowercase.
    pub message: String,
}

impl Problem {
    /// A problem at `place`.
    pub fn new(place: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            place: place.into(),
            message: message.into(),
        }
    }
}

/// Kafka settings Runnel sets itself for every client.
const FORCED_KAFKA: [&str; 5] = [
    "bootstrap.servers",
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "transactional.id",
];

const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

static QUANTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$",
    )
    .expect("a valid pattern")
});
static LABEL_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$").expect("a valid pattern")
});
static DNS_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
        .expect("a valid pattern")
});
static ENV_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$").expect("a valid pattern"));

impl Configuration {
    /// Checks every value of this layer against the blueprint's instances and their
    /// streamlet types: instances exist, parameters are declared and parse, settings are
    /// well-formed. Values left unset are not reported: see
    /// [`check_complete`](Configuration::check_complete).
    pub fn check(&self, blueprint: &Blueprint, descriptor: &AppDescriptor) -> Vec<Problem> {
        let mut problems = Vec::new();
        check_kafka("kafka", &self.kafka, &mut problems);
        if let Some(level) = &self.log_level {
            check_log_level("runtime.log-level", level, &mut problems);
        }
        for (name, streamlet) in &self.streamlets {
            let Some(instance) = blueprint.streamlet(name) else {
                let known: Vec<&str> = blueprint
                    .streamlets
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect();
                let hint = runnel_blueprint::did_you_mean(name, known.iter().copied());
                problems.push(Problem::new(
                    format!("streamlet '{name}'"),
                    format!(
                        "the blueprint has no streamlet '{name}'{hint} (it has: {})",
                        known.join(", ")
                    ),
                ));
                continue;
            };
            match descriptor.streamlet(&instance.type_name) {
                Some(declared) => check_streamlet(name, streamlet, declared, &mut problems),
                None => problems.push(Problem::new(
                    format!("streamlet '{name}'"),
                    format!("its type '{}' is not in the descriptor", instance.type_name),
                )),
            }
        }
        problems
    }

    /// Checks that this (effective) configuration leaves nothing out: every parameter
    /// without a default has a value, every declared volume mount is bound to a claim, and
    /// autoscaling has a maximum and a target.
    pub fn check_complete(
        &self,
        blueprint: &Blueprint,
        descriptor: &AppDescriptor,
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        let empty = StreamletConfiguration::default();
        for instance in &blueprint.streamlets {
            let Some(declared) = descriptor.streamlet(&instance.type_name) else {
                continue;
            };
            let name = &instance.name;
            let streamlet = self.streamlets.get(name).unwrap_or(&empty);
            for parameter in &declared.parameters {
                if parameter.default.is_none() && !streamlet.parameters.contains_key(&parameter.key)
                {
                    problems.push(Problem::new(
                        format!("streamlets.{name}.{}", parameter.key),
                        "required, but no value was given",
                    ));
                }
            }
            for mount in &declared.volume_mounts {
                if !streamlet.pod.volumes.contains_key(&mount.name) {
                    problems.push(Problem::new(
                        format!("pods.{name}.volumes.{}", mount.name),
                        format!(
                            "the streamlet mounts a volume '{}' at {}: bind it to a PersistentVolumeClaim",
                            mount.name, mount.path
                        ),
                    ));
                }
            }
            let scaling = &streamlet.scaling;
            if scaling.external == Some(true) && scaling.max_replicas.is_some() {
                problems.push(Problem::new(
                    format!("scaling.{name}"),
                    "external = true leaves the replicas to another autoscaler; remove max-replicas or external",
                ));
            } else if scaling.external != Some(true) && !scaling.is_empty() {
                if scaling.max_replicas.is_none() {
                    problems.push(Problem::new(
                        format!("scaling.{name}.max-replicas"),
                        "autoscaling needs a maximum",
                    ));
                }
                if scaling.target_lag.is_none() && scaling.target_lag_seconds.is_none() {
                    problems.push(Problem::new(
                        format!("scaling.{name}"),
                        "autoscaling needs target-lag or target-lag-seconds",
                    ));
                }
                if declared.inlets.is_empty() {
                    problems.push(Problem::new(
                        format!("scaling.{name}"),
                        "the streamlet has no inlets, so it has no lag to scale on",
                    ));
                }
            }
        }
        problems
    }
}

fn check_streamlet(
    name: &str,
    streamlet: &StreamletConfiguration,
    declared: &StreamletDescriptor,
    problems: &mut Vec<Problem>,
) {
    for (key, value) in &streamlet.parameters {
        let place = format!("streamlets.{name}.{key}");
        match declared.parameters.iter().find(|p| &p.key == key) {
            None => {
                let known: Vec<&str> = declared.parameters.iter().map(|p| p.key.as_str()).collect();
                let known = if known.is_empty() {
                    "it has none".to_owned()
                } else {
                    format!("it has: {}", known.join(", "))
                };
                let hint = runnel_blueprint::did_you_mean(
                    key,
                    declared.parameters.iter().map(|p| p.key.as_str()),
                );
                problems.push(Problem::new(
                    place,
                    format!(
                        "streamlet type '{}' has no parameter '{key}'{hint} ({known})",
                        declared.type_name
                    ),
                ));
            }
            Some(parameter) => {
                if let Err(reason) = parameter.kind.parse(value) {
                    // A secret's value stays out of messages, which end up in statuses.
                    let reason = if crate::is_secret(key) {
                        format!(
                            "the (secret) value is not a valid {}",
                            parameter.kind.name()
                        )
                    } else {
                        reason
                    };
                    problems.push(Problem::new(place, reason));
                }
            }
        }
    }
    check_kafka(
        &format!("runtime.streamlets.{name}.kafka"),
        &streamlet.kafka,
        problems,
    );
    if let Some(level) = &streamlet.log_level {
        check_log_level(
            &format!("runtime.streamlets.{name}.log-level"),
            level,
            problems,
        );
    }
    let pod = &streamlet.pod;
    let resources = &pod.resources;
    for (what, value) in [
        ("requests.cpu", &resources.requests.cpu),
        ("requests.memory", &resources.requests.memory),
        ("limits.cpu", &resources.limits.cpu),
        ("limits.memory", &resources.limits.memory),
    ] {
        if let Some(value) = value
            && !QUANTITY.is_match(value.trim())
        {
            problems.push(Problem::new(
                format!("pods.{name}.resources.{what}"),
                format!(
                    "'{value}' is not a Kubernetes quantity (write it like 250m, 0.5, 64Mi or 1Gi)"
                ),
            ));
        }
    }
    for (key, value) in &pod.labels {
        let place = format!("pods.{name}.labels.{key}");
        check_key(&place, key, problems);
        if !is_label_value(value) {
            problems.push(Problem::new(
                place,
                format!("'{value}' is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"),
            ));
        }
    }
    for key in pod.annotations.keys() {
        check_key(&format!("pods.{name}.annotations.{key}"), key, problems);
    }
    for key in pod.env.keys() {
        if !ENV_NAME.is_match(key) {
            problems.push(Problem::new(
                format!("pods.{name}.env.{key}"),
                format!("'{key}' is not an environment variable name"),
            ));
        }
    }
    for (mount, claim) in &pod.volumes {
        let place = format!("pods.{name}.volumes.{mount}");
        if !declared.volume_mounts.iter().any(|m| &m.name == mount) {
            let known: Vec<&str> = declared
                .volume_mounts
                .iter()
                .map(|m| m.name.as_str())
                .collect();
            problems.push(Problem::new(
                place.clone(),
                format!(
                    "streamlet type '{}' declares no volume mount '{mount}' (it declares: {})",
                    declared.type_name,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        if !is_dns_subdomain(claim) {
            problems.push(Problem::new(
                place,
                format!("'{claim}' is not a PersistentVolumeClaim name"),
            ));
        }
    }
    if let Some(port) = pod.http_port
        && (port == 0 || port == ADMIN_PORT)
    {
        problems.push(Problem::new(
            format!("pods.{name}.http-port"),
            format!("{port} is not available (the admin endpoint uses {ADMIN_PORT})"),
        ));
    }
    super::scheduling::check_scheduling(name, pod, problems);
    if let Some(account) = &pod.service_account_name
        && !is_dns_subdomain(account)
    {
        problems.push(Problem::new(
            format!("pods.{name}.service-account-name"),
            format!("'{account}' is not a service account name (a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"),
        ));
    }
    let scaling = &streamlet.scaling;
    if let Some(min) = scaling.min_replicas
        && min < 1
    {
        problems.push(Problem::new(
            format!("scaling.{name}.min-replicas"),
            "must be at least 1",
        ));
    }
    if let Some(max) = scaling.max_replicas
        && max < scaling.min_replicas.unwrap_or(1)
    {
        problems.push(Problem::new(
            format!("scaling.{name}.max-replicas"),
            format!(
                "{max} is below min-replicas ({})",
                scaling.min_replicas.unwrap_or(1)
            ),
        ));
    }
    for (what, value) in [
        ("target-lag", scaling.target_lag),
        ("target-lag-seconds", scaling.target_lag_seconds),
    ] {
        if let Some(value) = value
            && value < 1
        {
            problems.push(Problem::new(
                format!("scaling.{name}.{what}"),
                "must be at least 1",
            ));
        }
    }
    if let Some(cooldown) = &scaling.cooldown
        && humantime::parse_duration(cooldown.trim()).is_err()
    {
        problems.push(Problem::new(
            format!("scaling.{name}.cooldown"),
            format!("'{cooldown}' is not a duration (write it like 30s or 2m)"),
        ));
    }
}

fn check_kafka(
    place: &str,
    settings: &std::collections::BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    for key in settings.keys() {
        if FORCED_KAFKA.contains(&key.as_str()) {
            let hint = if key == "bootstrap.servers" {
                "; give the cluster with `runnel deploy --kafka` or the operator's --kafka"
            } else {
                ""
            };
            problems.push(Problem::new(
                format!("{place}.{key}"),
                format!("'{key}' is set by runnel itself{hint}"),
            ));
        }
    }
}

fn check_log_level(place: &str, level: &str, problems: &mut Vec<Problem>) {
    if !LOG_LEVELS.contains(&level.trim().to_ascii_lowercase().as_str()) {
        problems.push(Problem::new(
            place,
            format!("'{level}' is not a log level (error, warn, info, debug or trace)"),
        ));
    }
}

/// Whether `key` is a label key (Kubernetes' qualified name): an optional DNS-subdomain
/// prefix and `/`, then at most 63 letters, digits, '-', '_' or '.', starting and ending
/// with a letter or digit.
pub(super) fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && LABEL_NAME.is_match(name)
}

/// Whether `value` is a label value: empty, or what a label key's name part may be.
pub(super) fn is_label_value(value: &str) -> bool {
    value.is_empty() || LABEL_NAME.is_match(value)
}

/// Whether `name` is a DNS-1123 subdomain (the names of most Kubernetes objects).
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && DNS_SUBDOMAIN.is_match(name)
}

/// A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name.
fn check_key(place: &str, key: &str, problems: &mut Vec<Problem>) {
    let prefix = key.rsplit_once('/').map(|(prefix, _)| prefix);
    if !is_qualified_name(key) {
        problems.push(Problem::new(
            place,
            format!("'{key}' is not a Kubernetes label or annotation key"),
        ));
    } else if prefix.is_some_and(|p| {
        p == "runnel.dev" || p.ends_with(".runnel.dev") || p == "app.kubernetes.io"
    }) {
        problems.push(Problem::new(
            place,
            format!("'{key}' is set by the operator"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn fixture() -> (Blueprint, AppDescriptor) {
        let descriptor = AppDescriptor::from_json(
            r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
                {"type": "generator",
                 "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
                 "parameters": [{"key": "count", "type": "int", "default": "-1"},
                                {"key": "name", "type": "string"}],
                 "volume-mounts": [{"name": "data", "path": "/data", "access-mode": "ReadWriteOnce"}]},
                {"type": "logger",
                 "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}]}
            ]}"#,
        )
        .unwrap();
        let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\nlog = \"logger\"\n[topics.numbers]\nproducers = [\"gen.out\"]\nconsumers = [\"log.in\"]\n";
        let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), text, &descriptor)
            .blueprint
            .unwrap();
        (blueprint, descriptor)
    }

    fn problems(assignments: &[&str], complete: bool) -> Vec<String> {
        let (blueprint, descriptor) = fixture();
        let mut configuration = Configuration::default();
        for assignment in assignments {
            configuration.assign(assignment).unwrap();
        }
        let mut found = configuration.check(&blueprint, &descriptor);
        if complete {
            found.extend(configuration.check_complete(&blueprint, &descriptor));
        }
        found.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_valid_layer_has_no_problems() {
        assert_eq!(
            problems(
                &[
                    "gen.count=5",
                    "gen.name=x",
                    "pods.gen.volumes.data=gen-data",
                    "pods.gen.resources.limits.memory=64Mi",
                    "pods.gen.resources.requests.cpu=250m",
                    "pods.gen.service-account-name=gen-reader",
                    "pods.gen.node-selector.kubernetes.io/arch=amd64",
                    r#"pods.gen.tolerations=[{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]"#,
                    "scaling.log.max-replicas=3",
                    "scaling.log.target-lag=100",
                ],
                true
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_key() {
        let found = problems(
            &[
                "gen.count=lots",
                "gen.colour=red",
                "nope.x=1",
                "kafka.group.id=g",
                "runtime.log-level=loud",
                "pods.gen.resources.limits.memory=lots",
                "pods.gen.labels.app.kubernetes.io/name=x",
                "pods.gen.volumes.cache=c",
                r#"pods.gen.tolerations=[{"key": "dedicated", "operator": "Equals", "value": "x"}]"#,
                "pods.gen.service-account-name=Streaming_Reader",
                "pods.log.http-port=9090",
                "scaling.log.min-replicas=3",
                "scaling.log.max-replicas=2",
                "scaling.gen.max-replicas=2",
                "scaling.gen.target-lag=10",
                "scaling.log.cooldown=soon",
            ],
            true,
        );
        assert_eq!(
            found,
            [
                "kafka.group.id: 'group.id' is set by runnel itself",
                "runtime.log-level: 'loud' is not a log level (error, warn, info, debug or trace)",
                "streamlets.gen.colour: streamlet type 'generator' has no parameter 'colour' (it has: count, name)",
                "streamlets.gen.count: 'lots' is not an integer",
                "pods.gen.resources.limits.memory: 'lots' is not a Kubernetes quantity (write it like 250m, 0.5, 64Mi or 1Gi)",
                "pods.gen.labels.app.kubernetes.io/name: 'app.kubernetes.io/name' is set by the operator",
                "pods.gen.volumes.cache: streamlet type 'generator' declares no volume mount 'cache' (it declares: data)",
                "pods.gen.tolerations[0].operator: 'Equals' is not a toleration operator (Exists or Equal)",
                "pods.gen.service-account-name: 'Streaming_Reader' is not a service account name (a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)",
                "pods.log.http-port: 9090 is not available (the admin endpoint uses 9090)",
                "scaling.log.max-replicas: 2 is below min-replicas (3)",
                "scaling.log.cooldown: 'soon' is not a duration (write it like 30s or 2m)",
                "streamlet 'nope': the blueprint has no streamlet 'nope' (it has: gen, log)",
                "streamlets.gen.name: required, but no value was given",
                "pods.gen.volumes.data: the streamlet mounts a volume 'data' at /data: bind it to a PersistentVolumeClaim",
                "scaling.gen: the streamlet has no inlets, so it has no lag to scale on",
                "scaling.log: autoscaling needs target-lag or target-lag-seconds",
            ]
        );
    }
}
