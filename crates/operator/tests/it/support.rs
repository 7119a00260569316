use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::PostParams;
use kube::{Api, Client};
use runnel_application::ApplicationDocument;
use runnel_backend::MemoryBackend;
use runnel_blueprint::descriptor::AppDescriptor;
use runnel_operator::{Application, OperatorConfig, SingleBackplane};
use runnel_test_cluster::{ControlPlane, FakeApiServer};
use tokio_util::sync::CancellationToken;

pub(crate) const NAMESPACE: &str = "apps";

pub(crate) const DESCRIPTOR: &str = r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
  {"type": "generator",
   "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "rate", "type": "int", "default": "5"}]},
  {"type": "logger",
   "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "prefix", "type": "string", "default": "n"}]}
]}"#;

/// A two-streamlet app called `name`.
pub(crate) fn application(name: &str) -> Application {
    let text = format!(
        "name = \"{name}\"\n[streamlets]\ngen = \"generator\"\nlog = \"logger\"\n[topics.numbers-{name}]\nproducers = [\"gen.out\"]\nconsumers = [\"log.in\"]\npartitions = 3\n"
    );
    let descriptor = AppDescriptor::from_json(DESCRIPTOR).unwrap();
    let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), &text, &descriptor)
        .blueprint
        .unwrap();
    let mut document = ApplicationDocument::new(
        &blueprint,
        &text,
        &descriptor,
        "registry.example/demo:1.0",
        "1.0",
    );
    document.spec.kafka.bootstrap_servers = Some("kafka:9092".to_owned());
    let mut app = Application::from_document(&document);
    app.metadata.namespace = Some(NAMESPACE.to_owned());
    app
}

/// A real control plane (etcd, kube-apiserver, kube-controller-manager from
/// `scripts/kube-dev`) with the namespace and the Application CRD, and an administrator's
/// client whose default namespace is [`NAMESPACE`]. Stopped when dropped.
pub(crate) struct RealCluster {
    pub(crate) client: Client,
    pub(crate) plane: Arc<ControlPlane>,
}

/// Starts a [`RealCluster`] (5 to 10 s).
pub(crate) async fn real_cluster() -> RealCluster {
    let plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .expect("the control plane starts");
    let file = kube::config::Kubeconfig::read_from(plane.kubeconfig()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .unwrap();
    config.default_namespace = NAMESPACE.to_owned();
    let client = Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}})).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &runnel_operator::crd())
        .await
        .unwrap();
    let name = runnel_operator::crd().metadata.name.unwrap();
    eventually(Duration::from_secs(30), "the CRD established", || async {
        let crd = crds.get(&name).await.ok()?;
        let conditions = crd.status?.conditions?;
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
    RealCluster {
        client,
        plane: Arc::new(plane),
    }
}

/// The fake API server with the Application CRD installed.
pub(crate) async fn cluster() -> FakeApiServer {
    let server = FakeApiServer::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client(NAMESPACE));
    crds.create(&PostParams::default(), &runnel_operator::crd())
        .await
        .unwrap();
    server
}

/// An operator running against `server` on the in-memory backplane, stopped on drop.
pub(crate) struct Operator {
    pub(crate) backend: Arc<MemoryBackend>,
    stop: CancellationToken,
    pub(crate) task: tokio::task::JoinHandle<Result<(), runnel_operator::Error>>,
}

impl Operator {
    /// An operator talking to the API server through `client`.
    pub(crate) fn start(client: Client, config: OperatorConfig) -> Operator {
        let backend = Arc::new(MemoryBackend::new());
        Operator::start_with(client, config, backend)
    }

    pub(crate) fn start_with(
        client: Client,
        config: OperatorConfig,
        backend: Arc<MemoryBackend>,
    ) -> Operator {
        let stop = CancellationToken::new();
        let task = tokio::spawn(runnel_operator::run(
            client,
            config,
            Arc::new(SingleBackplane(backend.clone())),
            stop.clone(),
        ));
        Operator {
            backend,
            stop,
            task,
        }
    }

    /// Stops the operator and waits until it has.
    pub(crate) async fn stop(mut self) -> Result<(), runnel_operator::Error> {
        self.stop.cancel();
        (&mut self.task)
            .await
            .expect("the operator task does not panic")
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub(crate) fn config(identity: &str) -> OperatorConfig {
    OperatorConfig {
        namespace: Some(NAMESPACE.to_owned()),
        default_bootstrap_servers: None,
        kafka_settings: Default::default(),
        leader: None,
        identity: identity.to_owned(),
        version: "0.1.0-test".to_owned(),
    }
}

pub(crate) fn client(server: &FakeApiServer) -> Client {
    server.client(NAMESPACE)
}

/// Polls `check` until it returns `Some`, failing the test after `limit`.
pub(crate) async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
