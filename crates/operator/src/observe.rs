//! Reading what the cluster holds for one Application: its children (labelled with the app
//! *and* owned by the Application, so nothing else is ever touched), its pods, and the
//! user's secret configuration.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt as _};
use runnel_application::Configuration;
use serde::de::DeserializeOwned;

use crate::observed::Observed;
use crate::{Application, Error, names};

/// The key of the user's secret configuration in its Secret.
pub const SECRET_CONFIGURATION_KEY: &str = "configuration.toml";

/// Everything but topics and lag.
pub(crate) async fn observe(client: &Client, app: &Application) -> Result<Observed, Error> {
    let namespace = app.namespace().unwrap_or_default();
    let uid = app.uid().unwrap_or_default();
    // Children: the app's label, the operator's managed-by label *and* the Application as
    // owner. Something of the user's that carries the app's label is never the operator's.
    let selector = ListParams::default().labels(&format!(
        "{},app.kubernetes.io/managed-by={}",
        names::app_selector(app.name()),
        names::MANAGED_BY
    ));
    let pod_selector = ListParams::default().labels(&names::app_selector(app.name()));
    let key = format!("{namespace}/{}", app.name());
    async fn owned<K>(
        client: &Client,
        namespace: &str,
        selector: &ListParams,
        uid: &str,
        key: &str,
        what: &'static str,
    ) -> Result<Vec<K>, Error>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(client.clone(), namespace);
        let listed = api.list(selector).await.map_err(|source| Error::Read {
            app: key.to_owned(),
            what,
            source,
        })?;
        Ok(listed
            .items
            .into_iter()
            .filter(|object| object.owner_references().iter().any(|o| o.uid == uid))
            .collect())
    }
    let deployments: Vec<Deployment> =
        owned(client, &namespace, &selector, &uid, &key, "deployments").await?;
    let config_maps: Vec<ConfigMap> =
        owned(client, &namespace, &selector, &uid, &key, "config maps").await?;
    let secrets: Vec<Secret> = owned(client, &namespace, &selector, &uid, &key, "secrets").await?;
    let services: Vec<Service> =
        owned(client, &namespace, &selector, &uid, &key, "services").await?;
    let pod_disruption_budgets: Vec<PodDisruptionBudget> = owned(
        client,
        &namespace,
        &selector,
        &uid,
        &key,
        "pod disruption budgets",
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let pods = pods
        .list(&pod_selector)
        .await
        .map_err(|source| Error::Read {
            app: key.clone(),
            what: "pods",
            source,
        })?
        .items;
    let secret_configuration = match &app.spec.secret_configuration {
        None => Ok(Configuration::default()),
        Some(name) => read_secret_configuration(client, &namespace, name, &key).await?,
    };
    Ok(Observed {
        deployments,
        config_maps,
        secrets,
        services,
        pod_disruption_budgets,
        pods,
        secret_configuration,
        topics: None,
        lag: Default::default(),
        kept_schemas: None,
    })
}

/// The user's secret configuration: `Err` (for the status) when the Secret is missing or
/// does not hold a configuration file; an error when it cannot be read at all.
async fn read_secret_configuration(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Result<Configuration, String>, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = secrets.get_opt(name).await.map_err(|source| Error::Read {
        app: key.to_owned(),
        what: "secret configuration",
        source,
    })?;
    let Some(secret) = secret else {
        return Ok(Err(format!(
            "the secret configuration {namespace}/{name} does not exist"
        )));
    };
    let Some(bytes) = secret
        .data
        .as_ref()
        .and_then(|data| data.get(SECRET_CONFIGURATION_KEY))
    else {
        return Ok(Err(format!(
            "the secret {namespace}/{name} has no key {SECRET_CONFIGURATION_KEY}"
        )));
    };
    let text = String::from_utf8_lossy(&bytes.0);
    let place = std::path::PathBuf::from(format!("secret {namespace}/{name}"));
    // Only the first line of a parse error: the rest quotes the file, which holds secrets.
    Ok(Configuration::parse_file(&place, &text).map_err(|problem| {
        let first = problem
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        format!("{}: {first}", problem.place)
    }))
}
