//! The CRD, the install manifests, the operator and the CLI against a real Kubernetes control
//! plane (kube-apiserver with RBAC and the default admission plugins, kube-controller-manager,
//! etcd; `runnel_test_cluster::ControlPlane`): the server validates what `runnel crd` and
//! `runnel operator manifests` hold, refuses a bad Application itself, and the operator,
//! holding only the RBAC the manifests grant its service account, deploys, scales and
//! undeploys through real Deployments, ReplicaSets, Leases and garbage collection.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_operator::leader::{LEASE_NAME, LeaderConfig};
use runnel_operator::{OperatorConfig, SingleBackplane};
use runnel_test_cluster::ControlPlane;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::cluster::application_file;

const NAMESPACE: &str = "apps";

/// Runs `runnel ARGS`; its exit code, stdout and stderr.
fn runnel(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `kubectl ARGS` as `kubeconfig`'s user, with `input`; panics unless it succeeds.
fn kubectl_ok(
    plane: &ControlPlane,
    kubeconfig: &Path,
    args: &[&str],
    input: Option<&[u8]>,
) -> String {
    let output = plane.kubectl_with(kubeconfig, args, input);
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `kubectl get ARGS -o json` as the administrator, parsed; `None` when it fails.
fn get_json(plane: &ControlPlane, args: &[&str]) -> Option<Value> {
    let mut all = args.to_vec();
    all.extend(["-n", NAMESPACE, "-o", "json"]);
    let output = plane.kubectl(&[&["get"], all.as_slice()].concat());
    output
        .status
        .success()
        .then(|| serde_json::from_slice(&output.stdout).unwrap())
}

/// The items of `kind` in the namespace.
fn items(plane: &ControlPlane, kind: &str) -> Vec<Value> {
    get_json(plane, &[kind])
        .and_then(|list| list["items"].as_array().cloned())
        .unwrap_or_default()
}

/// Waits up to `seconds` until `check` holds.
fn eventually<T>(seconds: u64, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {seconds} s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The names of the items of `kind` owned by an object of `owner_kind`.
fn owned_by(plane: &ControlPlane, kind: &str, owner_kind: &str) -> Vec<String> {
    items(plane, kind)
        .iter()
        .filter(|item| {
            item["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|owners| owners.iter().any(|owner| owner["kind"] == owner_kind))
        })
        .map(|item| item["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_operator_and_the_cli_run_an_app_on_a_real_api_server() {
    let plane = ControlPlane::start();
    let admin = plane.kubeconfig().to_owned();
    let dir = tempfile::tempdir().unwrap();

    // The CRD: a structural schema the server accepts, with its printer columns and docs.
    let (code, crd, errors) = runnel(&["crd"]);
    assert_eq!(code, 0, "{errors}");
    kubectl_ok(&plane, &admin, &["apply", "-f", "-"], Some(crd.as_bytes()));
    kubectl_ok(
        &plane,
        &admin,
        &[
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/applications.runnel.dev",
        ],
        None,
    );
    // The server publishes the CRD's OpenAPI, which `explain` reads, a moment after it is
    // established.
    let explained = eventually(60, "kubectl explain applications.spec", || {
        let output = plane.kubectl(&["explain", "applications.spec"]);
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    });
    assert!(explained.contains("streamlets"), "{explained}");

    // The install manifests: RBAC the server lets an administrator grant.
    kubectl_ok(&plane, &admin, &["create", "namespace", NAMESPACE], None);
    let (code, manifests, errors) = runnel(&[
        "operator",
        "manifests",
        "--image",
        "registry.example/runnel:test",
        "-n",
        NAMESPACE,
    ]);
    assert_eq!(code, 0, "{errors}");
    kubectl_ok(
        &plane,
        &admin,
        &["apply", "-f", "-"],
        Some(manifests.as_bytes()),
    );
    // Someone who deploys apps, with the deployer Role the manifests hold.
    kubectl_ok(
        &plane,
        &admin,
        &["create", "serviceaccount", "deployer", "-n", NAMESPACE],
        None,
    );
    kubectl_ok(
        &plane,
        &admin,
        &[
            "create",
            "rolebinding",
            "deployer",
            "--role=runnel-deployer",
            "--serviceaccount=apps:deployer",
            "-n",
            NAMESPACE,
        ],
        None,
    );
    let deployer = plane.kubeconfig_with_token(
        &dir.path().join("deployer"),
        &plane.token(NAMESPACE, "deployer"),
        NAMESPACE,
    );

    // A bad Application is refused by the server's own validation of the schema.
    let file = application_file(dir.path(), "1.0");
    let good = std::fs::read_to_string(&file).unwrap();
    let bad = good.replacen("replicas: 1", "replicas: -1", 1);
    assert_ne!(bad, good, "the Application names its replicas:\n{good}");
    let refused = plane.kubectl_with(
        &deployer,
        &["apply", "--dry-run=server", "-f", "-"],
        Some(bad.as_bytes()),
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "the server took replicas -1");
    assert!(
        said.contains("replicas") && said.contains("greater than or equal to 0"),
        "{said}"
    );

    // The operator, as its service account: only what the manifests grant it.
    let operator = plane.kubeconfig_with_token(
        &dir.path().join("operator"),
        &plane.token(NAMESPACE, "runnel-operator"),
        NAMESPACE,
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(ControlPlane::client(&operator));
    let stop = CancellationToken::new();
    let config = OperatorConfig {
        namespace: Some(NAMESPACE.to_owned()),
        default_bootstrap_servers: Some("kafka:9092".to_owned()),
        kafka_settings: Default::default(),
        leader: Some(LeaderConfig {
            namespace: NAMESPACE.to_owned(),
            name: LEASE_NAME.to_owned(),
            identity: "operator-0".to_owned(),
            lease_duration: Duration::from_secs(15),
            version: "0.1.0".to_owned(),
        }),
        identity: "operator-0".to_owned(),
        version: "0.1.0".to_owned(),
    };
    let operating = runtime.spawn(runnel_operator::run(
        client,
        config,
        Arc::new(SingleBackplane(Arc::new(
            runnel_backend::MemoryBackend::new(),
        ))),
        stop.clone(),
    ));
    let lease = eventually(60, "the operator's lease", || {
        get_json(&plane, &["lease", LEASE_NAME])
    });
    assert_eq!(lease["spec"]["holderIdentity"], "operator-0");

    // deploy: the operator's Deployments, the controller-manager's ReplicaSets and Pods.
    let deployer_arg = deployer.to_str().unwrap();
    let (code, printed, errors) = runnel(&[
        "deploy",
        file.to_str().unwrap(),
        "gen.rate=7",
        "--scale",
        "gen=2",
        "--kubeconfig",
        deployer_arg,
    ]);
    assert_eq!(code, 0, "{printed}{errors}");
    eventually(60, "the generator's Deployment with 2 replicas", || {
        let deployment = get_json(&plane, &["deployment", "demo-gen"])?;
        (deployment["spec"]["replicas"] == 2).then_some(())
    });
    eventually(60, "ReplicaSets of both Deployments", || {
        let sets = owned_by(&plane, "replicasets", "Deployment");
        (["demo-gen", "demo-log"]
            .iter()
            .all(|name| sets.iter().any(|set| set.starts_with(name))))
        .then_some(())
    });
    eventually(60, "three Pods of the app (2 generators, 1 logger)", || {
        let pods = owned_by(&plane, "pods", "ReplicaSet");
        (pods.iter().filter(|pod| pod.starts_with("demo-")).count() == 3).then_some(())
    });
    let listed = kubectl_ok(&plane, &admin, &["get", "rapp", "-n", NAMESPACE], None);
    assert!(
        listed.starts_with("NAME") && listed.contains("VERSION") && listed.contains("demo"),
        "{listed}"
    );
    eventually(60, "the operator's status of the app", || {
        let app = get_json(&plane, &["application", "demo"])?;
        app["status"]["phase"].as_str().map(str::to_owned)
    });

    // scale, through the deployer's rights, and the ReplicaSet follows.
    let (code, printed, errors) = runnel(&["scale", "demo", "log=3", "--kubeconfig", deployer_arg]);
    assert_eq!(code, 0, "{printed}{errors}");
    eventually(60, "three loggers' Pods", || {
        let pods = owned_by(&plane, "pods", "ReplicaSet");
        (pods
            .iter()
            .filter(|pod| pod.starts_with("demo-log"))
            .count()
            == 3)
            .then_some(())
    });

    // undeploy: the Application goes, and the garbage collector takes what it owned. (The
    // controller-manager learns of a new CRD's kind at its next resync, up to 30 s.)
    let (code, printed, errors) = runnel(&["undeploy", "demo", "--kubeconfig", deployer_arg]);
    assert_eq!(code, 0, "{printed}{errors}");
    eventually(
        120,
        "the app's Deployments, ReplicaSets and Pods gone",
        || {
            let left: Vec<String> = ["deployments", "replicasets", "pods"]
                .iter()
                .flat_map(|kind| items(&plane, kind))
                .filter_map(|item| item["metadata"]["name"].as_str().map(str::to_owned))
                .filter(|name| name.starts_with("demo-"))
                .collect();
            left.is_empty().then_some(())
        },
    );
    assert!(get_json(&plane, &["application", "demo"]).is_none());

    stop.cancel();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), operating).await })
        .expect("the operator stops")
        .unwrap()
        .unwrap();
}
