use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::runtime::watcher;
use kube::{Api, ResourceExt as _};
use runnel_test_cluster::{FakeApiServer, Fault};
use serde_json::json;

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
        "data": {"key": "value"}
    }))
    .unwrap()
}

fn status_code(error: &kube::Error) -> u16 {
    match error {
        kube::Error::Api(status) => status.code,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn objects_are_created_read_listed_replaced_patched_and_deleted() {
    let server = FakeApiServer::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client("apps"), "apps");
    let created = maps
        .create(&PostParams::default(), &config_map("a", &[("team", "x")]))
        .await
        .unwrap();
    maps.create(&PostParams::default(), &config_map("b", &[("team", "y")]))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    let again = maps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap_err();
    assert_eq!(status_code(&again), 409);

    let listed = maps
        .list(&ListParams::default().labels("team=x"))
        .await
        .unwrap();
    assert_eq!(
        listed
            .items
            .iter()
            .map(|m| m.name_any())
            .collect::<Vec<_>>(),
        ["a"]
    );

    // A replace with a stale resourceVersion is a conflict.
    let mut stale = created.clone();
    let mut fresh = maps.get("a").await.unwrap();
    fresh.data = Some(BTreeMap::from([("key".to_owned(), "newer".to_owned())]));
    maps.replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    stale.data = Some(BTreeMap::from([("key".to_owned(), "older".to_owned())]));
    let conflict = maps
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(status_code(&conflict), 409);
    assert_eq!(maps.get("a").await.unwrap().data.unwrap()["key"], "newer");

    let patched = maps
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"other": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap().len(), 2);

    maps.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_code(&maps.get("a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn server_side_apply_keeps_fields_of_other_managers_and_reports_conflicts() {
    let server = FakeApiServer::start().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client("apps"), "apps");
    let desired = |replicas: Option<i32>| {
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "main", "image": "app:1"}]}}}
        });
        if let Some(replicas) = replicas {
            object["spec"]["replicas"] = json!(replicas);
        }
        object
    };
    let operator = PatchParams::apply("operator");
    deployments
        .patch("d", &operator, &Patch::Apply(desired(Some(1))))
        .await
        .unwrap();
    // Someone else scales it and annotates it.
    deployments
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"replicas": 4}, "metadata": {"annotations": {"note": "by hand"}}}),
            ),
        )
        .await
        .unwrap();
    let conflict = deployments
        .patch("d", &operator, &Patch::Apply(desired(Some(1))))
        .await
        .unwrap_err();
    assert_eq!(status_code(&conflict), 409);
    // Without the replicas, the apply leaves them and the annotation alone.
    let applied = deployments
        .patch("d", &operator, &Patch::Apply(desired(None)))
        .await
        .unwrap();
    assert_eq!(applied.spec.unwrap().replicas, Some(4));
    assert_eq!(applied.metadata.annotations.unwrap()["note"], "by hand");
    // Forced, the operator takes the replicas back.
    let forced = deployments
        .patch(
            "d",
            &PatchParams::apply("operator").force(),
            &Patch::Apply(desired(Some(2))),
        )
        .await
        .unwrap();
    assert_eq!(forced.spec.unwrap().replicas, Some(2));
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert!(managers.contains(&"operator".to_owned()), "{managers:?}");
    // Status is written only through the subresource.
    deployments
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 9}})),
        )
        .await
        .unwrap();
    assert!(deployments.get("d").await.unwrap().status.is_none());
    deployments
        .patch_status(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        deployments
            .get("d")
            .await
            .unwrap()
            .status
            .unwrap()
            .ready_replicas,
        Some(2)
    );
}

#[tokio::test]
async fn watches_resume_after_being_closed_and_relist_after_compaction() {
    let server = FakeApiServer::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client("apps"), "apps");
    let (names, mut received) = tokio::sync::mpsc::unbounded_channel();
    let watched = maps.clone();
    tokio::spawn(async move {
        let mut events = watcher(watched, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            if let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event
                && names.send(object.name_any()).is_err()
            {
                return;
            }
        }
    });
    let count = |server: &FakeApiServer, watch: bool| {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.query.contains("watch=true") == watch)
            .count()
    };
    let until = |server: FakeApiServer, watch: bool, at_least: usize| async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while count(&server, watch) < at_least {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no request number {at_least}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let mut seen = Vec::new();
    let mut wait_for = async |name: &str, seen: &mut Vec<String>| {
        while !seen.iter().any(|n| n == name) {
            let next = tokio::time::timeout(Duration::from_secs(20), received.recv()).await;
            seen.push(next.expect("an event in time").expect("the watcher runs"));
        }
    };
    until(server.clone(), true, 1).await;

    // A closed watch is resumed from the last resource version, and nothing is missed.
    server.close_watches();
    maps.create(&PostParams::default(), &config_map("two", &[]))
        .await
        .unwrap();
    wait_for("two", &mut seen).await;
    until(server.clone(), true, 2).await;
    assert_eq!(count(&server, false), 1, "resuming needs no new list");

    // Disconnected while the history is compacted: the resumed watch gets 410 Gone, and the
    // watcher lists again, which shows what it missed.
    server.fail_next(Fault {
        method: Some(axum::http::Method::GET),
        path_contains: "watch=true".to_owned(),
        code: 500,
        times: 2,
    });
    server.close_watches();
    maps.create(&PostParams::default(), &config_map("three", &[]))
        .await
        .unwrap();
    server.compact();
    wait_for("three", &mut seen).await;
    assert!(
        count(&server, false) >= 2,
        "the watcher listed again after 410 Gone"
    );
}

#[tokio::test]
async fn deleting_an_owner_collects_its_dependents_and_pods_terminate_gracefully() {
    let server = FakeApiServer::start().await;
    let client = server.client("apps");
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let pods: Api<Pod> = Api::namespaced(client, "apps");
    let owner = maps
        .create(&PostParams::default(), &config_map("owner", &[]))
        .await
        .unwrap();
    let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.uid().unwrap(), "blockOwnerDeletion": true, "controller": true}]);
    let mut dependent = config_map("dependent", &[]);
    dependent.metadata.owner_references = serde_json::from_value(reference.clone()).unwrap();
    maps.create(&PostParams::default(), &dependent)
        .await
        .unwrap();
    maps.create(&PostParams::default(), &config_map("bystander", &[]))
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "ownerReferences": reference}, "spec": {"containers": [{"name": "c"}]}})).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    maps.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    // The owner waits for its dependents; the pod waits for its kubelet.
    let waiting = maps.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(status_code(&maps.get("dependent").await.unwrap_err()), 404);
    let terminating = pods.get("p").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    // The kubelet stops the container and deletes the pod for good; the owner goes.
    pods.delete("p", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert_eq!(status_code(&maps.get("owner").await.unwrap_err()), 404);
    assert!(
        maps.get("bystander").await.is_ok(),
        "what it does not own stays"
    );
}

#[tokio::test]
async fn injected_faults_fail_the_matching_requests_only() {
    let server = FakeApiServer::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client("apps"), "apps");
    server.fail_next(Fault {
        method: Some(axum::http::Method::POST),
        path_contains: "/configmaps".to_owned(),
        code: 500,
        times: 1,
    });
    let failed = maps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap_err();
    assert_eq!(status_code(&failed), 500);
    maps.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
}

#[tokio::test]
async fn custom_resources_are_served_once_their_definition_exists() {
    let server = FakeApiServer::start().await;
    let client = server.client("apps");
    let resource = kube::api::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "apps", &resource);
    let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}})).unwrap();
    assert_eq!(
        status_code(
            &widgets
                .create(&PostParams::default(), &widget)
                .await
                .unwrap_err()
        ),
        404
    );
    let crds: Api<DynamicObject> = Api::all_with(
        client,
        &kube::api::ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let created = widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["size"], 1);
}
