//! Every object the operator and the CLI generate, as golden YAML files (read them to
//! review what a cluster gets), each parsed back as its k8s-openapi type and validated
//! against the Kubernetes OpenAPI schemas by an independent validator (PyPI's
//! `kubernetes-validate`, strict: unknown fields are errors).

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use runnel_application::{ApplicationDocument, Configuration};
use runnel_blueprint::descriptor::AppDescriptor;
use runnel_operator::manifests::{Install, Webhook, install};
use runnel_operator::{Desired, Observed, ObservedTopic, ReconcileContext, reconcile};
use serde::de::DeserializeOwned;

use crate::crd::golden;

const DESCRIPTOR: &str = r#"{"descriptor-version": 1, "app": "shop", "streamlets": [
  {"type": "http-ingress",
   "outlets": [{"name": "out", "schema": {"format": "json", "name": "Order", "definition": "string"}}],
   "parameters": [{"key": "api-token", "type": "string"}]},
  {"type": "archive",
   "inlets": [{"name": "in", "schema": {"format": "json", "name": "Order", "definition": "string"}}],
   "volume-mounts": [{"name": "data", "path": "/var/archive", "access-mode": "ReadWriteOnce"}]}
]}"#;

const BLUEPRINT: &str = "name = \"shop\"\n[streamlets]\norders = \"http-ingress\"\narchive = \"archive\"\n[topics.orders]\nproducers = [\"orders.out\"]\nconsumers = [\"archive.in\"]\npartitions = 4\n";

/// The Kubernetes version the validator checks against (the k8s-openapi feature's).
const KUBERNETES: &str = "1.33.0";

fn document() -> ApplicationDocument {
    let descriptor = AppDescriptor::from_json(DESCRIPTOR).unwrap();
    let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), BLUEPRINT, &descriptor)
        .blueprint
        .unwrap();
    let mut document = ApplicationDocument::new(
        &blueprint,
        BLUEPRINT,
        &descriptor,
        "registry.example.com/shop:2.1.0",
        "2.1.0",
    );
    document.spec.kafka.bootstrap_servers =
        Some("kafka-0.kafka:9092,kafka-1.kafka:9092".to_owned());
    for assignment in [
        "pods.orders.http-port=8080",
        "pods.orders.resources.requests.cpu=250m",
        "pods.orders.resources.requests.memory=128Mi",
        "pods.orders.resources.limits.memory=256Mi",
        "pods.orders.labels.team=checkout",
        "pods.orders.annotations.example.com/owner=checkout",
        "pods.orders.env.RUST_BACKTRACE=1",
        "pods.orders.node-selector.kubernetes.io/arch=amd64",
        "pods.orders.service-account-name=orders-ingress",
        r#"pods.orders.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]"#,
        r#"pods.orders.affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "orders"}}}}]}, "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a", "eu-west-1b"]}]}]}}}"#,
        "pods.archive.volumes.data=archive-data",
        "runtime.streamlets.archive.log-level=debug",
        "kafka.security.protocol=SASL_SSL",
        "scaling.archive.max-replicas=4",
        "scaling.archive.target-lag=1000",
    ] {
        document.spec.configuration.assign(assignment).unwrap();
    }
    document
}

fn plan() -> runnel_operator::Plan {
    let document = document();
    let mut app = runnel_operator::Application::from_document(&document);
    app.metadata.namespace = Some("shop".to_owned());
    app.metadata.uid = Some("0f2d6d5c-7c43-4a86-9b4f-3f8e1c9a0b11".to_owned());
    app.metadata.generation = Some(3);
    let mut secret = Configuration::default();
    secret.assign("orders.api-token=tok-123").unwrap();
    secret.assign("kafka.sasl.password=hunter2").unwrap();
    secret.assign("pods.orders.env.DB_PASSWORD=pw").unwrap();
    let observed = Observed {
        secret_configuration: Ok(secret),
        topics: Some(Ok(vec![
            ObservedTopic {
                name: "orders".to_owned(),
                partitions: 4,
            },
            ObservedTopic {
                name: "shop.dead-letter".to_owned(),
                partitions: 1,
            },
        ])),
        ..Observed::default()
    };
    let context = ReconcileContext {
        now: Timestamp::from_second(1_700_000_000).unwrap(),
        operator_version: "0.1.0".to_owned(),
        default_bootstrap_servers: None,
    };
    reconcile(&app, &observed, &context)
}

/// Writes (or checks) `objects` as one multi-document golden file and returns its path.
fn golden_documents(name: &str, objects: &[serde_json::Value]) -> PathBuf {
    let text: String = objects
        .iter()
        .map(|object| format!("---\n{}", runnel_application::to_yaml(object).unwrap()))
        .collect();
    golden(name, &text);
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Every document of a golden file parses as `T` and equals what was generated.
fn parses_back<T: DeserializeOwned + PartialEq + std::fmt::Debug>(path: &Path, generated: &[T]) {
    let text = std::fs::read_to_string(path).unwrap();
    let parsed: Vec<T> = text
        .split("---\n")
        .filter(|document| !document.trim().is_empty())
        .map(|document| serde_norway::from_str(document).unwrap())
        .collect();
    assert_eq!(parsed, generated, "{}", path.display());
}

/// `kubernetes-validate --strict` on the files.
fn validate(files: &[PathBuf]) {
    let output = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict", "-k", KUBERNETES])
        .args(files)
        .output()
        .expect("python3 runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "kubernetes-validate refused (scripts/test installs it):\n{printed}"
    );
    assert!(!printed.contains("ERROR"), "{printed}");
}

#[test]
fn the_streamlet_objects_are_valid_kubernetes_objects() {
    let plan = plan();
    assert!(
        matches!(plan.outcome, runnel_operator::Outcome::Converging(_)),
        "{:?}",
        plan.outcome
    );
    let (mut config_maps, mut secrets, mut deployments, mut services, mut budgets) =
        (vec![], vec![], vec![], vec![], vec![]);
    for desired in &plan.apply {
        match desired.clone() {
            Desired::ConfigMap(o) => config_maps.push(o),
            Desired::Secret(o) => secrets.push(o),
            Desired::Deployment(o) => deployments.push(o),
            Desired::Service(o) => services.push(o),
            Desired::PodDisruptionBudget(o) => budgets.push(o),
        }
    }
    assert_eq!(
        (
            config_maps.len(),
            secrets.len(),
            deployments.len(),
            services.len(),
            budgets.len()
        ),
        (2, 2, 2, 1, 2)
    );
    let json = |objects: &[serde_json::Value]| objects.to_vec();
    let files = [
        golden_documents(
            "objects/configmaps.yaml",
            &json(
                &config_maps
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect::<Vec<_>>(),
            ),
        ),
        golden_documents(
            "objects/secrets.yaml",
            &json(
                &secrets
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect::<Vec<_>>(),
            ),
        ),
        golden_documents(
            "objects/deployments.yaml",
            &json(
                &deployments
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect::<Vec<_>>(),
            ),
        ),
        golden_documents(
            "objects/services.yaml",
            &json(
                &services
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect::<Vec<_>>(),
            ),
        ),
        golden_documents(
            "objects/poddisruptionbudgets.yaml",
            &json(
                &budgets
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect::<Vec<_>>(),
            ),
        ),
    ];
    parses_back::<ConfigMap>(&files[0], &config_maps);
    parses_back::<Secret>(&files[1], &secrets);
    parses_back::<Deployment>(&files[2], &deployments);
    parses_back::<Service>(&files[3], &services);
    parses_back::<PodDisruptionBudget>(&files[4], &budgets);
    validate(&files);
    // Secret values live in Secrets only.
    for file in [&files[0], &files[2], &files[3], &files[4]] {
        let text = std::fs::read_to_string(file).unwrap();
        for secret in ["tok-123", "hunter2", "\"pw\""] {
            assert!(!text.contains(secret), "{} holds a secret", file.display());
        }
    }
}

#[test]
fn the_install_manifests_and_the_crd_are_valid_kubernetes_objects() {
    let mut files = Vec::new();
    for (name, cluster_wide) in [
        ("manifests/namespaced.yaml", false),
        ("manifests/cluster-wide.yaml", true),
    ] {
        let objects = install(&Install {
            namespace: "runnel-system".to_owned(),
            image: "registry.example.com/runnel:0.1.0".to_owned(),
            kafka: Some("kafka:9092".to_owned()),
            cluster_wide,
            // Fixed stand-ins for the PEM files `runnel operator manifests` makes afresh.
            webhook: Some(Webhook {
                certificate: "-----BEGIN CERTIFICATE-----\nserving\n-----END CERTIFICATE-----\n"
                    .to_owned(),
                key: "-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n".to_owned(),
                certificate_authority:
                    "-----BEGIN CERTIFICATE-----\nauthority\n-----END CERTIFICATE-----\n".to_owned(),
                url: None,
            }),
        });
        // The webhook judges Applications in the operator's namespace, or in every one.
        let webhook = objects
            .iter()
            .find(|object| object["kind"] == "ValidatingWebhookConfiguration")
            .expect("a webhook configuration");
        let selector = &webhook["webhooks"][0]["namespaceSelector"];
        if cluster_wide {
            assert!(selector.is_null(), "{name}: {selector}");
        } else {
            assert_eq!(
                selector["matchLabels"]["kubernetes.io/metadata.name"], "runnel-system",
                "{name}"
            );
        }
        let operator_may = |group: &str, resource: &str, verb: &str| {
            objects.iter().any(|object| {
                object["kind"]
                    .as_str()
                    .is_some_and(|kind| kind.ends_with("Role"))
                    && object["metadata"]["name"] == "runnel-operator"
                    && object["rules"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|rule| {
                            rule["apiGroups"] == serde_json::json!([group])
                                && rule["resources"]
                                    .as_array()
                                    .is_some_and(|r| r.iter().any(|r| r == resource))
                                && rule["verbs"]
                                    .as_array()
                                    .is_some_and(|v| v.iter().any(|v| v == verb))
                        })
            })
        };
        // The operator's objects set blockOwnerDeletion, which needs update on finalizers.
        assert!(
            operator_may("runnel.dev", "applications/finalizers", "update"),
            "{name}: the operator may not update applications/finalizers"
        );
        for verb in ["list", "watch", "patch", "delete"] {
            assert!(
                operator_may("policy", "poddisruptionbudgets", verb),
                "{name}: the operator may not {verb} poddisruptionbudgets"
            );
        }
        files.push(golden_documents(name, &objects));
    }
    let crd = runnel_operator::crd();
    let crd_file = golden_documents("objects/crd.yaml", &[serde_json::to_value(&crd).unwrap()]);
    parses_back::<CustomResourceDefinition>(&crd_file, &[crd]);
    files.push(crd_file);
    validate(&files);
}

/// The Application `app build` writes satisfies the CRD's own schema (checked by Python's
/// `jsonschema`, which kubernetes-validate brings along).
#[test]
fn the_application_document_satisfies_the_crd_schema() {
    let mut document = document();
    document.metadata.namespace = Some("shop".to_owned());
    let yaml = document.to_yaml();
    golden("objects/application.yaml", &yaml);
    let crd = runnel_operator::crd();
    let schema = serde_json::to_value(
        crd.spec.versions[0]
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    let instance: serde_json::Value = serde_norway::from_str(&yaml).unwrap();
    let dir = tempfile_dir();
    std::fs::write(dir.join("schema.json"), schema.to_string()).unwrap();
    std::fs::write(dir.join("instance.json"), instance.to_string()).unwrap();
    let script = "import json, sys, jsonschema\nschema = json.load(open(sys.argv[1]))\ninstance = json.load(open(sys.argv[2]))\njsonschema.validate(instance, schema)\nbroken = dict(instance, spec=dict(instance['spec'], streamlets='none'))\ntry:\n    jsonschema.validate(broken, schema)\n    sys.exit('a broken instance passed')\nexcept jsonschema.ValidationError:\n    print('ok')\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(dir.join("schema.json"))
        .arg(dir.join("instance.json"))
        .output()
        .unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "ok",
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("runnel-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
