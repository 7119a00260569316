//! Where a streamlet's pods may run: its configuration's tolerations, node selector and
//! affinity as the k8s-openapi types of the pod spec. Field for field, so that the pod
//! gets exactly what the user wrote (the configuration was checked before).

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PreferredSchedulingTerm, Toleration, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use runnel_application as config;

/// The pod's tolerations; `None` when the configuration sets none.
pub(super) fn tolerations(tolerations: Option<&[config::Toleration]>) -> Option<Vec<Toleration>> {
    let tolerations = tolerations.filter(|list| !list.is_empty())?;
    Some(
        tolerations
            .iter()
            .map(|toleration| Toleration {
                key: toleration.key.clone(),
                operator: toleration.operator.clone(),
                value: toleration.value.clone(),
                effect: toleration.effect.clone(),
                toleration_seconds: toleration.toleration_seconds,
            })
            .collect(),
    )
}

/// The pod's affinity; `None` when the configuration sets none (or an empty one).
pub(super) fn affinity(affinity: Option<&config::Affinity>) -> Option<Affinity> {
    let affinity = affinity.filter(|affinity| !affinity.is_empty())?;
    Some(Affinity {
        node_affinity: affinity.node_affinity.as_ref().map(node_affinity),
        pod_affinity: affinity.pod_affinity.as_ref().map(|pods| PodAffinity {
            required_during_scheduling_ignored_during_execution: some(
                &pods.required_during_scheduling_ignored_during_execution,
                pod_term,
            ),
            preferred_during_scheduling_ignored_during_execution: some(
                &pods.preferred_during_scheduling_ignored_during_execution,
                weighted_pod_term,
            ),
        }),
        pod_anti_affinity: affinity
            .pod_anti_affinity
            .as_ref()
            .map(|pods| PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: some(
                    &pods.required_during_scheduling_ignored_during_execution,
                    pod_term,
                ),
                preferred_during_scheduling_ignored_during_execution: some(
                    &pods.preferred_during_scheduling_ignored_during_execution,
                    weighted_pod_term,
                ),
            }),
    })
}

fn node_affinity(node: &config::NodeAffinity) -> NodeAffinity {
    NodeAffinity {
        required_during_scheduling_ignored_during_execution: node
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|required| NodeSelector {
                node_selector_terms: required.node_selector_terms.iter().map(node_term).collect(),
            }),
        preferred_during_scheduling_ignored_during_execution: some(
            &node.preferred_during_scheduling_ignored_during_execution,
            |preferred| PreferredSchedulingTerm {
                weight: preferred.weight,
                preference: node_term(&preferred.preference),
            },
        ),
    }
}

fn node_term(term: &config::NodeSelectorTerm) -> NodeSelectorTerm {
    let requirement = |requirement: &config::SelectorRequirement| NodeSelectorRequirement {
        key: requirement.key.clone(),
        operator: requirement.operator.clone(),
        values: some(&requirement.values, Clone::clone),
    };
    NodeSelectorTerm {
        match_expressions: some(&term.match_expressions, requirement),
        match_fields: some(&term.match_fields, requirement),
    }
}

fn pod_term(term: &config::PodAffinityTerm) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: term.label_selector.as_ref().map(label_selector),
        namespace_selector: term.namespace_selector.as_ref().map(label_selector),
        namespaces: some(&term.namespaces, Clone::clone),
        topology_key: term.topology_key.clone(),
        match_label_keys: some(&term.match_label_keys, Clone::clone),
        mismatch_label_keys: some(&term.mismatch_label_keys, Clone::clone),
    }
}

fn weighted_pod_term(weighted: &config::WeightedPodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm {
        weight: weighted.weight,
        pod_affinity_term: pod_term(&weighted.pod_affinity_term),
    }
}

fn label_selector(selector: &config::LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: (!selector.match_labels.is_empty()).then(|| selector.match_labels.clone()),
        match_expressions: some(&selector.match_expressions, |requirement| {
            LabelSelectorRequirement {
                key: requirement.key.clone(),
                operator: requirement.operator.clone(),
                values: some(&requirement.values, Clone::clone),
            }
        }),
    }
}

/// `items` mapped, or `None` when there are none: an empty list is left out of the object,
/// as the API server would.
fn some<T, U>(items: &[T], map: impl FnMut(&T) -> U) -> Option<Vec<U>> {
    (!items.is_empty()).then(|| items.iter().map(map).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field the configuration has reaches the pod spec: the configuration's JSON and
    /// the k8s-openapi object's JSON are the same document.
    #[test]
    fn the_pod_gets_exactly_what_the_configuration_says() {
        let written = serde_json::json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}],
                     "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                ]
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "topology.kubernetes.io/zone",
                     "labelSelector": {"matchLabels": {"app": "kafka"}},
                     "namespaces": ["kafka"],
                     "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["data"]}]}}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "gen"}},
                        "matchLabelKeys": ["pod-template-hash"],
                        "mismatchLabelKeys": ["tenant"]}}
                ]
            }
        });
        let configured: config::Affinity = serde_json::from_value(written.clone()).unwrap();
        let applied = affinity(Some(&configured)).unwrap();
        assert_eq!(serde_json::to_value(&applied).unwrap(), written);
        assert_eq!(affinity(Some(&config::Affinity::default())), None);

        let written = serde_json::json!([
            {"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
        ]);
        let configured: Vec<config::Toleration> = serde_json::from_value(written.clone()).unwrap();
        let applied = tolerations(Some(&configured)).unwrap();
        assert_eq!(serde_json::to_value(&applied).unwrap(), written);
        assert_eq!(tolerations(Some(&[])), None);
    }
}
