//! Carrying out a [`Plan`]: server-side apply of every object with the operator's field
//! manager, deletion of what it no longer wants, the status, the Events.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt as _};
use runnel_application::ApplicationStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::events::Events;
use crate::names::FIELD_MANAGER;
use crate::plan::{Desired, Event, Plan};
use crate::{Application, Error};

/// Applies the plan's objects, deletes the stale ones, then writes the status and Events;
/// once `deposed` is cancelled (another replica leads) it writes nothing more.
pub(crate) async fn execute(
    client: &Client,
    events: &Events,
    app: &Application,
    plan: &Plan,
    deposed: &CancellationToken,
) -> Result<(), Error> {
    let namespace = app.namespace().unwrap_or_default();
    let key = format!("{namespace}/{}", app.name());
    let deposed_error = || Error::Deposed { app: key.clone() };
    for desired in &plan.apply {
        if deposed.is_cancelled() {
            return Err(deposed_error());
        }
        let result = match desired {
            Desired::ConfigMap(object) => apply(client, &namespace, object).await,
            Desired::Secret(object) => apply(client, &namespace, object).await,
            Desired::Deployment(object) => apply(client, &namespace, object).await,
            Desired::Service(object) => apply(client, &namespace, object).await,
            Desired::PodDisruptionBudget(object) => apply(client, &namespace, object).await,
        };
        if let Err(source) = result {
            let error = Error::Apply {
                app: key.clone(),
                object: desired.describe(),
                source,
            };
            events
                .publish(
                    app,
                    &Event::warning("ApplyFailed", "Apply", crate::backplane::chain(&error)),
                )
                .await;
            return Err(error);
        }
    }
    for stale in &plan.delete {
        if deposed.is_cancelled() {
            return Err(deposed_error());
        }
        let result = match stale.kind {
            "ConfigMap" => delete::<ConfigMap>(client, &namespace, &stale.name).await,
            "Secret" => delete::<Secret>(client, &namespace, &stale.name).await,
            "Service" => delete::<Service>(client, &namespace, &stale.name).await,
            "PodDisruptionBudget" => {
                delete::<PodDisruptionBudget>(client, &namespace, &stale.name).await
            }
            _ => delete::<Deployment>(client, &namespace, &stale.name).await,
        };
        result.map_err(|source| Error::Delete {
            app: key.clone(),
            object: format!("{} {}", stale.kind, stale.name),
            source,
        })?;
    }
    write_status(client, app, &plan.status, deposed).await?;
    for event in &plan.events {
        events.publish(app, event).await;
    }
    Ok(())
}

/// Writes the status through the status subresource, by server-side apply, unless
/// `deposed` is cancelled.
pub(crate) async fn write_status(
    client: &Client,
    app: &Application,
    status: &ApplicationStatus,
    deposed: &CancellationToken,
) -> Result<(), Error> {
    let namespace = app.namespace().unwrap_or_default();
    if deposed.is_cancelled() {
        return Err(Error::Deposed {
            app: format!("{namespace}/{}", app.name()),
        });
    }
    let api: Api<Application> = Api::namespaced(client.clone(), &namespace);
    let patch = serde_json::json!({
        "apiVersion": runnel_application::API_VERSION,
        "kind": runnel_application::KIND,
        "status": status,
    });
    match api
        .patch_status(
            app.name(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Deleted meanwhile: there is no status to write.
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        Err(source) => Err(Error::Status {
            app: format!("{namespace}/{}", app.name()),
            source,
        }),
    }
}

async fn apply<K>(client: &Client, namespace: &str, object: &K) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Serialize
        + DeserializeOwned
        + Clone
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    api.patch(
        &object.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map(|_| ())
}

async fn delete<K>(client: &Client, namespace: &str, name: &str) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Clone
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}
