//! The Node a [`Kubelet`](super::Kubelet) stand-in registers on a real API server, its
//! heartbeat, and the binding of pods to it.
//!
//! A real API server deletes a pod that no node holds at once; one bound to a node it only
//! marks for deletion, and the node's kubelet stops the containers within the grace period
//! and then removes the pod. So the stand-in registers a Node, keeps it Ready as a kubelet
//! does (renewing its Lease in `kube-node-lease`, which the node lifecycle controller
//! watches), and binds the pods of its namespace to it as a scheduler would.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

/// How long the node's Lease lasts; renewed every [`RENEW_EVERY`].
const LEASE_SECONDS: i32 = 40;

/// How often the stand-in renews the node's Lease.
pub(super) const RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Creates Node `name` (if it does not exist) with a Ready condition, and its Lease.
pub(super) async fn register(client: &Client, name: &str) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
        }},
    }))
    .expect("a valid Node");
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(error)) if error.code == 409 => {}
        Err(error) => return Err(error),
    }
    let now = crate::store::now();
    let status = serde_json::json!({"status": {
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "the kubelet stand-in is posting ready status",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
    }});
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    heartbeat(client, name).await
}

/// Renews the node's Lease (creating it the first time), as a kubelet does every 10 s.
pub(super) async fn heartbeat(client: &Client, name: &str) -> Result<(), kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let renewed = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": micro_time(),
        },
    });
    leases
        .patch(
            name,
            &PatchParams::apply("runnel-kubelet-stand-in").force(),
            &Patch::Apply(&renewed),
        )
        .await?;
    Ok(())
}

/// Binds `pod` to node `node`, as the scheduler does.
pub(super) async fn bind(pods: &Api<Pod>, pod: &str, node: &str) -> Result<(), kube::Error> {
    let binding = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    pods.create_subresource::<_, serde_json::Value>(
        "binding",
        pod,
        &PostParams::default(),
        &binding,
    )
    .await?;
    Ok(())
}

/// Now as a Kubernetes `MicroTime` (RFC 3339 in UTC with exactly six fractional digits).
fn micro_time() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
