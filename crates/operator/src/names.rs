//! Names, labels and annotations of the objects the operator creates: one place, so that
//! the controller, the CLI and the tests agree.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The field manager of the operator's server-side applies.
pub const FIELD_MANAGER: &str = "runnel-operator";
/// The `app.kubernetes.io/managed-by` value of everything the operator creates.
pub const MANAGED_BY: &str = "runnel-operator";

/// The label naming the app an object belongs to (part of every selector).
pub const APP_LABEL: &str = "runnel.dev/app";
/// The label naming the streamlet instance an object belongs to (part of every selector).
pub const STREAMLET_LABEL: &str = "runnel.dev/streamlet";
/// The pod template annotation holding a hash of the streamlet's configuration, so that a
/// configuration change rolls exactly the Deployments it affects.
pub const CONFIG_HASH_ANNOTATION: &str = "runnel.dev/config-hash";

/// Where the streamlet's ConfigMap is mounted: `blueprint.toml` and `runnel.toml`.
pub const CONFIG_MOUNT: &str = "/etc/runnel/config";
/// Where the streamlet's Secret is mounted: `runnel.toml` with the secret values.
pub const SECRET_MOUNT: &str = "/etc/runnel/secret";
/// The configuration file's name in both mounts.
pub const CONFIG_FILE: &str = "runnel.toml";
/// The blueprint's name in the ConfigMap.
pub const BLUEPRINT_FILE: &str = "blueprint.toml";

/// The longest object name the operator makes: Deployment names leave room for the
/// ReplicaSet and pod suffixes within the 63 characters of a pod's hostname.
const MAX_NAME: usize = 47;

/// The name of the Deployment, ConfigMap, Secret and Service of streamlet `instance` of
/// `app`: `<app>-<instance>`, shortened with a hash when that is too long.
///
/// ```
/// use runnel_operator::names::object_name;
/// assert_eq!(object_name("sensor-data", "to-metrics"), "sensor-data-to-metrics");
/// let long = object_name("a-rather-long-application-name", "an-even-longer-streamlet-name");
/// assert_eq!(long.len(), 47);
/// assert!(long.starts_with("a-rather-long-application-name-an-even-"));
/// ```
pub fn object_name(app: &str, instance: &str) -> String {
    let name = format!("{app}-{instance}");
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = hex(&Sha256::digest(name.as_bytes()))[..8].to_owned();
    let keep = name[..MAX_NAME - 9].trim_end_matches('-');
    format!("{keep}-{hash}")
}

/// The labels that select the pods of one streamlet instance.
pub fn selector(app: &str, instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (APP_LABEL.to_owned(), app.to_owned()),
        (STREAMLET_LABEL.to_owned(), instance.to_owned()),
    ])
}

/// Every label of an object of one streamlet: the selector plus the recommended
/// `app.kubernetes.io/*` labels.
pub fn labels(app: &str, instance: &str, version: &str) -> BTreeMap<String, String> {
    let mut labels = selector(app, instance);
    labels.extend([
        ("app.kubernetes.io/name".to_owned(), app.to_owned()),
        (
            "app.kubernetes.io/component".to_owned(),
            instance.to_owned(),
        ),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGED_BY.to_owned(),
        ),
        ("app.kubernetes.io/part-of".to_owned(), app.to_owned()),
    ]);
    let version = label_value(version);
    if !version.is_empty() {
        labels.insert("app.kubernetes.io/version".to_owned(), version);
    }
    labels
}

/// The label selector (as text) of everything of `app`.
pub fn app_selector(app: &str) -> String {
    format!("{APP_LABEL}={app}")
}

/// `text` as a valid label value: at most 63 characters of `[A-Za-z0-9._-]`, starting and
/// ending with a letter or digit (a version like `1.0+build` becomes `1.0_build`).
pub fn label_value(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(63)
        .collect();
    cleaned
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

/// Lowercase hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_cleaned() {
        assert_eq!(label_value("1.0+build.5"), "1.0_build.5");
        assert_eq!(label_value("-v1-"), "v1");
        assert_eq!(label_value(&"x".repeat(80)).len(), 63);
    }

    #[test]
    fn shortened_names_stay_distinct_and_valid() {
        let a = object_name(&"a".repeat(40), "first-streamlet");
        let b = object_name(&"a".repeat(40), "second-streamlet");
        assert_ne!(a, b);
        assert!(a.len() <= 47 && !a.contains("--"), "{a}");
    }
}
