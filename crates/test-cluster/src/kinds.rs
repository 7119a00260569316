//! The resources the fake API server serves: built-in ones by table, custom ones from the
//! CustomResourceDefinitions created in it.

use serde_json::Value;

/// What the server knows about one resource type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    /// `""` for the core group.
    pub(crate) group: String,
    /// `v1`, `v1alpha1`, ...
    pub(crate) version: String,
    /// The plural in paths.
    pub(crate) plural: String,
    /// The kind in objects.
    pub(crate) kind: String,
    /// Whether objects live in namespaces.
    pub(crate) namespaced: bool,
    /// Whether `.status` is only written through `/status`.
    pub(crate) status_subresource: bool,
}

impl Kind {
    /// `group/version`, or `version` for the core group.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const BUILT_IN: &[(&str, &str, &str, &str, bool, bool)] = &[
    ("", "v1", "pods", "Pod", true, true),
    ("", "v1", "configmaps", "ConfigMap", true, false),
    ("", "v1", "secrets", "Secret", true, false),
    ("", "v1", "services", "Service", true, true),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, false),
    ("", "v1", "events", "Event", true, false),
    ("", "v1", "namespaces", "Namespace", false, true),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        true,
    ),
    ("apps", "v1", "deployments", "Deployment", true, true),
    ("apps", "v1", "replicasets", "ReplicaSet", true, true),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        true,
    ),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, false),
    ("events.k8s.io", "v1", "events", "Event", true, false),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        false,
    ),
    (
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        true,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        true,
    ),
];

/// The built-in resource at `group`/`version`/`plural`.
pub(crate) fn built_in(group: &str, version: &str, plural: &str) -> Option<Kind> {
    BUILT_IN
        .iter()
        .find(|(g, v, p, ..)| *g == group && *v == version && *p == plural)
        .map(|(group, version, plural, kind, namespaced, status)| Kind {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
            plural: (*plural).to_owned(),
            kind: (*kind).to_owned(),
            namespaced: *namespaced,
            status_subresource: *status,
        })
}

/// The kinds a CustomResourceDefinition object declares (one per served version).
pub(crate) fn from_crd(crd: &Value) -> Vec<Kind> {
    let spec = &crd["spec"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        spec["names"]["plural"].as_str(),
        spec["names"]["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|version| version["served"].as_bool() != Some(false))
        .filter_map(|version| {
            Some(Kind {
                group: group.to_owned(),
                version: version["name"].as_str()?.to_owned(),
                plural: plural.to_owned(),
                kind: kind.to_owned(),
                namespaced,
                status_subresource: version["subresources"]["status"].is_object(),
            })
        })
        .collect()
}
