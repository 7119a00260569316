//! [`DeploymentController`]: the part of kube-controller-manager that turns Deployments into
//! Pods, through the API like the real one: replicas, rolling updates when the pod template
//! changes (one extra pod at a time, never fewer ready pods than wanted), and the
//! Deployment's status. Pods are owned by their Deployment directly (a real cluster puts a
//! ReplicaSet in between).

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt as _};
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;

/// The label a pod carries with the hash of the template it was made from.
pub const TEMPLATE_HASH: &str = "pod-template-hash";

/// Runs the Deployment stand-in until `stop` is cancelled.
#[derive(Debug)]
pub struct DeploymentController;

impl DeploymentController {
    /// Starts it on the current runtime, for the Deployments of `namespace`.
    pub fn start(client: Client, namespace: &str, stop: CancellationToken) {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                if let Err(error) = step(&deployments, &pods).await {
                    tracing::debug!("the deployment stand-in will retry: {error}");
                }
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        });
    }
}

async fn step(deployments: &Api<Deployment>, pods: &Api<Pod>) -> Result<(), kube::Error> {
    let all_pods = pods.list(&ListParams::default()).await?.items;
    for deployment in deployments.list(&ListParams::default()).await?.items {
        if deployment.metadata.deletion_timestamp.is_some() {
            continue;
        }
        reconcile(&deployment, &all_pods, pods, deployments).await?;
    }
    Ok(())
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn reconcile(
    deployment: &Deployment,
    all_pods: &[Pod],
    pods: &Api<Pod>,
    deployments: &Api<Deployment>,
) -> Result<(), kube::Error> {
    let uid = deployment.uid().unwrap_or_default();
    let spec = deployment.spec.clone().unwrap_or_default();
    let desired = spec.replicas.unwrap_or(1).max(0) as usize;
    let template = spec.template.clone();
    let hash: String = Sha256::digest(serde_json::to_vec(&template).unwrap_or_default())
        .iter()
        .take(5)
        .map(|b| format!("{b:02x}"))
        .collect();
    let owned: Vec<&Pod> = all_pods
        .iter()
        .filter(|p| p.owner_references().iter().any(|o| o.uid == uid))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let (current, old): (Vec<&Pod>, Vec<&Pod>) = owned
        .iter()
        .partition(|p| p.labels().get(TEMPLATE_HASH) == Some(&hash));
    let ready_current = current.iter().filter(|p| is_ready(p)).count();
    let mut ready_old = old.iter().filter(|p| is_ready(p)).count();
    let create = |pods: &Api<Pod>| {
        let mut labels = template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.insert(TEMPLATE_HASH.to_owned(), hash.clone());
        let mut pod_spec = template.spec.clone().unwrap_or_default();
        pod_spec.node_name = Some("local".to_owned());
        let pod = Pod {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}-{hash}-", deployment.name_any())),
                labels: Some(labels),
                annotations: template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.annotations.clone()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".to_owned(),
                    kind: "Deployment".to_owned(),
                    name: deployment.name_any(),
                    uid: uid.clone(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(pod_spec),
            status: None,
        };
        let pods = pods.clone();
        async move { pods.create(&PostParams::default(), &pod).await.map(|_| ()) }
    };
    let delete = |pods: &Api<Pod>, pod: &Pod| {
        let (pods, name) = (pods.clone(), pod.name_any());
        async move {
            match pods.delete(&name, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
                Err(error) => Err(error),
            }
        }
    };
    if old.is_empty() {
        for _ in current.len()..desired {
            create(pods).await?;
        }
        let mut extra: Vec<&&Pod> = current.iter().collect();
        // Not-ready pods go first, then the newest.
        extra.sort_by_key(|p| {
            (
                is_ready(p),
                std::cmp::Reverse(p.metadata.creation_timestamp.clone().map(|t| t.0)),
            )
        });
        for pod in extra
            .into_iter()
            .take(current.len().saturating_sub(desired))
        {
            delete(pods, pod).await?;
        }
    } else {
        if current.len() < desired && current.len() + old.len() < desired + 1 {
            create(pods).await?;
        }
        for pod in &old {
            if desired == 0 || !is_ready(pod) {
                delete(pods, pod).await?;
            } else if ready_current + ready_old > desired {
                delete(pods, pod).await?;
                ready_old -= 1;
            }
        }
    }
    let ready = (ready_current + ready_old) as i32;
    let status = serde_json::json!({"status": {
        "observedGeneration": deployment.metadata.generation,
        "replicas": owned.len(),
        "updatedReplicas": current.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": (desired as i32 - ready).max(0),
    }});
    let unchanged = deployment.status.as_ref().is_some_and(|s| {
        s.observed_generation == deployment.metadata.generation
            && s.replicas == Some(owned.len() as i32)
            && s.updated_replicas == Some(current.len() as i32)
            && s.ready_replicas == Some(ready)
    });
    if !unchanged {
        deployments
            .patch_status(
                &deployment.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await?;
    }
    Ok(())
}
