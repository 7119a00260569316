//! Where a streamlet's pods may run: tolerations and affinity, as Kubernetes writes them.
//!
//! The types mirror Kubernetes' `Toleration` and `Affinity` with Kubernetes' own field names
//! (camelCase), so that a snippet from a Pod spec pastes into a configuration file as it
//! is. The operator turns them into the k8s-openapi types; this crate stays free of
//! Kubernetes client code.
//!
//! Reading is strict and checking reports every problem with its key: unknown fields,
//! operators and effects Kubernetes does not know, values an operator does not allow,
//! weights outside 1 to 100, keys that are not label keys. The stored types are lenient
//! (unknown fields are ignored when an Application is read), so that an operator never
//! stops reading Applications because a newer `runnel` wrote a field it does not know.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::{is_label_value, is_qualified_name};
use super::{PodSettings, Problem};

/// A toleration: the pods may run on nodes whose taint it matches.
///
/// ```
/// use runnel_application::Configuration;
/// let mut configuration = Configuration::default();
/// configuration.assign(r#"pods.gen.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}]"#)?;
/// let tolerations = configuration.streamlets["gen"].pod.tolerations.as_ref().unwrap();
/// assert_eq!(tolerations[0].effect.as_deref(), Some("NoSchedule"));
/// # Ok::<(), runnel_application::Problem>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key it matches; without one (and operator `Exists`) it matches every taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Equal` (the default: the taint's value must be `value`) or `Exists` (any value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The taint value it matches, with `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The taint effect it matches: `NoSchedule`, `PreferNoSchedule` or `NoExecute`; every
    /// effect when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// With effect `NoExecute`: how many seconds the pods stay on a node once the taint is
    /// added (for ever when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Scheduling constraints of the pods: Kubernetes' `Affinity`.
///
/// ```
/// use std::path::Path;
/// use runnel_application::Configuration;
/// let text = r#"
/// [pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution]
/// nodeSelectorTerms = [{ matchExpressions = [{ key = "kubernetes.io/arch", operator = "In", values = ["amd64"] }] }]
/// "#;
/// let configuration = Configuration::parse_file(Path::new("prod.toml"), text)?;
/// let affinity = configuration.streamlets["gen"].pod.affinity.as_ref().unwrap();
/// assert!(affinity.node_affinity.is_some());
/// # Ok::<(), runnel_application::Problem>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    /// Which nodes the pods may or should run on, by node labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Run near pods with these labels (same node, zone, ... by `topologyKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Run away from pods with these labels, such as the streamlet's other replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
}

/// Node affinity: required and preferred node selector terms.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinity {
    /// Nodes the pods may only run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Nodes the scheduler prefers, by weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

/// Terms of which a node must match at least one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    /// The terms, ORed.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// Requirements on a node's labels and fields, ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<SelectorRequirement>,
    /// Requirements on node fields (`metadata.name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<SelectorRequirement>,
}

/// One requirement: a key, an operator and values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectorRequirement {
    /// The label (or field) key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`; for nodes also `Gt` and `Lt`.
    pub operator: String,
    /// The values: some for `In` and `NotIn`, none for `Exists` and `DoesNotExist`, one
    /// integer for `Gt` and `Lt`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A preferred node selector term and its weight.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    /// 1 to 100: how much a node matching the term counts.
    #[schemars(range(min = 1, max = 100))]
    pub weight: i32,
    /// The term.
    pub preference: NodeSelectorTerm,
}

/// Pod affinity or anti-affinity: required and preferred terms.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinity {
    /// Terms every placement must satisfy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Terms the scheduler prefers, by weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// Pods (selected by labels, in namespaces) and the topology domain to be near or away
/// from them in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodAffinityTerm {
    /// The pods, by their labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The namespaces of the pods, by their labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// The namespaces of the pods, by name (the pod's own when neither is set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// The node label whose value is the domain: `kubernetes.io/hostname`,
    /// `topology.kubernetes.io/zone`, ...
    pub topology_key: String,
    /// Label keys whose values, taken from the incoming pod, are added to the selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Label keys whose values, taken from the incoming pod, must differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatch_label_keys: Vec<String>,
}

/// A preferred pod affinity term and its weight.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    /// 1 to 100: how much a placement satisfying the term counts.
    #[schemars(range(min = 1, max = 100))]
    pub weight: i32,
    /// The term.
    pub pod_affinity_term: PodAffinityTerm,
}

/// A label selector: labels that must match, and requirements, ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements (`In`, `NotIn`, `Exists`, `DoesNotExist`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<SelectorRequirement>,
}

impl Affinity {
    /// Whether nothing is set (`affinity = {}` clears an earlier layer's affinity).
    pub fn is_empty(&self) -> bool {
        *self == Affinity::default()
    }
}

/// `value` (parsed from TOML or JSON) as `T`, strictly: a field `T` does not have is an
/// error, as in the rest of the configuration file. Errors name the field's path below
/// `place`.
pub(super) fn read_strict<T: DeserializeOwned + Serialize>(
    place: &str,
    value: Value,
) -> Result<T, String> {
    let parsed: T = serde_path_to_error::deserialize(&value).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." {
            place.to_owned()
        } else if path.starts_with('[') {
            format!("{place}{path}")
        } else {
            format!("{place}.{path}")
        };
        format!("{at}: {}", error.inner())
    })?;
    let known = serde_json::to_value(&parsed).expect("configuration values serialize");
    let mut unknown = Vec::new();
    unknown_fields(&value, &known, place, &mut unknown);
    if unknown.is_empty() {
        Ok(parsed)
    } else {
        Err(unknown.join("; "))
    }
}

/// Fields of `input` that reading it as a type dropped: what the type does not have. A
/// known field left at its default is dropped too, but then its input is empty.
fn unknown_fields(input: &Value, known: &Value, place: &str, found: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(input), Value::Object(known)) => {
            for (key, value) in input {
                let at = format!("{place}.{key}");
                match known.get(key) {
                    Some(kept) => unknown_fields(value, kept, &at, found),
                    None if is_empty(value) => {}
                    None => found.push(format!("{at}: unknown field '{key}'")),
                }
            }
        }
        (Value::Array(input), Value::Array(known)) => {
            for (index, (value, kept)) in input.iter().zip(known).enumerate() {
                unknown_fields(value, kept, &format!("{place}[{index}]"), found);
            }
        }
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

const TOLERATION_OPERATORS: [&str; 2] = ["Exists", "Equal"];
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const LABEL_OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];
const NODE_OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

/// Checks the tolerations, node selector and affinity of streamlet `name`'s pods as the API
/// server would, naming each offending key.
pub(super) fn check_scheduling(name: &str, pod: &PodSettings, problems: &mut Vec<Problem>) {
    for (index, toleration) in pod.tolerations.iter().flatten().enumerate() {
        check_toleration(
            &format!("pods.{name}.tolerations[{index}]"),
            toleration,
            problems,
        );
    }
    for (key, value) in &pod.node_selector {
        let place = format!("pods.{name}.node-selector.{key}");
        if !is_qualified_name(key) {
            problems.push(Problem::new(
                place.clone(),
                format!("'{key}' is not a node label key"),
            ));
        }
        if !is_label_value(value) {
            problems.push(Problem::new(
                place,
                format!("'{value}' is not a label value"),
            ));
        }
    }
    if let Some(affinity) = &pod.affinity {
        let place = format!("pods.{name}.affinity");
        if let Some(node) = &affinity.node_affinity {
            check_node_affinity(&format!("{place}.nodeAffinity"), node, problems);
        }
        for (field, pods) in [
            ("podAffinity", &affinity.pod_affinity),
            ("podAntiAffinity", &affinity.pod_anti_affinity),
        ] {
            if let Some(pods) = pods {
                check_pod_affinity(&format!("{place}.{field}"), pods, problems);
            }
        }
    }
}

fn check_toleration(place: &str, toleration: &Toleration, problems: &mut Vec<Problem>) {
    let key = toleration.key.as_deref().unwrap_or_default();
    let value = toleration.value.as_deref().unwrap_or_default();
    let operator = toleration.operator.as_deref().unwrap_or_default();
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !key.is_empty() && !is_qualified_name(key) {
        problems.push(Problem::new(
            format!("{place}.key"),
            format!("'{key}' is not a taint key (a label key such as example.com/dedicated)"),
        ));
    }
    match operator {
        "" | "Equal" => {
            if key.is_empty() {
                problems.push(Problem::new(
                    format!("{place}.operator"),
                    "a toleration without a key must have operator Exists (it then tolerates every taint)",
                ));
            }
            if !is_label_value(value) {
                problems.push(Problem::new(
                    format!("{place}.value"),
                    format!("'{value}' is not a taint value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"),
                ));
            }
        }
        "Exists" => {
            if !value.is_empty() {
                problems.push(Problem::new(
                    format!("{place}.value"),
                    "a toleration with operator Exists matches any value: leave value out",
                ));
            }
        }
        other => problems.push(Problem::new(
            format!("{place}.operator"),
            format!(
                "'{other}' is not a toleration operator ({})",
                TOLERATION_OPERATORS.join(" or ")
            ),
        )),
    }
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        problems.push(Problem::new(
            format!("{place}.effect"),
            format!(
                "'{effect}' is not a taint effect ({})",
                TAINT_EFFECTS.join(", ")
            ),
        ));
    }
    if toleration.toleration_seconds.is_some() && effect != "NoExecute" {
        problems.push(Problem::new(
            format!("{place}.tolerationSeconds"),
            "only a toleration with effect NoExecute has tolerationSeconds",
        ));
    }
}

fn check_node_affinity(place: &str, node: &NodeAffinity, problems: &mut Vec<Problem>) {
    if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
        let place = format!("{place}.requiredDuringSchedulingIgnoredDuringExecution");
        if required.node_selector_terms.is_empty() {
            problems.push(Problem::new(
                format!("{place}.nodeSelectorTerms"),
                "needs at least one term",
            ));
        }
        for (index, term) in required.node_selector_terms.iter().enumerate() {
            check_node_term(
                &format!("{place}.nodeSelectorTerms[{index}]"),
                term,
                problems,
            );
        }
    }
    let place = format!("{place}.preferredDuringSchedulingIgnoredDuringExecution");
    for (index, preferred) in node
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        let place = format!("{place}[{index}]");
        check_weight(&place, preferred.weight, problems);
        check_node_term(
            &format!("{place}.preference"),
            &preferred.preference,
            problems,
        );
    }
}

fn check_node_term(place: &str, term: &NodeSelectorTerm, problems: &mut Vec<Problem>) {
    for (index, requirement) in term.match_expressions.iter().enumerate() {
        check_requirement(
            &format!("{place}.matchExpressions[{index}]"),
            requirement,
            &NODE_OPERATORS,
            problems,
        );
    }
    for (index, requirement) in term.match_fields.iter().enumerate() {
        check_requirement(
            &format!("{place}.matchFields[{index}]"),
            requirement,
            &NODE_OPERATORS,
            problems,
        );
    }
}

fn check_pod_affinity(place: &str, pods: &PodAffinity, problems: &mut Vec<Problem>) {
    for (index, term) in pods
        .required_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        check_pod_term(
            &format!("{place}.requiredDuringSchedulingIgnoredDuringExecution[{index}]"),
            term,
            problems,
        );
    }
    for (index, weighted) in pods
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        let place = format!("{place}.preferredDuringSchedulingIgnoredDuringExecution[{index}]");
        check_weight(&place, weighted.weight, problems);
        check_pod_term(
            &format!("{place}.podAffinityTerm"),
            &weighted.pod_affinity_term,
            problems,
        );
    }
}

fn check_pod_term(place: &str, term: &PodAffinityTerm, problems: &mut Vec<Problem>) {
    if term.topology_key.is_empty() || !is_qualified_name(&term.topology_key) {
        problems.push(Problem::new(
            format!("{place}.topologyKey"),
            format!(
                "'{}' is not a node label key (such as kubernetes.io/hostname or topology.kubernetes.io/zone)",
                term.topology_key
            ),
        ));
    }
    for (field, selector) in [
        ("labelSelector", &term.label_selector),
        ("namespaceSelector", &term.namespace_selector),
    ] {
        let Some(selector) = selector else { continue };
        let place = format!("{place}.{field}");
        for (key, value) in &selector.match_labels {
            if !is_qualified_name(key) || !is_label_value(value) {
                problems.push(Problem::new(
                    format!("{place}.matchLabels.{key}"),
                    format!("'{key}: {value}' is not a label key and value"),
                ));
            }
        }
        for (index, requirement) in selector.match_expressions.iter().enumerate() {
            check_requirement(
                &format!("{place}.matchExpressions[{index}]"),
                requirement,
                &LABEL_OPERATORS,
                problems,
            );
        }
    }
    for (field, keys) in [
        ("matchLabelKeys", &term.match_label_keys),
        ("mismatchLabelKeys", &term.mismatch_label_keys),
    ] {
        for (index, key) in keys.iter().enumerate() {
            if !is_qualified_name(key) {
                problems.push(Problem::new(
                    format!("{place}.{field}[{index}]"),
                    format!("'{key}' is not a label key"),
                ));
            }
        }
    }
}

fn check_requirement(
    place: &str,
    requirement: &SelectorRequirement,
    operators: &[&str],
    problems: &mut Vec<Problem>,
) {
    let SelectorRequirement {
        key,
        operator,
        values,
    } = requirement;
    if !is_qualified_name(key) {
        problems.push(Problem::new(
            format!("{place}.key"),
            format!("'{key}' is not a label key"),
        ));
    }
    let wrong_values = match operator.as_str() {
        "In" | "NotIn" => values
            .is_empty()
            .then(|| format!("operator {operator} needs at least one value")),
        "Exists" | "DoesNotExist" => {
            (!values.is_empty()).then(|| format!("operator {operator} takes no values"))
        }
        "Gt" | "Lt" if operators.contains(&operator.as_str()) => (values.len() != 1
            || values[0].trim().parse::<i64>().is_err())
        .then(|| format!("operator {operator} takes one integer value")),
        _ => {
            problems.push(Problem::new(
                format!("{place}.operator"),
                format!(
                    "'{operator}' is not a selector operator ({})",
                    operators.join(", ")
                ),
            ));
            None
        }
    };
    if let Some(message) = wrong_values {
        problems.push(Problem::new(format!("{place}.values"), message));
    }
}

fn check_weight(place: &str, weight: i32, problems: &mut Vec<Problem>) {
    if !(1..=100).contains(&weight) {
        problems.push(Problem::new(
            format!("{place}.weight"),
            format!("{weight} is not a weight (1 to 100)"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_and_missing_ones_are_named_with_their_path() {
        let error = read_strict::<Affinity>(
            "pods.gen.affinity",
            serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelectors": {"matchLabels": {"a": "b"}}}
            ]}}),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "pods.gen.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelectors: unknown field 'labelSelectors'"
        );
        let error = read_strict::<Vec<Toleration>>(
            "pods.gen.tolerations",
            serde_json::json!([{"key": "a", "operator": "Exists"}, {"key": "b", "tolerationSeconds": "soon"}]),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "pods.gen.tolerations[1].tolerationSeconds: invalid type: string \"soon\", expected i64"
        );
        let error = read_strict::<Affinity>(
            "pods.gen.affinity",
            serde_json::json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "pods.gen.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: missing field `topologyKey`"
        );
        // A known field left empty reads as its default.
        let read = read_strict::<Toleration>(
            "t",
            serde_json::json!({"operator": "Exists", "value": null}),
        )
        .unwrap();
        assert_eq!(read.operator.as_deref(), Some("Exists"));
    }

    fn problems_of(pod: &PodSettings) -> Vec<String> {
        let mut problems = Vec::new();
        check_scheduling("gen", pod, &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn tolerations_are_checked_like_the_api_server_does() {
        let toleration = |key: &str, operator: &str, value: &str, effect: &str| Toleration {
            key: (!key.is_empty()).then(|| key.to_owned()),
            operator: (!operator.is_empty()).then(|| operator.to_owned()),
            value: (!value.is_empty()).then(|| value.to_owned()),
            effect: (!effect.is_empty()).then(|| effect.to_owned()),
            toleration_seconds: None,
        };
        let pod = PodSettings {
            tolerations: Some(vec![
                toleration("dedicated", "Equal", "streaming", "NoSchedule"),
                toleration("", "Exists", "", ""),
                toleration("dedicated", "Equals", "x", "NoSchedule"),
                toleration("dedicated", "Exists", "x", "Evict"),
                toleration("", "", "", ""),
                Toleration {
                    toleration_seconds: Some(30),
                    ..toleration("node.kubernetes.io/unreachable", "Exists", "", "NoSchedule")
                },
                toleration("bad key!", "Equal", "not a value!", ""),
            ]),
            ..PodSettings::default()
        };
        assert_eq!(
            problems_of(&pod),
            [
                "pods.gen.tolerations[2].operator: 'Equals' is not a toleration operator (Exists or Equal)",
                "pods.gen.tolerations[3].value: a toleration with operator Exists matches any value: leave value out",
                "pods.gen.tolerations[3].effect: 'Evict' is not a taint effect (NoSchedule, PreferNoSchedule, NoExecute)",
                "pods.gen.tolerations[4].operator: a toleration without a key must have operator Exists (it then tolerates every taint)",
                "pods.gen.tolerations[5].tolerationSeconds: only a toleration with effect NoExecute has tolerationSeconds",
                "pods.gen.tolerations[6].key: 'bad key!' is not a taint key (a label key such as example.com/dedicated)",
                "pods.gen.tolerations[6].value: 'not a value!' is not a taint value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)",
            ]
        );
    }

    #[test]
    fn node_selectors_and_affinity_are_checked_with_their_keys() {
        let affinity: Affinity = serde_json::from_value(serde_json::json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "cores", "operator": "Gt", "values": ["many"]},
                        {"key": "disk", "operator": "Exists", "values": ["ssd"]},
                        {"key": "zone", "operator": "Near", "values": ["a"]}
                    ]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": {"matchExpressions": [{"key": "gpu", "operator": "In"}]}}
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "gen"}}},
                    {"topologyKey": "", "labelSelector": {"matchExpressions": [{"key": "team", "operator": "Gt", "values": ["1"]}]}}
                ]
            }
        }))
        .unwrap();
        let pod = PodSettings {
            node_selector: BTreeMap::from([
                ("disktype".to_owned(), "ssd".to_owned()),
                ("bad key!".to_owned(), "x".to_owned()),
            ]),
            affinity: Some(affinity),
            ..PodSettings::default()
        };
        assert_eq!(
            problems_of(&pod),
            [
                "pods.gen.node-selector.bad key!: 'bad key!' is not a node label key",
                "pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values: operator Gt takes one integer value",
                "pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values: operator Exists takes no values",
                "pods.gen.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator: 'Near' is not a selector operator (In, NotIn, Exists, DoesNotExist, Gt, Lt)",
                "pods.gen.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 is not a weight (1 to 100)",
                "pods.gen.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: operator In needs at least one value",
                "pods.gen.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey: '' is not a node label key (such as kubernetes.io/hostname or topology.kubernetes.io/zone)",
                "pods.gen.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector.matchExpressions[0].operator: 'Gt' is not a selector operator (In, NotIn, Exists, DoesNotExist)",
            ]
        );
    }
}
