//! The CRD, the install manifests, the operator and the CLI against a real Kubernetes control
//! plane (kube-apiserver with RBAC and the default admission plugins, kube-controller-manager,
//! etcd; `runnel_test_cluster::ControlPlane`): the server validates what `runnel crd` and
//! `runnel operator manifests` hold, refuses a bad Application itself, the operator's
//! admission webhook refuses one the operator could not run, and the operator,
//! holding only the RBAC the manifests grant its service account, deploys (with a pod
//! template: tolerations, affinity, a node selector and a service account), scales,
//! suspends, resumes and undeploys through real Deployments, ReplicaSets,
//! PodDisruptionBudgets, Leases and garbage collection, a second operator taking the lease
//! over when the first stops and a third when the second's task is dropped; a spec whose
//! pods do not become ready rolled back to the last one that ran; and operator processes
//! taking the lease from a leader stopped, killed or paused.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_operator::admission::AdmissionContext;
use runnel_operator::leader::{LEASE_NAME, LeaderConfig};
use runnel_operator::webhook::WebhookTls;
use runnel_operator::{OperatorConfig, SingleBackplane};
use runnel_test_cluster::ControlPlane;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::cluster::application_file;

const NAMESPACE: &str = "apps";

/// The webhook's certificate and key from the Secret in `manifests`, written into `dir`.
fn webhook_tls(manifests: &str, dir: &Path) -> WebhookTls {
    use serde::Deserialize as _;
    let secret = serde_norway::Deserializer::from_str(manifests)
        .filter_map(|document| k8s_openapi::api::core::v1::Secret::deserialize(document).ok())
        .find(|secret| secret.metadata.name.as_deref() == Some("runnel-operator-webhook"))
        .expect("the manifests hold the webhook's Secret");
    let data = secret.data.expect("the Secret holds data");
    let tls = WebhookTls {
        certificate: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    std::fs::write(&tls.certificate, &data["tls.crt"].0).unwrap();
    std::fs::write(&tls.key, &data["tls.key"].0).unwrap();
    tls
}

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

/// `spec.replicas` of Deployment `name` (`None` when the field is unset or it is missing).
fn replicas(plane: &ControlPlane, name: &str) -> Option<i64> {
    get_json(plane, &["deployment", name])?["spec"]["replicas"].as_i64()
}

/// The names of the app's Pods (owned by a ReplicaSet) that start with `prefix`.
fn pods(plane: &ControlPlane, prefix: &str) -> Vec<Value> {
    items(plane, "pods")
        .into_iter()
        .filter(|pod| {
            pod["metadata"]["name"]
                .as_str()
                .is_some_and(|name| name.starts_with(prefix))
        })
        .collect()
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
    // The webhook: the API server calls it at a URL of this test's, where it is served as
    // `runnel operator run --webhook-listen` serves it, with the manifests' certificate.
    let webhook_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let webhook_url = format!(
        "https://{}/validate",
        webhook_listener.local_addr().unwrap()
    );
    let (code, manifests, errors) = runnel(&[
        "operator",
        "manifests",
        "--image",
        "registry.example/runnel:test",
        "-n",
        NAMESPACE,
        "--webhook-url",
        &webhook_url,
    ]);
    assert_eq!(code, 0, "{errors}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = CancellationToken::new();
    webhook_listener.set_nonblocking(true).unwrap();
    let serving = runtime.spawn(runnel_operator::webhook::serve(
        runtime
            .block_on(async { tokio::net::TcpListener::from_std(webhook_listener) })
            .unwrap(),
        webhook_tls(&manifests, dir.path()),
        AdmissionContext {
            operator_version: "0.1.0".to_owned(),
            default_bootstrap_servers: Some("kafka:9092".to_owned()),
        },
        stop.clone(),
    ));
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
    // One the schema allows but the operator could not run is refused by the webhook with
    // the verifier's message, before it is stored.
    let unrunnable = good.replacen(r#"["log.in"]"#, r#"["log.inn"]"#, 1);
    assert_ne!(unrunnable, good, "the blueprint names log.in:\n{good}");
    let refused = plane.kubectl_with(
        &deployer,
        &["apply", "-f", "-"],
        Some(unrunnable.as_bytes()),
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "the server stored an unrunnable app"
    );
    assert!(
        said.contains(r#"admission webhook "applications.runnel.dev" denied the request: application 'demo' cannot run (InvalidBlueprint)"#)
            && said.contains("log.inn"),
        "{said}"
    );
    eprintln!("kubectl apply of an unrunnable Application:\n{said}");
    assert!(
        get_json(&plane, &["application", "demo"]).is_none(),
        "the refused Application was stored"
    );

    // The operator, as its service account: only what the manifests grant it.
    let operator = plane.kubeconfig_with_token(
        &dir.path().join("operator"),
        &plane.token(NAMESPACE, "runnel-operator"),
        NAMESPACE,
    );
    let client = runtime.block_on(ControlPlane::client(&operator));
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
    let backplane = Arc::new(SingleBackplane(Arc::new(
        runnel_backend::MemoryBackend::new(),
    )));
    let leader_stop = stop.child_token();
    let operating = runtime.spawn(runnel_operator::run(
        client.clone(),
        config.clone(),
        backplane.clone(),
        leader_stop.clone(),
    ));
    let lease = eventually(60, "the operator's lease", || {
        get_json(&plane, &["lease", LEASE_NAME])
    });
    assert_eq!(lease["spec"]["holderIdentity"], "operator-0");

    // deploy: the operator's Deployments, the controller-manager's ReplicaSets and Pods.
    // The generator runs as a service account of its own (which must exist: the API
    // server's ServiceAccount admission refuses pods of a missing one), tolerates a taint,
    // prefers nodes without another generator and needs Linux nodes; an HPA would scale the
    // logger (none runs here).
    kubectl_ok(
        &plane,
        &admin,
        &["create", "serviceaccount", "gen-reader", "-n", NAMESPACE],
        None,
    );
    let deployer_arg = deployer.to_str().unwrap();
    let (code, printed, errors) = runnel(&[
        "deploy",
        file.to_str().unwrap(),
        "gen.rate=7",
        "pods.gen.service-account-name=gen-reader",
        r#"pods.gen.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}]"#,
        r#"pods.gen.affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "gen"}}}}]}}"#,
        "pods.gen.node-selector.kubernetes.io/os=linux",
        "scaling.log.external=true",
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

    // The pod template as the real API server took it: the generator's pods run as its
    // service account with its token mounted (the API server adds the projected volume),
    // the logger's without a token.
    let generator = pods(&plane, "demo-gen").remove(0);
    let spec = &generator["spec"];
    assert_eq!(spec["serviceAccountName"], "gen-reader");
    assert_eq!(spec["automountServiceAccountToken"], true);
    assert!(
        spec["volumes"].as_array().unwrap().iter().any(|volume| {
            volume["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("kube-api-access-"))
        }),
        "the token is mounted: {spec}"
    );
    assert!(
        spec["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "dedicated" && t["effect"] == "NoSchedule"),
        "{spec}"
    );
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(
        spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
        100
    );
    let logger = pods(&plane, "demo-log").remove(0);
    assert_eq!(logger["spec"]["automountServiceAccountToken"], false);
    assert!(
        !logger["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|volume| volume["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("kube-api-access-"))),
        "no token for the logger"
    );
    // The logger's replicas are left to its (absent) HPA: the server defaulted them to 1.
    assert_eq!(replicas(&plane, "demo-log"), Some(1));

    // Server-side apply beside an autoscaler: another client (`kubectl scale`, through the
    // scale subresource as an HPA does) sets the logger's replicas, and they stay, the
    // operator's managedFields entry not holding them; the operator owns the generator's and
    // takes them back from anyone who changes them.
    for (deployment, count) in [("demo-log", "3"), ("demo-gen", "5")] {
        kubectl_ok(
            &plane,
            &admin,
            &[
                "scale",
                "deployment",
                deployment,
                "--replicas",
                count,
                "-n",
                NAMESPACE,
            ],
            None,
        );
    }
    eventually(
        60,
        "the operator taking the generator's replicas back",
        || (replicas(&plane, "demo-gen") == Some(2)).then_some(()),
    );
    assert_eq!(replicas(&plane, "demo-log"), Some(3), "the logger's stay");
    let managers = |name: &str| -> Vec<(String, bool)> {
        get_json(&plane, &["deployment", name, "--show-managed-fields"]).unwrap()["metadata"]
            ["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                let owns_replicas = !entry["fieldsV1"]["f:spec"]["f:replicas"].is_null();
                (entry["manager"].as_str().unwrap().to_owned(), owns_replicas)
            })
            .collect()
    };
    // (A write through the scale subresource leaves no entry of its own.)
    let log = managers("demo-log");
    assert!(
        log.contains(&("runnel-operator".to_owned(), false)),
        "demo-log's managedFields: {log:?}"
    );
    let gen_managers = managers("demo-gen");
    assert!(
        gen_managers.contains(&("runnel-operator".to_owned(), true)),
        "demo-gen's managedFields: {gen_managers:?}"
    );
    kubectl_ok(
        &plane,
        &admin,
        &[
            "scale",
            "deployment",
            "demo-log",
            "--replicas",
            "1",
            "-n",
            NAMESPACE,
        ],
        None,
    );

    // And beside a real HorizontalPodAutoscaler: the controller-manager's HPA controller
    // raises the logger to its minimum (which it does before it looks at any metric, so no
    // metrics server is needed), through the scale subresource, and the operator's applies
    // leave that alone.
    let autoscaler = format!(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: demo-log\n  namespace: {NAMESPACE}\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: demo-log\n  minReplicas: 2\n  maxReplicas: 4\n"
    );
    kubectl_ok(
        &plane,
        &admin,
        &["apply", "-f", "-"],
        Some(autoscaler.as_bytes()),
    );
    eventually(60, "the HPA raising the logger to 2", || {
        (replicas(&plane, "demo-log") == Some(2)).then_some(())
    });
    let hpa = eventually(30, "the HPA's own account of it", || {
        let hpa = get_json(&plane, &["horizontalpodautoscaler", "demo-log"])?;
        (hpa["status"]["desiredReplicas"] == 2).then_some(hpa)
    });
    // The operator reconciles on every change of its Deployments (this one included) and
    // at least every 10 s while pods are not ready: give it that long to disagree.
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(
        replicas(&plane, "demo-log"),
        Some(2),
        "the operator left the HPA's replicas: {hpa}"
    );
    kubectl_ok(
        &plane,
        &admin,
        &[
            "delete",
            "horizontalpodautoscaler",
            "demo-log",
            "-n",
            NAMESPACE,
        ],
        None,
    );
    kubectl_ok(
        &plane,
        &admin,
        &[
            "scale",
            "deployment",
            "demo-log",
            "--replicas",
            "1",
            "-n",
            NAMESPACE,
        ],
        None,
    );

    // A PodDisruptionBudget per streamlet, which the operator could create with its RBAC
    // only, and whose selector the controller-manager's disruption controller matches to
    // the Deployment's pods.
    for (name, streamlet) in [("demo-gen", "gen"), ("demo-log", "log")] {
        let budget = eventually(60, "the PodDisruptionBudget", || {
            get_json(&plane, &["poddisruptionbudget", name])
        });
        assert_eq!(budget["spec"]["maxUnavailable"], 1);
        assert_eq!(
            budget["spec"]["selector"]["matchLabels"]["runnel.dev/streamlet"],
            streamlet
        );
        assert_eq!(
            budget["metadata"]["ownerReferences"][0]["kind"],
            "Application"
        );
    }
    eventually(
        60,
        "the disruption controller counting 2 generators",
        || {
            let budget = get_json(&plane, &["poddisruptionbudget", "demo-gen"])?;
            (budget["status"]["expectedPods"] == 2).then_some(())
        },
    );

    // A second replica waits as a follower on the real Lease; when the leader stops it
    // releases the lease, and the follower takes over at once and carries out the rest.
    // Another replica of the operator: the same configuration under another name.
    let replica = |identity: &str| {
        let mut replica = config.clone();
        replica.identity = identity.to_owned();
        if let Some(leader) = &mut replica.leader {
            leader.identity = identity.to_owned();
        }
        replica
    };
    let following = runtime.spawn(runnel_operator::run(
        client.clone(),
        replica("operator-1"),
        backplane.clone(),
        stop.child_token(),
    ));
    std::thread::sleep(Duration::from_secs(3));
    let lease = get_json(&plane, &["lease", LEASE_NAME]).unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], "operator-0", "{lease}");
    leader_stop.cancel();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), operating).await })
        .expect("the leader stops")
        .unwrap()
        .unwrap();
    let stopped = Instant::now();
    eventually(30, "the follower holding the lease", || {
        let lease = get_json(&plane, &["lease", LEASE_NAME])?;
        (lease["spec"]["holderIdentity"] == "operator-1").then_some(())
    });
    eprintln!(
        "the follower held the lease {} ms after the leader stopped",
        stopped.elapsed().as_millis()
    );

    // scale, through the deployer's rights, and the ReplicaSet follows.
    let (code, printed, errors) = runnel(&["scale", "demo", "gen=3", "--kubeconfig", deployer_arg]);
    assert_eq!(code, 0, "{printed}{errors}");
    eventually(60, "three generators' Pods", || {
        (pods(&plane, "demo-gen").len() == 3).then_some(())
    });

    // suspend, through the deployer's rights: every Deployment (the HPA's too) at 0
    // replicas, their Pods gone, every object kept.
    let (code, printed, errors) = runnel(&["suspend", "demo", "--kubeconfig", deployer_arg]);
    assert_eq!(code, 0, "{printed}{errors}");
    assert!(
        printed.contains("suspended: 2 streamlets scaled to 0 replicas"),
        "{printed}"
    );
    assert_eq!(replicas(&plane, "demo-gen"), Some(0));
    assert_eq!(replicas(&plane, "demo-log"), Some(0));
    eventually(60, "the app's Pods gone", || {
        pods(&plane, "demo-").is_empty().then_some(())
    });
    for kind in ["configmap", "secret", "poddisruptionbudget"] {
        assert!(
            get_json(&plane, &[kind, "demo-gen"]).is_some(),
            "the {kind} stays"
        );
    }
    let app = get_json(&plane, &["application", "demo"]).unwrap();
    assert_eq!(app["status"]["phase"], "Suspended");

    // resume: the spec's replicas again; the HPA's Deployment back to the server's default.
    let (code, printed, errors) = runnel(&["resume", "demo", "--kubeconfig", deployer_arg]);
    assert_eq!(code, 0, "{printed}{errors}");
    assert!(printed.contains("resumed: Pending"), "{printed}");
    eventually(60, "the replicas back", || {
        (replicas(&plane, "demo-gen") == Some(3) && replicas(&plane, "demo-log") == Some(1))
            .then_some(())
    });
    eventually(60, "four Pods again (3 generators, 1 logger)", || {
        (pods(&plane, "demo-gen").len() == 3 && pods(&plane, "demo-log").len() == 1).then_some(())
    });

    // The leader's task is dropped mid-run (as by a program embedding the operator): its
    // lease renewal stops with it and releases the lease, and another replica takes over
    // and does the undeploy. (A leader that dies without releasing is tested on the fake
    // API server: the lease is taken once it has gone unrenewed for its 15 s.)
    let replacing = runtime.spawn(runnel_operator::run(
        client.clone(),
        replica("operator-2"),
        backplane.clone(),
        stop.child_token(),
    ));
    following.abort();
    let died = Instant::now();
    eventually(60, "the new replica holding the lease", || {
        let lease = get_json(&plane, &["lease", LEASE_NAME])?;
        (lease["spec"]["holderIdentity"] == "operator-2").then_some(())
    });
    eprintln!(
        "a new replica held the lease {} ms after the leader's task was dropped",
        died.elapsed().as_millis()
    );

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
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), replacing).await })
        .expect("the operator stops")
        .unwrap()
        .unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), serving).await })
        .expect("the webhook stops")
        .unwrap()
        .unwrap();
}

/// Marks Pod `name` ready, as a kubelet does once its readiness probe passes (no kubelet
/// runs here).
fn mark_ready(plane: &ControlPlane, name: &str) {
    kubectl_ok(
        plane,
        plane.kubeconfig(),
        &[
            "patch",
            "pod",
            name,
            "-n",
            NAMESPACE,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
        ],
        None,
    );
}

#[test]
fn a_spec_whose_pods_do_not_become_ready_is_rolled_back_on_a_real_api_server() {
    let plane = ControlPlane::start();
    let admin = plane.kubeconfig().to_owned();
    let admin_arg = admin.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
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
    kubectl_ok(&plane, &admin, &["create", "namespace", NAMESPACE], None);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(ControlPlane::client(&admin));
    let stop = CancellationToken::new();
    let operating = runtime.spawn(runnel_operator::run(
        client,
        OperatorConfig {
            namespace: Some(NAMESPACE.to_owned()),
            default_bootstrap_servers: Some("kafka:9092".to_owned()),
            kafka_settings: Default::default(),
            leader: None,
            identity: "operator-0".to_owned(),
            version: "0.1.0".to_owned(),
        },
        Arc::new(SingleBackplane(Arc::new(
            runnel_backend::MemoryBackend::new(),
        ))),
        stop.clone(),
    ));

    // Generation 1: deployed; generation 2: rollback switched on with kubectl.
    let first = application_file(dir.path(), "1.0");
    let (code, printed, errors) = runnel(&[
        "deploy",
        first.to_str().unwrap(),
        "-n",
        NAMESPACE,
        "--kubeconfig",
        admin_arg,
    ]);
    assert_eq!(code, 0, "{printed}{errors}");
    kubectl_ok(
        &plane,
        &admin,
        &[
            "patch",
            "rapp",
            "demo",
            "-n",
            NAMESPACE,
            "--type=merge",
            "-p",
            r#"{"spec":{"rollback":{"readinessTimeoutSeconds":15}}}"#,
        ],
        None,
    );

    // Its pods ready: phase Running, and the spec kept in the status through the server's
    // structural schema (nothing pruned, the free-form descriptor included).
    let app = eventually(90, "generation 2 recorded as the last running spec", || {
        for pod in pods(&plane, "demo-") {
            mark_ready(&plane, pod["metadata"]["name"].as_str().unwrap());
        }
        let app = get_json(&plane, &["application", "demo"])?;
        (app["status"]["phase"] == "Running" && app["status"]["lastRunningSpec"]["generation"] == 2)
            .then_some(app)
    });
    let kept = &app["status"]["lastRunningSpec"]["spec"];
    assert_eq!(kept["image"], "registry.example/demo:1.0");
    assert_eq!(kept["rollback"]["readinessTimeoutSeconds"], 15);
    assert_eq!(kept["descriptor"]["app"], "demo", "{kept}");
    assert_eq!(kept["streamlets"], app["spec"]["streamlets"]);

    // Generation 3, a new image whose pods never become ready; the redeploy keeps
    // spec.rollback, and the old pods stay ready beside the new ones (maxUnavailable 0).
    let second = application_file(dir.path(), "2.0");
    let (code, printed, errors) = runnel(&[
        "deploy",
        second.to_str().unwrap(),
        "-n",
        NAMESPACE,
        "--kubeconfig",
        admin_arg,
    ]);
    assert_eq!(code, 0, "{printed}{errors}");
    let image = |name: &str| {
        get_json(&plane, &["deployment", name])
            .map(|d| d["spec"]["template"]["spec"]["containers"][0]["image"].clone())
    };
    let app = get_json(&plane, &["application", "demo"]).unwrap();
    assert_eq!(app["metadata"]["generation"], 3);
    assert_eq!(app["spec"]["rollback"]["readinessTimeoutSeconds"], 15);
    eventually(60, "the new image applied and its pods created", || {
        (image("demo-gen")? == "registry.example/demo:2.0" && pods(&plane, "demo-gen").len() == 2)
            .then_some(())
    });
    let applied = Instant::now();

    // Past the deadline: generation 2's Deployments again, phase and condition RolledBack,
    // a Warning Event.
    let app = eventually(90, "the rollback", || {
        let app = get_json(&plane, &["application", "demo"])?;
        (app["status"]["phase"] == "RolledBack").then_some(app)
    });
    eprintln!(
        "rolled back {} ms after generation 3's pods were created",
        applied.elapsed().as_millis()
    );
    assert!(
        applied.elapsed() >= Duration::from_secs(10),
        "not before the deadline"
    );
    for name in ["demo-gen", "demo-log"] {
        assert_eq!(
            image(name).unwrap(),
            "registry.example/demo:1.0",
            "{name} is generation 2's again"
        );
    }
    let condition = app["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "RolledBack")
        .unwrap()
        .clone();
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "ReadinessTimeout");
    let message = condition["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "generation 3 was not ready 15s after it was applied (streamlet gen 0/1 ready"
        ) && message.ends_with("rolled back to generation 2"),
        "{message}"
    );
    assert_eq!(app["status"]["rollout"]["rolledBack"], true);
    assert_eq!(app["status"]["lastRunningSpec"]["generation"], 2);
    let listed = kubectl_ok(&plane, &admin, &["get", "rapp", "-n", NAMESPACE], None);
    assert!(listed.contains("RolledBack"), "{listed}");
    let events = eventually(30, "the RolledBack Event", || {
        let events: Vec<Value> = items(&plane, "events")
            .into_iter()
            .filter(|event| event["reason"] == "RolledBack")
            .collect();
        (!events.is_empty()).then_some(events)
    });
    assert_eq!(events[0]["type"], "Warning");
    assert_eq!(events[0]["involvedObject"]["kind"], "Application");

    stop.cancel();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), operating).await })
        .expect("the operator stops")
        .unwrap()
        .unwrap();
}

/// An operator process, `runnel operator run` as the administrator, killed when dropped.
struct OperatorProcess(std::process::Child);

impl OperatorProcess {
    fn start(plane: &ControlPlane, identity: &str) -> OperatorProcess {
        let child = Command::new(env!("CARGO_BIN_EXE_runnel"))
            .args(["operator", "run", "-n", NAMESPACE, "--identity", identity])
            .arg("--kubeconfig")
            .arg(plane.kubeconfig())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        OperatorProcess(child)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} failed");
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Operator processes on the real Lease: a leader stopped with SIGTERM releases it before
/// it exits, so a follower takes it over at once; a leader killed with SIGKILL cannot, so
/// a follower takes it once it has gone unrenewed for its 15 s; a leader paused (SIGSTOP)
/// past that loses it to another replica, and once resumed sees the lease taken and exits,
/// saying so, rather than reconcile beside the new leader.
#[test]
fn operator_replicas_take_the_lease_from_a_stopped_killed_or_paused_leader() {
    let plane = ControlPlane::start();
    kubectl_ok(
        &plane,
        plane.kubeconfig(),
        &["create", "namespace", NAMESPACE],
        None,
    );
    let (code, crd, errors) = runnel(&["crd"]);
    assert_eq!(code, 0, "{errors}");
    kubectl_ok(
        &plane,
        plane.kubeconfig(),
        &["apply", "-f", "-"],
        Some(crd.as_bytes()),
    );
    let holder = |plane: &ControlPlane| {
        get_json(plane, &["lease", LEASE_NAME])
            .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
    };
    // Starts `identity` as a follower of `leader`.
    let follower = |identity: &str, leader: &str| {
        let process = OperatorProcess::start(&plane, identity);
        std::thread::sleep(Duration::from_secs(2)); // it tries the lease and waits
        assert_eq!(holder(&plane).as_deref(), Some(leader));
        process
    };
    let takeover = |from: &mut OperatorProcess, signal: &str, to: &str| {
        let signalled = Instant::now();
        from.signal(signal);
        eventually(60, &format!("{to} leading"), || {
            (holder(&plane)? == to).then_some(())
        });
        let took = signalled.elapsed();
        println!(
            "leader test: {to} held the lease {} ms after {signal}",
            took.as_millis()
        );
        took
    };

    let mut first = OperatorProcess::start(&plane, "operator-a");
    eventually(60, "the first operator leading", || {
        (holder(&plane)? == "operator-a").then_some(())
    });
    let mut second = follower("operator-b", "operator-a");
    let took = takeover(&mut first, "-TERM", "operator-b");
    assert!(
        took < Duration::from_secs(10),
        "a stopped leader releases the lease: {took:?}"
    );
    let stopped = eventually(30, "the stopped leader exiting", || {
        first.0.try_wait().unwrap()
    });
    assert!(stopped.success(), "{stopped:?}");

    let mut third = follower("operator-c", "operator-b");
    let took = takeover(&mut second, "-KILL", "operator-c");
    assert!(
        took >= Duration::from_secs(10),
        "a killed leader cannot release the lease: {took:?}"
    );

    // The third paused past its lease: a fourth replica takes over; resumed, the paused
    // one finds the lease taken and stops.
    let fourth = OperatorProcess::start(&plane, "operator-d");
    takeover(&mut third, "-STOP", "operator-d");
    third.signal("-CONT");
    let exited = eventually(60, "the deposed leader exiting", || {
        third.0.try_wait().unwrap()
    });
    assert!(!exited.success());
    let mut errors = String::new();
    std::io::Read::read_to_string(third.0.stderr.as_mut().unwrap(), &mut errors).unwrap();
    assert!(
        errors.contains(&format!("lost the leader lease {NAMESPACE}/{LEASE_NAME}")),
        "{errors}"
    );
    assert_eq!(holder(&plane).as_deref(), Some("operator-d"));
    drop(fourth);
}
