//! The ConfigMap and the Secret of a streamlet: the files `app run-streamlet` reads.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sha2::{Digest, Sha256};

use super::Streamlet;
use crate::names::{BLUEPRINT_FILE, CONFIG_FILE, hex};

/// The key prefix of secret environment variables in the Secret (`env.DB_PASSWORD`).
pub(crate) const ENV_PREFIX: &str = "env.";

/// `blueprint.toml` and `runnel.toml` (the public configuration, `local.toml` format).
pub(crate) fn config_map(streamlet: &Streamlet<'_>) -> ConfigMap {
    ConfigMap {
        metadata: streamlet.metadata(),
        data: Some(config_map_data(streamlet)),
        ..ConfigMap::default()
    }
}

/// `runnel.toml` with the secret values, and each secret environment variable.
pub(crate) fn secret(streamlet: &Streamlet<'_>) -> Secret {
    let data = secret_data(streamlet)
        .into_iter()
        .map(|(key, value)| (key, ByteString(value.into_bytes())))
        .collect();
    Secret {
        metadata: streamlet.metadata(),
        data: Some(data),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// A hash of both and of where the pods run (tolerations, node selector, affinity,
/// service account), for the pod template: when it changes, the Deployment rolls and the
/// operator says the configuration changed.
pub(crate) fn config_hash(streamlet: &Streamlet<'_>) -> String {
    let mut hasher = Sha256::new();
    let mut parts = vec![
        ("configmap", config_map_data(streamlet)),
        ("secret", secret_data(streamlet)),
    ];
    // Only when set, so that the hash of a streamlet without them is what it was before
    // they existed, and upgrading the operator rolls nothing.
    let placement = placement_data(streamlet);
    if !placement.is_empty() {
        parts.push(("placement", placement));
    }
    for (part, data) in parts {
        hasher.update(part.as_bytes());
        for (key, value) in data {
            hasher.update((key.len() as u64).to_le_bytes());
            hasher.update(key.as_bytes());
            hasher.update((value.len() as u64).to_le_bytes());
            hasher.update(value.as_bytes());
        }
    }
    hex(&hasher.finalize())[..16].to_owned()
}

fn config_map_data(streamlet: &Streamlet<'_>) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            BLUEPRINT_FILE.to_owned(),
            streamlet.app.spec.blueprint.clone(),
        ),
        (
            CONFIG_FILE.to_owned(),
            streamlet.resolved.config_file(streamlet.instance, false),
        ),
    ])
}

/// The pod settings that decide where and as whom the pods run, as JSON by setting.
fn placement_data(streamlet: &Streamlet<'_>) -> BTreeMap<String, String> {
    let pod = &streamlet.resolved.pod;
    fn json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).expect("configuration values serialize")
    }
    let mut data = BTreeMap::new();
    if let Some(tolerations) = &pod.tolerations {
        data.insert("tolerations".to_owned(), json(tolerations));
    }
    if !pod.node_selector.is_empty() {
        data.insert("nodeSelector".to_owned(), json(&pod.node_selector));
    }
    if let Some(affinity) = &pod.affinity {
        data.insert("affinity".to_owned(), json(affinity));
    }
    if let Some(account) = &pod.service_account_name {
        data.insert("serviceAccountName".to_owned(), account.clone());
    }
    data
}

fn secret_data(streamlet: &Streamlet<'_>) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([(
        CONFIG_FILE.to_owned(),
        streamlet.resolved.config_file(streamlet.instance, true),
    )]);
    for (name, value) in streamlet.resolved.env(true) {
        data.insert(format!("{ENV_PREFIX}{name}"), value);
    }
    data
}
