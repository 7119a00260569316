use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use runnel_operator::Application;
use runnel_operator::leader::{LEASE_NAME, LeaderConfig, VERSION_ANNOTATION};

use crate::deposed;
use crate::support::{
    NAMESPACE, Operator, application, client, cluster, config, eventually, real_cluster,
};

const LIMIT: Duration = Duration::from_secs(30);

fn leading(identity: &str) -> runnel_operator::OperatorConfig {
    let mut config = config(identity);
    config.leader = Some(LeaderConfig {
        namespace: NAMESPACE.to_owned(),
        name: LEASE_NAME.to_owned(),
        identity: identity.to_owned(),
        lease_duration: Duration::from_secs(3),
        version: "0.1.0-test".to_owned(),
    });
    config
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE_NAME)
        .await
        .unwrap()?
        .spec?
        .holder_identity
}

/// Which replicas reported Events about `app`.
async fn reporters(events: &Api<Event>, app: &str) -> Vec<String> {
    let mut found: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(app))
        .filter_map(|e| e.reporting_instance)
        .collect();
    found.sort();
    found.dedup();
    found
}

#[tokio::test]
async fn one_of_two_replicas_reconciles_and_the_other_takes_over_when_it_stops() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let first = Operator::start(client.clone(), leading("first"));
    eventually(LIMIT, "the first replica leading", || async {
        (holder(&leases).await.as_deref() == Some("first")).then_some(())
    })
    .await;
    let lease = leases.get(LEASE_NAME).await.unwrap();
    assert_eq!(lease.annotations()[VERSION_ANNOTATION], "0.1.0-test");
    let second = Operator::start_with(client.clone(), leading("second"), first.backend.clone());

    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let events: Api<Event> = Api::default_namespaced(client.clone());
    apps.create(&PostParams::default(), &application("one"))
        .await
        .unwrap();
    eventually(LIMIT, "app one deployed", || async {
        deployments.get_opt("one-log").await.unwrap().map(|_| ())
    })
    .await;
    eventually(LIMIT, "events about app one", || async {
        let found = reporters(&events, "one").await;
        (!found.is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        reporters(&events, "one").await,
        ["first"],
        "only the leader reconciles"
    );

    first.stop().await.unwrap();
    eventually(LIMIT, "the second replica leading", || async {
        (holder(&leases).await.as_deref() == Some("second")).then_some(())
    })
    .await;
    apps.create(&PostParams::default(), &application("two"))
        .await
        .unwrap();
    eventually(LIMIT, "app two deployed by the new leader", || async {
        deployments.get_opt("two-log").await.unwrap().map(|_| ())
    })
    .await;
    eventually(LIMIT, "events about app two", || async {
        let found = reporters(&events, "two").await;
        (found == ["second"]).then_some(())
    })
    .await;
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_writes_nothing_once_it_sees_the_lease_taken() {
    let server = cluster().await;
    let client = client(&server);
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut leader = Operator::start(client.clone(), leading("deposed"));
    // How many requests the server had received when the leader saw the lease taken.
    let seen_taken = Arc::new(Mutex::new(None));
    deposed::when_deposed("deposed", {
        let (server, seen_taken) = (server.clone(), seen_taken.clone());
        move || *seen_taken.lock().unwrap() = Some(server.requests().len())
    });
    apps.create(&PostParams::default(), &application("one"))
        .await
        .unwrap();
    eventually(LIMIT, "app one deployed", || async {
        deployments.get_opt("one-log").await.unwrap().map(|_| ())
    })
    .await;

    // Keep the leader busy reconciling: every change of the Application is a reconcile.
    let busy = tokio::spawn({
        let apps = apps.clone();
        async move {
            for round in 0.. {
                let patch =
                    serde_json::json!({"metadata": {"labels": {"round": format!("{round}")}}});
                let _ = apps
                    .patch(
                        "one",
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(&patch),
                    )
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let before = server.requests().len();
    eventually(LIMIT, "the leader reconciling the changes", || async {
        let status_writes = server.requests()[before..]
            .iter()
            .filter(|r| r.method != "GET" && r.path.ends_with("/applications/one/status"))
            .count();
        (status_writes >= 3).then_some(())
    })
    .await;

    // Another replica takes the lease, as one that saw it expire would.
    let mut lease = leases.get(LEASE_NAME).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("usurper".to_owned());
    spec.lease_duration_seconds = Some(3_600);
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    leases
        .replace(LEASE_NAME, &PostParams::default(), &lease)
        .await
        .unwrap();
    let ended = tokio::time::timeout(LIMIT, &mut leader.task).await;
    busy.abort();
    let ended = ended.expect("the deposed leader stops").unwrap();
    assert!(
        matches!(ended, Err(runnel_operator::Error::LostLease { .. })),
        "{ended:?}"
    );

    // From the moment the leader saw the lease taken (and had cancelled its writes): at most
    // the one write of its (sequential) reconcile already on the wire, no Deployment, status
    // or Event after it.
    let requests = server.requests();
    let seen_taken = seen_taken
        .lock()
        .unwrap()
        .expect("the leader logged that it saw the lease taken");
    let writes_after: Vec<String> = requests[seen_taken..]
        .iter()
        .filter(|r| {
            r.method != "GET" && !r.path.contains("/applications/one")
                || r.path.ends_with("/status")
        })
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes_after.len() <= 1, "{writes_after:#?}");
}
