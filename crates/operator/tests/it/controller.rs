use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use runnel_application::Phase;
use runnel_backend::Backend as _;
use runnel_operator::Application;
use runnel_test_cluster::Fault;
use serde_json::json;

use crate::support::{Operator, application, client, cluster, config, eventually, real_cluster};

const LIMIT: Duration = Duration::from_secs(30);

async fn deployment(api: &Api<Deployment>, name: &str) -> Option<Deployment> {
    api.get_opt(name).await.unwrap()
}

async fn phase(apps: &Api<Application>, name: &str) -> Option<(Phase, String)> {
    let app = apps.get_opt(name).await.unwrap()?;
    let status = app.status?;
    Some((status.phase, status.message))
}

async fn reasons(events: &Api<Event>, app: &str) -> Vec<String> {
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(app))
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn a_first_deploy_creates_topics_and_objects_by_server_side_apply() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let operator = Operator::start(client.clone(), config("one"));
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    apps.create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();

    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let created = eventually(LIMIT, "the generator's Deployment", || {
        deployment(&deployments, "demo-gen")
    })
    .await;
    let owner = &created.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Application", "demo")
    );
    eventually(LIMIT, "the logger's Deployment", || {
        deployment(&deployments, "demo-log")
    })
    .await;
    let maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let config_map = maps.get("demo-log").await.unwrap();
    assert!(config_map.data.unwrap()["blueprint.toml"].contains("name = \"demo\""));
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    secrets.get("demo-gen").await.unwrap();
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    let budget = eventually(LIMIT, "the logger's PodDisruptionBudget", || async {
        budgets.get_opt("demo-log").await.unwrap()
    })
    .await;
    assert_eq!(budget.owner_references()[0].name, "demo");
    assert_eq!(
        budget.spec.unwrap().selector.unwrap().match_labels.unwrap()["runnel.dev/streamlet"],
        "log"
    );

    // Every object the operator wrote, it wrote by server-side apply with its field manager:
    // the real server records who set which field how (the controller-manager updates the
    // status of Deployments and budgets).
    let operations = |fields: Option<Vec<ManagedFieldsEntry>>| -> Vec<String> {
        fields
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.manager.as_deref() == Some("runnel-operator"))
            .map(|f| f.operation.unwrap_or_default())
            .collect()
    };
    let mut objects: Vec<_> = deployments
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|deployment| deployment.metadata)
        .collect();
    assert_eq!(objects.len(), 2);
    objects.extend([
        maps.get("demo-log").await.unwrap().metadata,
        secrets.get("demo-gen").await.unwrap().metadata,
        budgets.get("demo-log").await.unwrap().metadata,
    ]);
    for object in objects {
        assert_eq!(
            operations(object.managed_fields),
            ["Apply"],
            "{:?}",
            object.name
        );
    }
    let topics = operator
        .backend
        .topic("numbers-demo")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(topics.partitions, 3);
    assert!(
        operator
            .backend
            .topic("demo.dead-letter")
            .await
            .unwrap()
            .is_some()
    );

    // No pods run (no kubelet here), so the status says it waits, from what it observed.
    let (phase, message) = eventually(LIMIT, "a status", || phase(&apps, "demo")).await;
    assert_eq!(phase, Phase::Pending);
    assert_eq!(message, "waiting for gen (0/1 ready), log (0/1 ready)");
    let events: Api<Event> = Api::default_namespaced(client);
    let found = eventually(LIMIT, "the Created events", || async {
        let found = reasons(&events, "demo").await;
        (found.iter().filter(|r| *r == "Created").count() == 2).then_some(found)
    })
    .await;
    assert_eq!(found.len(), 2, "{found:?}");
}

#[tokio::test]
async fn api_errors_are_retried_and_a_bad_application_does_not_stop_the_others() {
    let server = cluster().await;
    // The first apply of the good app's Deployment fails with a server error.
    server.fail_next(Fault {
        method: Some(axum_method("PATCH")),
        path_contains: "/deployments/good-gen".to_owned(),
        code: 500,
        times: 1,
    });
    let _operator = Operator::start(client(&server), config("one"));
    let client = client(&server);
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let mut bad = application("bad");
    bad.spec.blueprint = bad.spec.blueprint.replace("log.in", "log.inn");
    apps.create(&PostParams::default(), &bad).await.unwrap();
    apps.create(&PostParams::default(), &application("good"))
        .await
        .unwrap();

    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the good app's Deployment after the retry", || {
        deployment(&deployments, "good-gen")
    })
    .await;
    let (phase, message) = eventually(LIMIT, "the bad app's status", || phase(&apps, "bad")).await;
    assert_eq!(phase, Phase::Failed);
    assert!(message.contains("log.inn"), "{message}");
    assert!(deployment(&deployments, "bad-gen").await.is_none());
    let events: Api<Event> = Api::default_namespaced(client);
    let found = eventually(LIMIT, "a warning about the bad app", || async {
        let found = reasons(&events, "bad").await;
        found
            .contains(&"InvalidBlueprint".to_owned())
            .then_some(found)
    })
    .await;
    assert!(!found.contains(&"Created".to_owned()));
    let good = eventually(LIMIT, "an ApplyFailed event about the good app", || async {
        let found = reasons(&events, "good").await;
        found.contains(&"ApplyFailed".to_owned()).then_some(found)
    })
    .await;
    assert!(good.contains(&"Created".to_owned()), "{good:?}");
}

#[tokio::test]
async fn changes_after_watch_restarts_are_still_reconciled() {
    let server = cluster().await;
    let _operator = Operator::start(client(&server), config("one"));
    let client = client(&server);
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    apps.create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the Deployment", || {
        deployment(&deployments, "demo-log")
    })
    .await;

    // The watches end and the history is gone: the controller must list again.
    server.compact();
    server.close_watches();
    apps.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"streamlets": [
            {"name": "gen", "type": "generator", "replicas": 1},
            {"name": "log", "type": "logger", "replicas": 3}
        ]}})),
    )
    .await
    .unwrap();
    eventually(LIMIT, "three logger replicas", || async {
        let found = deployment(&deployments, "demo-log").await?;
        (found.spec?.replicas == Some(3)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_edited_deployment_gets_the_operators_fields_back_and_keeps_the_others() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let _operator = Operator::start(client.clone(), config("one"));
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    apps.create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the Deployment", || {
        deployment(&deployments, "demo-gen")
    })
    .await;
    deployments
        .patch(
            "demo-gen",
            &PatchParams {
                field_manager: Some("kubectl-edit".to_owned()),
                ..PatchParams::default()
            },
            &Patch::Strategic(json!({
                "metadata": {"annotations": {"team": "sensors"}},
                "spec": {"template": {"spec": {"containers": [{"name": "streamlet", "image": "other:9"}]}}}
            })),
        )
        .await
        .unwrap();
    let restored = eventually(LIMIT, "the image restored", || async {
        let found = deployment(&deployments, "demo-gen").await?;
        let image = found.spec.as_ref()?.template.spec.as_ref()?.containers[0]
            .image
            .clone()?;
        (image == "registry.example/demo:1.0").then_some(found)
    })
    .await;
    assert_eq!(
        restored.annotations()["team"],
        "sensors",
        "what others set stays"
    );
}

#[tokio::test]
async fn undeploy_deletes_what_the_operator_created_and_nothing_else() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let operator = Operator::start(client.clone(), config("one"));
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let created = apps
        .create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the Deployments", || {
        deployment(&deployments, "demo-log")
    })
    .await;
    // A user's ConfigMap with the app's label, and one owned by the app but not labelled:
    // neither is the operator's to delete.
    let maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mine: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "my-notes", "labels": {"runnel.dev/app": "demo"}},
        "data": {"a": "b"}
    }))
    .unwrap();
    maps.create(&PostParams::default(), &mine).await.unwrap();
    let _ = created;

    apps.delete("demo", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually(LIMIT, "the Application gone", || async {
        apps.get_opt("demo").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    assert!(
        budgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let left: Vec<String> = maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|m| m.name_any())
        // The controller-manager publishes its CA into every namespace.
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, ["my-notes"]);
    assert!(
        operator
            .backend
            .topic("numbers-demo")
            .await
            .unwrap()
            .is_some(),
        "topics are never deleted"
    );
}

fn axum_method(name: &str) -> runnel_test_cluster::Method {
    name.parse().unwrap()
}

#[tokio::test]
async fn objects_the_operator_did_not_create_are_left_alone_even_with_its_labels() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let _operator = Operator::start(client.clone(), config("one"));
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let created = apps
        .create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the Deployment", || {
        deployment(&deployments, "demo-log")
    })
    .await;
    // Labelled with the app and owned by it, but not made by the operator (the CLI keeps
    // the user's secret configuration like this).
    let maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let theirs: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "demo-notes", "labels": {"runnel.dev/app": "demo"},
                     "ownerReferences": [{"apiVersion": "runnel.dev/v1alpha1", "kind": "Application", "name": "demo", "uid": created.uid().unwrap()}]},
        "data": {"a": "b"}
    }))
    .unwrap();
    maps.create(&PostParams::default(), &theirs).await.unwrap();
    apps.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"streamlets": [
            {"name": "gen", "type": "generator", "replicas": 2},
            {"name": "log", "type": "logger", "replicas": 1}
        ]}})),
    )
    .await
    .unwrap();
    eventually(LIMIT, "two generators", || async {
        (deployment(&deployments, "demo-gen").await?.spec?.replicas == Some(2)).then_some(())
    })
    .await;
    assert!(maps.get_opt("demo-notes").await.unwrap().is_some());
}

#[tokio::test]
async fn the_autoscaler_follows_consumer_lag_and_records_each_decision() {
    use runnel_backend::{ProducerConfig, Record};
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let operator = Operator::start(client.clone(), config("one"));
    // 60 records on the logger's inlet topic, none committed by its group.
    let backend = operator.backend.clone();
    backend
        .create_topic(&runnel_backend::TopicSpec::new("numbers-demo", 3))
        .await
        .unwrap();
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    for index in 0..60u32 {
        producer
            .send("numbers-demo", index % 3, Record::new(vec![1u8]))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    let mut app = application("demo");
    for assignment in [
        "scaling.log.max-replicas=5",
        "scaling.log.target-lag=10",
        "scaling.log.cooldown=1s",
    ] {
        app.spec.configuration.assign(assignment).unwrap();
    }
    apps.create(&PostParams::default(), &app).await.unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    // 60 records at 10 per replica wants 6, capped at max-replicas 5 and then at the 3
    // partitions of the inlet.
    eventually(LIMIT, "three loggers", || async {
        (deployment(&deployments, "demo-log").await?.spec?.replicas == Some(3)).then_some(())
    })
    .await;
    let status = eventually(LIMIT, "the autoscaler in the status", || async {
        let status = apps.get("demo").await.ok()?.status?;
        let streamlet = status.streamlets.into_iter().find(|s| s.name == "log")?;
        streamlet.autoscaling.filter(|a| a.replicas == 3)
    })
    .await;
    assert_eq!(status.lag, 60);
    assert!(
        status.reason.contains("the partitions of its inlets"),
        "{}",
        status.reason
    );
    let events: Api<Event> = Api::default_namespaced(client);
    eventually(LIMIT, "an Autoscaled event", || async {
        reasons(&events, "demo")
            .await
            .contains(&"Autoscaled".to_owned())
            .then_some(())
    })
    .await;
    // The group catches up: the autoscaler scales back down to the minimum.
    let offsets: Vec<runnel_backend::CommitOffset> = (0..3)
        .map(|partition| runnel_backend::CommitOffset {
            topic: "numbers-demo".into(),
            partition,
            offset: 20,
        })
        .collect();
    let consumer = backend
        .consumer(&runnel_backend::ConsumerConfig::new(
            "demo.log.in",
            ["numbers-demo"],
        ))
        .await
        .unwrap();
    consumer.commit(&offsets).await.unwrap();
    eventually(Duration::from_secs(60), "one logger again", || async {
        (deployment(&deployments, "demo-log").await?.spec?.replicas == Some(1)).then_some(())
    })
    .await;
}

/// On a real control plane: the API server is killed and started again while the operator
/// runs. Every watch ends and the server's watch cache starts afresh from etcd, so the
/// operator must watch again (a resourceVersion older than the new cache is answered 410
/// Gone, and the watcher lists again); a Deployment deleted and a change to the Application
/// made right after the restart are both carried out.
#[tokio::test]
async fn after_the_api_server_restarts_the_operator_lists_again_and_carries_on() {
    let cluster = real_cluster().await;
    let client = cluster.client.clone();
    let operator = Operator::start(client.clone(), config("one"));
    let apps: Api<Application> = Api::default_namespaced(client.clone());
    apps.create(&PostParams::default(), &application("demo"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually(LIMIT, "the Deployments", || {
        deployment(&deployments, "demo-log")
    })
    .await;

    let plane = cluster.plane.clone();
    tokio::task::spawn_blocking(move || plane.restart_api_server())
        .await
        .unwrap();
    let restarted = std::time::Instant::now();
    deployments
        .delete("demo-gen", &DeleteParams::default())
        .await
        .unwrap();
    apps.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"streamlets": [
            {"name": "gen", "type": "generator", "replicas": 1},
            {"name": "log", "type": "logger", "replicas": 3}
        ]}})),
    )
    .await
    .unwrap();
    eventually(LIMIT, "three loggers", || async {
        (deployment(&deployments, "demo-log").await?.spec?.replicas == Some(3)).then_some(())
    })
    .await;
    eventually(LIMIT, "the generator's Deployment made again", || {
        deployment(&deployments, "demo-gen")
    })
    .await;
    // Before the watches' backoff was capped at 1 s this took up to 35 s (see WatchBackoff).
    eprintln!(
        "scaled and the Deployment made again {:.1} s after the API server was ready",
        restarted.elapsed().as_secs_f64()
    );
    assert!(!operator.task.is_finished(), "the operator kept running");
}
