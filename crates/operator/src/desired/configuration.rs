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

/// A hash of both, for the pod template: when it changes, the Deployment rolls.
pub(crate) fn config_hash(streamlet: &Streamlet<'_>) -> String {
    let mut hasher = Sha256::new();
    for (part, data) in [
        ("configmap", config_map_data(streamlet)),
        ("secret", secret_data(streamlet)),
    ] {
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
