use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use runnel_operator::Application;
use runnel_operator::leader::{LEASE_NAME, LeaderConfig, VERSION_ANNOTATION};

use crate::support::{NAMESPACE, Operator, application, client, cluster, config, eventually};

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
    let server = cluster().await;
    let client = client(&server);
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let first = Operator::start(&server, leading("first"));
    eventually(LIMIT, "the first replica leading", || async {
        (holder(&leases).await.as_deref() == Some("first")).then_some(())
    })
    .await;
    let lease = leases.get(LEASE_NAME).await.unwrap();
    assert_eq!(lease.annotations()[VERSION_ANNOTATION], "0.1.0-test");
    let second = Operator::start_with(&server, leading("second"), first.backend.clone());

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
