//! The whole Kubernetes path on one machine: `sensor-data build`, then `runnel deploy` to a
//! real kube-apiserver and kube-controller-manager (`scripts/kube-dev`), whose ReplicaSets
//! make the Pods that the kubelet stand-in, registered as a Node, runs as chrooted
//! processes from the built image; the operator creating topics on a broker (tansu in one
//! test, Apache Kafka in another), records flowing end to end, `runnel status`, `runnel
//! scale`, `runnel configure`, a killed pod restarted without losing anything, a member
//! stuck without partitions restarted by its liveness probe, and `runnel undeploy`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use runnel_kafka::test_broker::{ApacheKafka, TANSU_SETTINGS, Tansu, TestBroker};
use runnel_operator::leader::{LEASE_NAME, LeaderConfig};
use runnel_operator::{Application, KafkaBackplanes, OperatorConfig};
use runnel_test_cluster::{ControlPlane, Kubelet};
use sensor_data::model::{Metric, SensorData};
use tokio_util::sync::CancellationToken;

use crate::kafka_support::{arrivals, distinct_metrics, read_topic};
use crate::python::MetricCount;
use crate::support::{BLUEPRINT, decode, run_to_end, stderr_of};

const NAMESPACE: &str = "sensors";
const IMAGE: &str = "registry.test/sensor-data:0.1.0";
const LIMIT: Duration = Duration::from_secs(120);

/// The cluster: the control plane, the kubelet stand-in and the operator, on a runtime of
/// their own (the CLI runs its own).
struct Cluster {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    kubelet: Kubelet,
    stop: CancellationToken,
    kubeconfig: PathBuf,
    _plane: ControlPlane,
}

impl Cluster {
    fn start(work: &Path, layout: &Path, broker: &impl TestBroker) -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let stop = CancellationToken::new();
        let kubeconfig = work.join("kubeconfig");
        let (plane, client, kubelet) = runtime.block_on(async {
            let plane = ControlPlane::start();
            std::fs::copy(plane.kubeconfig(), &kubeconfig).unwrap();
            let client = ControlPlane::client(plane.kubeconfig()).await;
            let namespace = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(NAMESPACE.to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            };
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap();
            let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
            crds.create(&PostParams::default(), &runnel_operator::crd())
                .await
                .unwrap();
            // The server serves the kind once the CRD is established.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !crds
                .get("applications.runnel.dev")
                .await
                .unwrap()
                .status
                .and_then(|status| status.conditions)
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
            {
                assert!(Instant::now() < deadline, "the CRD was not established");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let images = BTreeMap::from([(IMAGE.to_owned(), layout.to_owned())]);
            let kubelet = Kubelet::start(
                client.clone(),
                "stand-in",
                NAMESPACE,
                images,
                work,
                stop.clone(),
            );
            let config = OperatorConfig {
                namespace: Some(NAMESPACE.to_owned()),
                default_bootstrap_servers: Some(broker.bootstrap_servers()),
                kafka_settings: broker
                    .config()
                    .settings
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
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
            tokio::spawn(runnel_operator::run(
                client.clone(),
                config,
                Arc::new(KafkaBackplanes::default()),
                stop.clone(),
            ));
            (plane, client, kubelet)
        });
        Cluster {
            runtime,
            client,
            kubelet,
            stop,
            kubeconfig,
            _plane: plane,
        }
    }

    /// `runnel ARGS --kubeconfig FILE`, in this process: exit code and output.
    fn runnel(&self, args: &[&str]) -> (u8, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut argv = vec!["runnel".to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        argv.push("--kubeconfig".to_owned());
        argv.push(self.kubeconfig.display().to_string());
        let code = runnel_cli::main_with_args(argv, &mut out, &mut err);
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err)
        );
        let code = if code == std::process::ExitCode::SUCCESS {
            0
        } else {
            1
        };
        (code, printed)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let _inside = self.runtime.enter();
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    fn pods(&self, streamlet: &str) -> Vec<Pod> {
        let selector = format!("runnel.dev/app=sensor-data,runnel.dev/streamlet={streamlet}");
        self.runtime
            .block_on(
                self.api::<Pod>()
                    .list(&ListParams::default().labels(&selector)),
            )
            .unwrap()
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect()
    }

    fn ready_pods(&self, streamlet: &str) -> Vec<String> {
        self.pods(streamlet)
            .into_iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .map(|p| p.name_any())
            .collect()
    }

    /// The pods of a streamlet, their status and logs, and the application's status: what
    /// a failing test shows.
    fn describe(&self, streamlet: &str) -> String {
        let selector = format!("runnel.dev/streamlet={streamlet}");
        let pods = self
            .runtime
            .block_on(
                self.api::<Pod>()
                    .list(&ListParams::default().labels(&selector)),
            )
            .unwrap();
        let mut text = String::new();
        for pod in pods.items {
            text.push_str(&format!(
                "pod {} (deleting: {:?}): {}\n{}\n",
                pod.name_any(),
                pod.metadata.deletion_timestamp,
                serde_json::to_string(&pod.status).unwrap(),
                self.kubelet.logs(&pod.name_any())
            ));
        }
        if let Some(status) = self.application().and_then(|a| a.status) {
            text.push_str(&format!(
                "application: {} {}\n",
                status.phase, status.message
            ));
        }
        text
    }

    /// Waits until the Application's status counts a restart of `streamlet`.
    fn wait_for_a_restart(&self, streamlet: &str) {
        wait_until("the restart in the application's status", LIMIT, || {
            let status = self.application()?.status?;
            let restarts = status
                .streamlets
                .iter()
                .find(|s| s.name == streamlet)?
                .restarts;
            (restarts >= 1).then_some(())
        });
    }

    fn application(&self) -> Option<Application> {
        self.runtime
            .block_on(self.api::<Application>().get_opt("sensor-data"))
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.cancel();
        // Let the kubelet stand-in kill its processes.
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn wait_until<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

const STREAMLETS: [&str; 5] = [
    "generator",
    "to-metrics",
    "validation",
    "valid-logger",
    "invalid-logger",
];

impl Cluster {
    /// `runnel configure` of a valid-logger parameter: its pod alone is replaced, by a ready
    /// one, and every other streamlet keeps its pods.
    fn configure_rolls_only_the_valid_logger(&self) {
        let before: BTreeMap<&str, Vec<String>> = STREAMLETS
            .iter()
            .map(|s| (*s, self.ready_pods(s)))
            .collect();
        let (code, printed) = self.runnel(&[
            "configure",
            "sensor-data",
            "valid-logger.msg-prefix=checked",
            "-n",
            NAMESPACE,
        ]);
        assert_eq!(code, 0, "{printed}");
        let deadline = Instant::now() + LIMIT;
        loop {
            let now = self.ready_pods("valid-logger");
            if now.len() == 1
                && now != before["valid-logger"]
                && self.pods("valid-logger").len() == 1
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the valid-logger did not roll within {LIMIT:?}:\n{}",
                self.describe("valid-logger")
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        for streamlet in STREAMLETS.iter().filter(|s| **s != "valid-logger") {
            assert_eq!(
                self.ready_pods(streamlet),
                before[streamlet],
                "{streamlet} was not restarted"
            );
        }
    }
}

/// Builds the image, starts the cluster and deploys the app with the broker's client settings,
/// quiet loggers and `settings`; returns once every streamlet has a ready pod and the app
/// is Running.
fn deployed(work: &Path, broker: &impl TestBroker, settings: &[&str]) -> Cluster {
    let quiet = [
        "valid-logger.log-every=100000",
        "invalid-logger.log-every=100000",
    ];
    let settings: Vec<&str> = quiet.iter().chain(settings).copied().collect();
    deployed_app(work, broker, Path::new(BLUEPRINT), &STREAMLETS, &settings)
}

/// As [`deployed`], for the app of `blueprint` whose streamlets are `streamlets`.
fn deployed_app(
    work: &Path,
    broker: &impl TestBroker,
    blueprint: &Path,
    streamlets: &[&str],
    settings: &[&str],
) -> Cluster {
    let build = work.join("build");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .arg("build")
        .arg(blueprint)
        .args(["--image", IMAGE, "--output"])
        .arg(&build);
    let built = run_to_end(command, Duration::from_secs(300));
    assert!(built.status.success(), "{}", stderr_of(&built));
    let cluster = Cluster::start(work, &build.join("image"), broker);

    let yaml = build.join("sensor-data.yaml");
    let mut args = vec![
        "deploy".to_owned(),
        yaml.display().to_string(),
        "-n".to_owned(),
        NAMESPACE.to_owned(),
    ];
    // The client settings the broker needs (tansu's session timeouts; none for Kafka).
    for (key, value) in broker.config().settings.iter() {
        args.push(format!("kafka.{key}={value}"));
    }
    args.extend(settings.iter().map(|setting| (*setting).to_owned()));
    let (code, printed) = cluster.runnel(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("create application 'sensor-data' in sensors"),
        "{printed}"
    );

    // Every streamlet gets a ready pod, started from the image, and the app is Running.
    let deadline = Instant::now() + LIMIT;
    while !streamlets.iter().all(|s| cluster.ready_pods(s).len() == 1) {
        if Instant::now() > deadline {
            let pods: String = streamlets.iter().map(|s| cluster.describe(s)).collect();
            panic!("every streamlet ready did not happen within {LIMIT:?}:\n{pods}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    wait_until("phase Running", LIMIT, || {
        let status = cluster.application()?.status?;
        (status.phase == runnel_application::Phase::Running).then_some(())
    });
    cluster
}

/// The app on tansu, a second Kafka implementation: deploy, status with the pod's lag,
/// scale, configure, a killed pod restarted, every reading's metrics, undeploy.
#[test]
fn an_app_runs_on_tansu_from_build_to_undeploy() {
    let broker = Tansu::start();
    let work = tempfile::tempdir().unwrap();
    let cluster = deployed(work.path(), &broker, &["generator.records-per-second=40"]);
    // Records flow end to end: readings become metrics, validated, to valid-metrics.
    let valid = read_topic(
        &broker,
        "valid-metrics",
        LIMIT,
        crate::kafka_support::at_least(20),
    );
    assert!(valid.len() >= 20, "{} valid metrics", valid.len());
    let (code, printed) = cluster.runnel(&["status", "sensor-data", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("phase: Running"), "{printed}");
    let to_metrics = printed
        .lines()
        .find(|l| l.starts_with("to-metrics"))
        .unwrap()
        .to_owned();
    let cells: Vec<&str> = to_metrics.split_whitespace().collect();
    assert_eq!(cells[1], "1/1", "{printed}");
    assert!(
        cells[3].parse::<u64>().is_ok(),
        "the lag comes from the pod: {printed}"
    );

    // Scale to-metrics: a second process joins and takes one of the two partitions.
    let (code, printed) =
        cluster.runnel(&["scale", "sensor-data", "to-metrics=2", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    let pair = wait_until("two ready to-metrics pods", LIMIT, || {
        let ready = cluster.ready_pods("to-metrics");
        (ready.len() == 2).then_some(ready)
    });
    wait_until("each to-metrics pod owning one partition", LIMIT, || {
        pair.iter()
            .all(|pod| {
                cluster
                    .kubelet
                    .logs(pod)
                    .lines()
                    .rev()
                    .find_map(|l| l.split("partitions assigned: ").nth(1))
                    .is_some_and(|owned| {
                        owned
                            .split(" group=")
                            .next()
                            .unwrap_or_default()
                            .split(", ")
                            .count()
                            == 1
                            && !owned.starts_with("none")
                    })
            })
            .then_some(())
    });

    // Configure one streamlet: only its pod is replaced.
    cluster.configure_rolls_only_the_valid_logger();
    let config = cluster
        .runtime
        .block_on(cluster.api::<ConfigMap>().get("sensor-data-valid-logger"))
        .unwrap();
    assert!(config.data.unwrap()["runnel.toml"].contains("msg-prefix = \"checked\""));

    // Kill one to-metrics process: the kubelet restarts it, the status counts it.
    let victim = pair[0].clone();
    assert!(cluster.kubelet.kill(&victim));
    wait_until("the killed pod restarted and ready", LIMIT, || {
        let pod = cluster
            .pods("to-metrics")
            .into_iter()
            .find(|p| p.name_any() == victim)?;
        let status = pod.status?;
        let restarts = status.container_statuses?.first()?.restart_count;
        let ready = status
            .conditions?
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        (restarts >= 1 && ready).then_some(())
    });
    cluster.wait_for_a_restart("to-metrics");

    // Stop the generator, then check nothing was lost: every reading has its three metrics.
    let (code, printed) = cluster.runnel(&["scale", "sensor-data", "generator=0", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    wait_until("the generator stopped", LIMIT, || {
        cluster.pods("generator").is_empty().then_some(())
    });
    let readings: BTreeSet<i64> =
        read_topic(&broker, "sensor-data", Duration::from_secs(20), |_| false)
            .iter()
            .map(|seen| decode::<SensorData>(&seen.value).sequence)
            .collect();
    assert!(readings.len() > 50, "{} readings", readings.len());
    let expected = 3 * readings.len();
    let metrics = read_topic(&broker, "metrics", LIMIT, distinct_metrics(expected));
    let counts = arrivals(
        metrics
            .iter()
            .map(|seen| decode::<Metric>(&seen.value))
            .collect::<Vec<_>>()
            .iter(),
    );
    for sequence in &readings {
        for name in ["power", "rotor-speed", "wind-speed"] {
            assert!(
                counts.contains_key(&(*sequence, name.to_owned())),
                "metric {name} of reading {sequence} was lost"
            );
        }
    }

    // Undeploy: every process stops, everything the operator created goes, the topics stay,
    // and a ConfigMap of someone else's stays too.
    let theirs: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "notes", "labels": {"runnel.dev/app": "sensor-data"}}, "data": {"a": "b"}
    }))
    .unwrap();
    cluster
        .runtime
        .block_on(
            cluster
                .api::<ConfigMap>()
                .create(&PostParams::default(), &theirs),
        )
        .unwrap();
    let (code, printed) = cluster.runnel(&["undeploy", "sensor-data", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    wait_until("no process left", LIMIT, || {
        cluster.kubelet.running().is_empty().then_some(())
    });
    let deployments = cluster
        .runtime
        .block_on(cluster.api::<Deployment>().list(&ListParams::default()))
        .unwrap();
    assert!(deployments.items.is_empty());
    let left: Vec<String> = cluster
        .runtime
        .block_on(cluster.api::<ConfigMap>().list(&ListParams::default()))
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        // The controller-manager publishes its CA into every namespace.
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, ["notes"]);
    let still = read_topic(
        &broker,
        "sensor-data",
        Duration::from_secs(10),
        crate::kafka_support::at_least(1),
    );
    assert!(!still.is_empty(), "topics are never deleted");
}

/// Consumers that join `group` on `topic` and hold what they are given without reading or
/// committing, as a stuck member would. Their client ids sort before `runnel`'s, so the
/// range assignor hands them the partitions first. They leave the group when dropped.
struct Squatters {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Squatters {
    fn join(broker: &Tansu, group: &str, topic: &str, count: usize) -> Squatters {
        use rdkafka::consumer::{BaseConsumer, Consumer as _};
        let consumers: Vec<BaseConsumer> = (0..count)
            .map(|n| {
                let mut config = rdkafka::ClientConfig::new();
                config
                    .set("bootstrap.servers", broker.bootstrap_servers())
                    .set("group.id", group)
                    .set("client.id", format!("0-squatter-{n}"))
                    .set("enable.auto.commit", "false");
                for (key, value) in TANSU_SETTINGS {
                    config.set(*key, *value);
                }
                let consumer: BaseConsumer = config.create().unwrap();
                consumer.subscribe(&[topic]).unwrap();
                consumer
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // Polling keeps them in the group; what they are given they never read on.
            while !stopped.load(Ordering::Relaxed) {
                for consumer in &consumers {
                    let _ = consumer.poll(Duration::from_millis(50));
                }
            }
            for consumer in &consumers {
                consumer.unsubscribe();
            }
        });
        Squatters {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Squatters {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A member that holds none of its partitions while they wait unread: `runnel status`
/// shows why its pod is not ready (what the pod's `/health/ready` says), and its liveness
/// check fails after `STUCK_WITHOUT_PARTITIONS`, so the kubelet restarts it.
#[test]
fn a_member_stuck_without_partitions_shows_why_and_is_restarted() {
    let broker = Tansu::start();
    let work = tempfile::tempdir().unwrap();
    let cluster = deployed(work.path(), &broker, &["generator.records-per-second=20"]);
    let [pod] = cluster.ready_pods("valid-logger").try_into().unwrap();
    let squatters = Squatters::join(&broker, "sensor-data.valid-logger.in", "valid-metrics", 2);

    // After the grace period the pod is not ready, and status says why, from the pod.
    let bound = runnel_runtime::STUCK_WITHOUT_PARTITIONS;
    let deadline = Instant::now() + LIMIT;
    let printed = loop {
        let (code, printed) = cluster.runnel(&["status", "sensor-data", "-n", NAMESPACE]);
        assert_eq!(code, 0, "{printed}");
        if printed.lines().any(|line| {
            line.split_whitespace().take(2).eq(["valid-logger", "0/1"])
                && line.contains("not ready: ")
        }) {
            break printed;
        }
        assert!(
            Instant::now() < deadline,
            "status did not show why valid-logger is not ready within {LIMIT:?}:\n{printed}\n{}",
            cluster.describe("valid-logger")
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let row = printed
        .lines()
        .find(|line| line.starts_with("valid-logger"))
        .unwrap();
    assert!(
        row.contains(&format!(
            "not ready: {pod}: valid-logger: inlet 'in' has held none of the 1 partitions of topic 'valid-metrics'"
        )),
        "{printed}"
    );

    let container = |pod: &str| {
        cluster
            .pods("valid-logger")
            .into_iter()
            .find(|p| p.name_any() == pod)?
            .status?
            .container_statuses?
            .into_iter()
            .next()
    };
    assert_eq!(container(&pod).unwrap().restart_count, 0, "{printed}");

    // Past the bound, liveness fails and the kubelet kills the process (it never exits by
    // itself) and starts it again.
    let noticed = Instant::now();
    let restarted = wait_until("the stuck pod restarted", bound + LIMIT, || {
        container(&pod).filter(|status| status.restart_count >= 1)
    });
    let killed = restarted
        .last_state
        .and_then(|last| last.terminated)
        .unwrap();
    assert_eq!(killed.exit_code, 137, "{killed:?}");
    // The grace period had passed when status showed the problem; the rest of the bound
    // had to pass before the kill.
    assert!(
        noticed.elapsed() >= bound - Duration::from_secs(30),
        "restarted {:?} after the problem showed",
        noticed.elapsed()
    );

    // Once the squatters leave, the restarted member gets its partition and is ready.
    drop(squatters);
    wait_until("valid-logger ready again", LIMIT, || {
        (cluster.ready_pods("valid-logger") == [pod.clone()]).then_some(())
    });
}

/// The app on a real kube-apiserver and kube-controller-manager and a real Kafka broker
/// (Apache Kafka, one node): the operator's Deployments become real ReplicaSets and Pods,
/// which the kubelet stand-in runs from the built image; records flow, the Application
/// turns Running, a scaled streamlet gets a second pod whose process takes a partition, a
/// configuration change rolls only its streamlet's pod through the real Deployment
/// controller, a killed process is restarted and counted, and undeploy leaves the garbage
/// collector to remove the Pods, whose processes stop.
///
/// `runnel status` reads each pod's lag through the real API server's pod proxy. The
/// stand-in is a Node the pods are bound to, so deleted pods stop within their grace
/// period, as a kubelet stops them.
#[test]
fn an_app_runs_on_a_real_api_server_from_build_to_undeploy() {
    let broker = ApacheKafka::start();
    let work = tempfile::tempdir().unwrap();
    let cluster = deployed(work.path(), &broker, &["generator.records-per-second=40"]);
    let valid = read_topic(
        &broker,
        "valid-metrics",
        LIMIT,
        crate::kafka_support::at_least(20),
    );
    assert!(valid.len() >= 20, "{} valid metrics", valid.len());
    let owners: Vec<String> = cluster
        .pods("to-metrics")
        .iter()
        .flat_map(|pod| pod.metadata.owner_references.clone().unwrap_or_default())
        .map(|owner| owner.kind)
        .collect();
    assert_eq!(
        owners,
        ["ReplicaSet"],
        "the controller-manager made the pod"
    );
    let status = wait_until("the Application running, in `runnel status`", LIMIT, || {
        let (code, printed) = cluster.runnel(&["status", "sensor-data", "-n", NAMESPACE]);
        (code == 0 && printed.contains("phase: Running")).then_some(printed)
    });
    let to_metrics: Vec<&str> = status
        .lines()
        .find(|line| line.starts_with("to-metrics"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(to_metrics[1], "1/1", "{status}");
    assert!(
        to_metrics[3].parse::<u64>().is_ok(),
        "the lag comes from the pod, through the API server's proxy: {status}"
    );

    let (code, printed) =
        cluster.runnel(&["scale", "sensor-data", "to-metrics=2", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    let pair = wait_until("two ready to-metrics pods", LIMIT, || {
        let ready = cluster.ready_pods("to-metrics");
        (ready.len() == 2).then_some(ready)
    });

    // Configure one streamlet: the real Deployment controller rolls its pod alone.
    cluster.configure_rolls_only_the_valid_logger();

    let victim = pair[0].clone();
    assert!(cluster.kubelet.kill(&victim));
    cluster.wait_for_a_restart("to-metrics");

    let logger = cluster.ready_pods("valid-logger")[0].clone();
    let (code, printed) = cluster.runnel(&["undeploy", "sensor-data", "-n", NAMESPACE]);
    assert_eq!(code, 0, "{printed}");
    // The garbage collector learns a new CRD's kind at its next resync (up to 30 s).
    wait_until("every pod gone and its process stopped", LIMIT, || {
        let left: usize = STREAMLETS.iter().map(|s| cluster.pods(s).len()).sum();
        (left == 0 && cluster.kubelet.running().is_empty()).then_some(())
    });
    // Bound to the stand-in's node, a deleted pod waits for its kubelet: the process got
    // SIGTERM and drained within its grace period instead of being killed.
    let log = cluster.kubelet.logs(&logger);
    assert!(log.contains("offsets committed"), "{logger}:\n{log}");
}

/// The Python variant (`python/blueprint.toml`) on a real API server and tansu: `build` puts
/// an interpreter, its standard library, the shared libraries it links, fastavro and the
/// blueprint's modules in the image; the pods run both Python streamlets with that
/// interpreter under chroot (nothing of the host's Python is reachable), counts flow from
/// the Rust generator through both, and a killed Python streamlet's pod is restarted and
/// goes on counting.
#[test]
fn python_streamlets_run_from_the_image_on_a_real_api_server() {
    let broker = Tansu::start();
    let work = tempfile::tempdir().unwrap();
    let blueprint = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/blueprint.toml");
    let streamlets = ["generator", "py-metrics", "py-counts"];
    let settings = ["generator.records-per-second=20"];
    let cluster = deployed_app(work.path(), &broker, &blueprint, &streamlets, &settings);
    // The image holds the interpreter, its standard library and the module, each source
    // with byte code Python loads without checking the source (flags 1: unchecked hash).
    let root = work.path().join("unpacked");
    runnel_image::unpack(&work.path().join("build/image"), Some("0.1.0"), &root).unwrap();
    assert!(root.join("usr/local/bin/python3").is_file());
    let bytecode = |directory: &str, stem: &str| {
        let cache = root.join(directory).join("__pycache__");
        let entry = std::fs::read_dir(&cache)
            .unwrap_or_else(|error| panic!("{}: {error}", cache.display()))
            .flatten()
            .find(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}."))
            })
            .unwrap_or_else(|| panic!("no byte code of {stem} in {}", cache.display()));
        std::fs::read(entry.path()).unwrap()
    };
    let module = bytecode("app", "sensor_streamlets");
    assert_eq!(module[4..8], [1, 0, 0, 0], "an unchecked-hash .pyc");
    let python_lib = std::fs::read_dir(root.join("usr/local/lib"))
        .unwrap()
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .unwrap()
        .path();
    assert!(python_lib.join("os.py").is_file());
    assert!(
        !python_lib.join("test").exists(),
        "the standard library's tests are left out"
    );
    let standard = bytecode(python_lib.join("json").to_str().unwrap(), "__init__");
    assert_eq!(standard[4..8], [1, 0, 0, 0]);
    let counted = |at_least| {
        read_topic(
            &broker,
            "metric-counts",
            LIMIT,
            crate::kafka_support::at_least(at_least),
        )
        .iter()
        .map(|seen| decode::<MetricCount>(&seen.value))
        .collect::<Vec<_>>()
    };
    let counts = counted(30);
    assert!(counts.len() >= 30, "{} counts", counts.len());
    for count in &counts {
        assert!(
            ["power", "rotor-speed", "wind-speed"].contains(&count.name.as_str())
                && count.seen >= 1,
            "{count:?}"
        );
    }
    let pod = cluster.ready_pods("py-counts")[0].clone();
    let log = cluster.kubelet.logs(&pod);
    assert!(!log.contains("Traceback"), "{pod}:\n{log}");

    assert!(cluster.kubelet.kill(&pod));
    cluster.wait_for_a_restart("py-counts");
    let more = counts.len() + 60;
    assert!(
        counted(more).len() >= more,
        "counting went on after the restart"
    );
}

mod power {
    use runnel::prelude::*;

    /// What the SQL streamlet of the test below writes: a device's count of power
    /// readings so far.
    #[record]
    #[derive(Debug, Clone, PartialEq)]
    pub(super) struct PowerReadings {
        pub(super) device_id: String,
        pub(super) readings: i64,
    }
}

/// A stateful SQL streamlet on the real control plane: the app with a query added whose
/// text is in a file of its own (`sql-file`), counting each device's power readings (an
/// aggregate without a window, whose results update). `build` writes the query into the
/// blueprint it ships, since a pod reads its blueprint from a ConfigMap, away from that
/// file; each pod plans it again. A killed pod of it restarts from its checkpoint: every
/// device's count goes on from where it was, never inserted anew.
#[test]
fn a_sql_streamlet_in_a_file_of_its_own_runs_on_a_real_api_server() {
    let broker = Tansu::start();
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    std::fs::create_dir_all(app.join("queries")).unwrap();
    let query = "SELECT device_id, COUNT(*) AS readings\nFROM metrics\nWHERE name = 'power'\nGROUP BY device_id\n";
    std::fs::write(app.join("queries/power.sql"), query).unwrap();
    let text = std::fs::read_to_string(BLUEPRINT).unwrap();
    let metrics = "consumers = [\"validation.in\"]";
    assert!(text.contains(metrics) && text.contains("[topics.sensor-data]"));
    let text = text
        .replace(
            "[topics.sensor-data]",
            "[streamlets.power]\nsql-file = \"queries/power.sql\"\nrecord-name = \"PowerReadings\"\n\n[topics.sensor-data]",
        )
        .replace(metrics, "consumers = [\"validation.in\", \"power.metrics\"]")
        + "\n[topics.power-readings]\nproducers = [\"power.out\"]\n";
    let blueprint = app.join("blueprint.toml");
    std::fs::write(&blueprint, text).unwrap();
    let streamlets: Vec<&str> = STREAMLETS.iter().copied().chain(["power"]).collect();
    let settings = [
        "valid-logger.log-every=100000",
        "invalid-logger.log-every=100000",
        "generator.records-per-second=20",
    ];
    let cluster = deployed_app(work.path(), &broker, &blueprint, &streamlets, &settings);
    let shipped = cluster.application().unwrap().spec.blueprint;
    assert!(
        !shipped.contains("sql-file") && shipped.contains(query),
        "{shipped}"
    );

    // Each change with its kind, and the least count of the four devices so far.
    let changes = |enough: &dyn Fn(i64) -> bool| {
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        let seen = read_topic(&broker, "power-readings", LIMIT, |seen| {
            let row = decode::<power::PowerReadings>(&seen.value);
            let count = counts.entry(row.device_id).or_default();
            *count = (*count).max(row.readings);
            counts.len() == 4 && enough(*counts.values().min().unwrap())
        });
        seen.iter()
            .map(|seen| {
                let kind = seen.header("runnel.row.kind").expect("a row kind");
                (kind, decode::<power::PowerReadings>(&seen.value))
            })
            .collect::<Vec<_>>()
    };
    // Every device counted, then counted on for a few checkpoints' time (at 5 of its
    // readings a second; the first results count the backlog of the streamlet's start).
    let first = changes(&|_| true);
    let started = first.iter().map(|(_, row)| row.readings).max().unwrap();
    let before = changes(&|least| least >= started + 15);
    let inserted = |changes: &[(String, power::PowerReadings)]| -> Vec<String> {
        let inserts = changes.iter().filter(|(kind, _)| kind == "+I");
        inserts.map(|(_, row)| row.device_id.clone()).collect()
    };
    assert_eq!(
        inserted(&before).len(),
        4,
        "one insert per device: {before:?}"
    );
    let highest = before.iter().map(|(_, row)| row.readings).max().unwrap();

    let pod = cluster.ready_pods("power")[0].clone();
    assert!(cluster.kubelet.kill(&pod));
    cluster.wait_for_a_restart("power");
    // A count lost with the pod would start anew, inserted again.
    let after = changes(&|least| least > highest + 10);
    assert_eq!(
        inserted(&after).len(),
        4,
        "the restarted streamlet counted on from its checkpoint: {after:?}"
    );
}

/// The app binary is lean: building images and Applications needs no Kubernetes client.
#[test]
fn the_app_binary_does_not_link_kube() {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_sensor-data")).unwrap();
    for name in [&b"kube_client"[..], b"k8s_openapi", b"kube_runtime"] {
        assert!(
            !binary.windows(name.len()).any(|window| window == name),
            "the sensor-data binary contains {}",
            String::from_utf8_lossy(name)
        );
    }
    // The image builder is in it (the check above would pass for an empty file too).
    assert!(binary.windows(12).any(|w| w == b"runnel_image"));
}
