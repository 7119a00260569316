use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use runnel_application::ApplicationDocument;
use runnel_blueprint::descriptor::AppDescriptor;
use runnel_operator::leader::{LEASE_NAME, LeaderConfig, PROTOCOL_ANNOTATION};
use runnel_operator::{Application, OperatorConfig, SingleBackplane};
use runnel_test_cluster::{ControlPlane, FakeApiServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const NAMESPACE: &str = "apps";

const DESCRIPTOR: &str = r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
  {"type": "generator",
   "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "rate", "type": "int", "default": "5"}, {"key": "api-token", "type": "string", "default": ""}]},
  {"type": "logger",
   "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "prefix", "type": "string", "default": "n"}]}
]}"#;

const BLUEPRINT: &str = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\nlog = \"logger\"\n[topics.numbers]\nproducers = [\"gen.out\"]\nconsumers = [\"log.in\"]\npartitions = 3\n";

/// An API server with the CRD, an operator (leading, on an in-memory backplane) on a
/// runtime of their own, and a kubeconfig file for the `runnel` processes in namespace
/// [`NAMESPACE`].
struct Cluster {
    runtime: tokio::runtime::Runtime,
    server: Server,
    client: kube::Client,
    stop: CancellationToken,
    dir: tempfile::TempDir,
}

/// Which API server a [`Cluster`] talks to.
enum Server {
    /// The in-process fake, for tests that inject faults or read its request log.
    Fake(FakeApiServer),
    /// A real control plane (`scripts/kube-dev`), stopped when dropped.
    Real { _plane: ControlPlane },
}

impl Cluster {
    /// A cluster on the fake API server.
    fn start() -> Cluster {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let server = runtime.block_on(FakeApiServer::start());
        let client = {
            let _inside = runtime.enter();
            server.client(NAMESPACE)
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kubeconfig"), server.kubeconfig(NAMESPACE)).unwrap();
        Cluster::with(runtime, Server::Fake(server), client, dir)
    }

    /// A cluster on a real control plane, talked to as its administrator.
    fn start_real() -> Cluster {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let plane = ControlPlane::start();
        let dir = tempfile::tempdir().unwrap();
        let admin = std::fs::read_to_string(plane.kubeconfig()).unwrap();
        let kubeconfig = admin.replace("namespace: default", &format!("namespace: {NAMESPACE}"));
        std::fs::write(dir.path().join("kubeconfig"), kubeconfig).unwrap();
        let client = runtime.block_on(async {
            let client = ControlPlane::client(&dir.path().join("kubeconfig")).await;
            let namespaces: Api<Namespace> = Api::all(client.clone());
            let namespace: Namespace =
                serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
            namespaces
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap();
            client
        });
        let cluster = Cluster::with(runtime, Server::Real { _plane: plane }, client, dir);
        // The server serves Applications once the CRD is established.
        cluster.eventually("the CRD established", |c| {
            let crds: Api<CustomResourceDefinition> = {
                let _inside = c.runtime.enter();
                Api::all(c.client.clone())
            };
            let crd = c
                .runtime
                .block_on(crds.get("applications.runnel.dev"))
                .ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        });
        cluster
    }

    /// Installs the CRD and starts the operator.
    fn with(
        runtime: tokio::runtime::Runtime,
        server: Server,
        client: kube::Client,
        dir: tempfile::TempDir,
    ) -> Cluster {
        runtime.block_on(async {
            let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
            crds.create(&PostParams::default(), &runnel_operator::crd())
                .await
                .unwrap();
        });
        let _inside = runtime.enter();
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
        runtime.spawn(runnel_operator::run(
            client.clone(),
            config,
            Arc::new(SingleBackplane(Arc::new(
                runnel_backend::MemoryBackend::new(),
            ))),
            stop.clone(),
        ));
        drop(_inside);
        Cluster {
            runtime,
            server,
            client,
            stop,
            dir,
        }
    }

    /// The fake API server.
    ///
    /// # Panics
    ///
    /// On a real control plane.
    fn fake(&self) -> &FakeApiServer {
        match &self.server {
            Server::Fake(server) => server,
            Server::Real { .. } => panic!("this test needs the fake API server"),
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// Runs `runnel ARGS --kubeconfig FILE`.
    fn runnel(&self, args: &[&str]) -> (i32, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_runnel"))
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let _inside = self.runtime.enter();
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// Waits until `check` holds.
    fn eventually<T>(&self, what: &str, mut check: impl FnMut(&Cluster) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(value) = check(self) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not happen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn application(&self) -> Option<Application> {
        self.runtime
            .block_on(self.api::<Application>().get_opt("demo"))
            .unwrap()
    }

    fn deployment(&self, name: &str) -> Option<Deployment> {
        self.runtime
            .block_on(self.api::<Deployment>().get_opt(name))
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// `app build`'s YAML for the demo app, version `version`.
pub(crate) fn application_file(dir: &Path, version: &str) -> PathBuf {
    let descriptor = AppDescriptor::from_json(DESCRIPTOR).unwrap();
    let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), BLUEPRINT, &descriptor)
        .blueprint
        .unwrap();
    let document = ApplicationDocument::new(
        &blueprint,
        BLUEPRINT,
        &descriptor,
        &format!("registry.example/demo:{version}"),
        version,
    );
    let path = dir.join(format!("demo-{version}.yaml"));
    std::fs::write(&path, document.to_yaml()).unwrap();
    path
}

fn template_hash(deployment: &Deployment) -> String {
    deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap()["runnel.dev/config-hash"]
        .clone()
}

/// On the fake API server, since a conflict is injected into a write of `scale` and its
/// request log shows the write retried; the real one runs the same commands in
/// `real_cluster.rs`.
#[test]
fn deploy_scale_configure_and_undeploy_through_the_cli() {
    let cluster = Cluster::start();
    cluster.eventually("the operator's lease", |c| {
        c.runtime
            .block_on(c.api::<Lease>().get_opt(LEASE_NAME))
            .unwrap()
    });
    let file = application_file(cluster.dir.path(), "1.0");
    let file = file.to_str().unwrap();

    // Bad configuration: every problem, nothing written.
    let (code, _, errors) = cluster.runnel(&[
        "deploy",
        file,
        "gen.rate=fast",
        "log.colour=red",
        "logg.prefix=x",
        "scaling.gem.max-replicas=3",
        "pods.lg.labels.team=a",
    ]);
    assert_eq!(code, 1, "{errors}");
    for misspelt in [("logg", "log"), ("gem", "gen"), ("lg", "log")] {
        let expected = format!(
            "the blueprint has no streamlet '{}'; did you mean '{}'?",
            misspelt.0, misspelt.1
        );
        assert!(errors.contains(&expected), "{expected}\n{errors}");
    }
    assert!(
        errors.contains("streamlets.gen.rate: 'fast' is not an integer"),
        "{errors}"
    );
    assert!(
        errors.contains("streamlets.log.colour: streamlet type 'logger' has no parameter 'colour'"),
        "{errors}"
    );
    assert!(cluster.application().is_none());

    let (code, printed, errors) = cluster.runnel(&[
        "deploy",
        file,
        "gen.rate=7",
        "gen.api-token=s3cret",
        "--scale",
        "gen=2",
    ]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.contains("create application 'demo' in apps: version 1.0"),
        "{printed}"
    );
    assert!(
        printed.contains("+ streamlet gen (generator), 2 replicas"),
        "{printed}"
    );
    assert!(
        printed.contains("+ streamlets.gen.api-token = [redacted]"),
        "{printed}"
    );
    assert!(!printed.contains("s3cret") && !errors.contains("s3cret"));
    let app = cluster.application().unwrap();
    assert!(
        !serde_json::to_string(&app.spec).unwrap().contains("s3cret"),
        "secrets stay out of the Application"
    );
    let secret = cluster
        .runtime
        .block_on(cluster.api::<Secret>().get("demo-configuration"))
        .unwrap();
    assert_eq!(secret.metadata.owner_references.unwrap()[0].name, "demo");
    let generator = cluster.eventually("the generator's Deployment", |c| c.deployment("demo-gen"));
    assert_eq!(generator.spec.as_ref().unwrap().replicas, Some(2));
    let log_before = cluster.eventually("the logger's Deployment", |c| c.deployment("demo-log"));

    // list and status read what the operator wrote.
    let (code, printed, _) = cluster.runnel(&["list"]);
    assert_eq!(code, 0);
    assert!(printed.starts_with("NAME  VERSION  PHASE"), "{printed}");
    assert!(printed.contains("demo  1.0"), "{printed}");
    cluster.eventually("a status", |c| c.application()?.status);
    let (code, printed, _) = cluster.runnel(&["status", "demo"]);
    assert_eq!(code, 0);
    assert!(printed.contains("phase: Pending"), "{printed}");
    assert!(
        printed.contains("gen        0/2    0         -"),
        "{printed}"
    );

    // A redeploy of a new version keeps the configuration set before.
    let newer = application_file(cluster.dir.path(), "1.1");
    let (code, printed, errors) = cluster.runnel(&["deploy", newer.to_str().unwrap()]);
    assert_eq!(code, 0, "{errors}");
    assert!(printed.contains("~ version: 1.0 -> 1.1"), "{printed}");
    assert!(
        !printed.contains("streamlets.gen.rate"),
        "nothing changes in the configuration: {printed}"
    );
    let app = cluster.application().unwrap();
    assert_eq!(
        app.spec.configuration.streamlets["gen"].parameters["rate"],
        "7"
    );
    assert_eq!(
        app.spec.streamlet("gen").unwrap().replicas,
        2,
        "replicas set before stay"
    );

    // scale (retrying a write that meets a concurrent change), configure (rolling only
    // the logger), configuration (masked).
    cluster.fake().fail_next(runnel_test_cluster::Fault {
        method: Some(runnel_test_cluster::Method::PUT),
        path_contains: "/applications/demo".to_owned(),
        code: 409,
        times: 1,
    });
    let (code, printed, errors) = cluster.runnel(&["scale", "demo", "log=3"]);
    assert_eq!(code, 0, "{errors}");
    assert!(printed.contains("~ log: 1 -> 3 replicas"), "{printed}");
    let puts = cluster
        .fake()
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/applications/demo"))
        .count();
    // The injected conflict forces one retry; the operator's status writes, landing between
    // a read and a write of the CLI on a loaded machine, can cause another genuine one.
    assert!(
        puts >= 2,
        "the conflict was retried: {puts} writes of the Application"
    );
    cluster.eventually("three loggers", |c| {
        (c.deployment("demo-log")?.spec?.replicas == Some(3)).then_some(())
    });

    // A fourth logger would read none of the three partitions: said at once, and in status.
    let (code, printed, errors) = cluster.runnel(&["scale", "demo", "log=4"]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.contains("warning: streamlet log reads topics with at most 3 partitions, so 1 of its 4 replicas will hold none and stay idle"),
        "{printed}"
    );
    cluster.eventually("the idle replica in the status", |c| {
        let status = c.application()?.status?;
        let idle = status.condition("IdleReplicas")?;
        (idle.status == "True").then_some(())
    });
    let (_, printed, _) = cluster.runnel(&["status", "demo"]);
    assert!(printed.contains("0/4 (1 idle)"), "{printed}");
    let (code, _, errors) = cluster.runnel(&["scale", "demo", "log=3"]);
    assert_eq!(code, 0, "{errors}");
    cluster.eventually("three loggers again", |c| {
        (c.deployment("demo-log")?.spec?.replicas == Some(3)).then_some(())
    });
    let gen_hash = template_hash(&cluster.deployment("demo-gen").unwrap());
    // configure's apply carries the resourceVersion it read: a conflict (such as the
    // operator's status write in between) is read, checked and applied again.
    let applies = |c: &Cluster| {
        c.fake()
            .requests()
            .iter()
            .filter(|r| {
                r.method == "PATCH"
                    && r.path.ends_with("/applications/demo")
                    && r.query.contains("fieldManager=runnel-cli")
            })
            .count()
    };
    let before = applies(&cluster);
    cluster.fake().fail_next(runnel_test_cluster::Fault {
        method: Some(runnel_test_cluster::Method::PATCH),
        path_contains: "/applications/demo?".to_owned(),
        code: 409,
        times: 1,
    });
    let (code, printed, errors) = cluster.runnel(&["configure", "demo", "log.prefix=doubled"]);
    assert_eq!(code, 0, "{errors}");
    assert_eq!(
        printed.matches("+ streamlets.log.prefix = doubled").count(),
        1,
        "{printed}"
    );
    // The injected conflict forces one retry; a status write of the operator between the
    // read and the write can force another.
    assert!(applies(&cluster) - before >= 2, "the conflict was retried");
    cluster.eventually("the logger rolled", |c| {
        (template_hash(&c.deployment("demo-log")?) != template_hash(&log_before)).then_some(())
    });
    assert_eq!(
        template_hash(&cluster.deployment("demo-gen").unwrap()),
        gen_hash,
        "the generator did not roll"
    );
    let (code, printed, _) = cluster.runnel(&["configuration", "demo"]);
    assert_eq!(code, 0);
    assert!(printed.contains("api-token = \"[redacted]\""), "{printed}");
    assert!(printed.contains("prefix = \"doubled\""), "{printed}");

    // version names the operator; a protocol mismatch is refused, saying what to upgrade.
    let (code, printed, _) = cluster.runnel(&["version"]);
    assert_eq!(code, 0);
    assert!(
        printed.contains("operator: runnel 0.1.0 (protocol 1)"),
        "{printed}"
    );
    cluster.runtime.block_on(async {
        // The operator renews its lease with what it is; a newer one would say 2.
        cluster
            .api::<Lease>()
            .patch(
                LEASE_NAME,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {PROTOCOL_ANNOTATION: "2"}}})),
            )
            .await
            .unwrap();
    });
    let (code, _, errors) = cluster.runnel(&["deploy", file]);
    assert_eq!(code, 1);
    assert!(
        errors.contains("speaks protocol 2: upgrade this runnel to 0.1.0"),
        "{errors}"
    );

    let (code, printed, errors) = cluster.runnel(&["undeploy", "demo"]);
    assert_eq!(code, 0, "{errors}");
    assert!(printed.contains("application 'demo' is gone"), "{printed}");
    assert!(cluster.deployment("demo-gen").is_none());
    assert!(
        cluster
            .runtime
            .block_on(cluster.api::<Secret>().get_opt("demo-configuration"))
            .unwrap()
            .is_none()
    );
}

/// kubectl finds `kubectl-runnel` on the PATH and runs it as `kubectl runnel`.
#[test]
fn kubectl_runs_runnel_as_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_runnel"),
        dir.path().join("kubectl-runnel"),
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(dir.path().to_owned())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let kubectl = |args: &[&str]| {
        let output = Command::new("kubectl")
            .args(args)
            .env("PATH", &path)
            .output()
            .expect("kubectl runs (scripts/test installs Debian's kubernetes-client)");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (ok, listed) = kubectl(&["plugin", "list"]);
    assert!(ok, "{listed}");
    assert!(listed.contains("kubectl-runnel"), "{listed}");
    let (ok, printed) = kubectl(&["runnel", "version", "--client"]);
    assert!(ok, "{printed}");
    assert_eq!(
        printed,
        format!(
            "client: runnel {} (protocol 1)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let (ok, help) = kubectl(&["runnel", "--help"]);
    assert!(ok);
    assert!(help.contains("Usage: kubectl runnel <COMMAND>"), "{help}");
}

/// On a real control plane: suspend and resume as a user sees them, and the real API
/// server's defaulting of the replicas the operator stops applying.
#[test]
fn suspend_and_resume_through_the_cli() {
    let cluster = Cluster::start_real();
    cluster.eventually("the operator's lease", |c| {
        c.runtime
            .block_on(c.api::<Lease>().get_opt(LEASE_NAME))
            .unwrap()
    });
    let file = application_file(cluster.dir.path(), "1.0");
    let file = file.to_str().unwrap();
    let (code, _, errors) = cluster.runnel(&[
        "deploy",
        file,
        "scaling.log.external=true",
        "--scale",
        "gen=2",
    ]);
    assert_eq!(code, 0, "{errors}");
    let replicas = |c: &Cluster, name: &str| c.deployment(name).map(|d| d.spec.unwrap().replicas);
    cluster.eventually("the generators", |c| {
        (replicas(c, "demo-gen")? == Some(2)).then_some(())
    });
    cluster.eventually("the logger", |c| c.deployment("demo-log"));

    // suspend: every Deployment kept, at 0 replicas, the HPA-scaled one too.
    let (code, printed, errors) = cluster.runnel(&["suspend", "demo"]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.starts_with("application 'demo' in apps: suspending\n  ~ gen: 2 replicas -> 0 replicas\n  ~ log: its autoscaler's replicas (scaling external) -> 0 replicas\n"),
        "{printed}"
    );
    assert!(
        printed.contains("suspended: 2 streamlets scaled to 0 replicas"),
        "it waits for the operator: {printed}"
    );
    assert_eq!(replicas(&cluster, "demo-gen"), Some(Some(0)));
    assert_eq!(replicas(&cluster, "demo-log"), Some(Some(0)));
    let budgets: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> = cluster.api();
    assert!(
        cluster
            .runtime
            .block_on(budgets.get_opt("demo-gen"))
            .unwrap()
            .is_some(),
        "the objects stay"
    );
    let (_, printed, _) = cluster.runnel(&["status", "demo"]);
    assert!(printed.contains("phase: Suspended"), "{printed}");
    assert!(
        printed.contains("condition Suspended: True (Suspended)"),
        "{printed}"
    );
    let (code, printed, _) = cluster.runnel(&["suspend", "demo"]);
    assert_eq!(code, 0);
    assert_eq!(
        printed,
        "application 'demo' in apps is already suspended; nothing was written\n"
    );

    // Scaling and redeploying a suspended app keep it suspended.
    let (code, printed, errors) = cluster.runnel(&["scale", "demo", "gen=3"]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.contains("the application is suspended: its streamlets keep 0 replicas and get these when it resumes"),
        "{printed}"
    );
    let (code, printed, errors) = cluster.runnel(&["deploy", file]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.contains("= suspended: it stays so, with 0 replicas, until `runnel resume demo`"),
        "{printed}"
    );
    let app = cluster.application().unwrap();
    assert!(app.spec.suspended);
    cluster.eventually("the operator's status of the redeploy", |c| {
        let app = c.application()?;
        let status = app.status?;
        (status.observed_generation == app.metadata.generation).then_some(())
    });
    assert_eq!(replicas(&cluster, "demo-gen"), Some(Some(0)));

    // resume: the spec's replicas; the HPA-scaled one is left to its autoscaler again.
    let (code, printed, errors) = cluster.runnel(&["resume", "demo"]);
    assert_eq!(code, 0, "{errors}");
    assert!(
        printed.starts_with("application 'demo' in apps: resuming\n  ~ gen: 0 -> 3 replicas\n  ~ log: 0 -> its autoscaler's replicas (scaling external)\n"),
        "{printed}"
    );
    assert!(printed.contains("resumed: Pending"), "{printed}");
    assert_eq!(replicas(&cluster, "demo-gen"), Some(Some(3)));
    // The operator no longer applies the field; the API server then defaults it to 1 and
    // the HPA scales from there.
    assert_eq!(replicas(&cluster, "demo-log"), Some(Some(1)));
    let (_, printed, _) = cluster.runnel(&["resume", "demo"]);
    assert_eq!(
        printed,
        "application 'demo' in apps is already running; nothing was written\n"
    );
}
