//! Running an HTTP streamlet on an in-memory backplane, a backplane whose acknowledgements
//! can be held back, and a small blocking HTTP client.

use std::collections::HashMap;
use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use runnel_backend::{
    Backend, ConsumedRecord, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, Producer,
    ProducerConfig, Receipt, Record, TopicCreation, TopicInfo, TopicSpec,
};
use runnel_blueprint::parameter::ParameterValue;
use runnel_host::{HostSettings, OutletWiring, Wiring, run_instance};
use runnel_streamlet::{FailedAttempts, InstanceMetrics, Streamlet, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) const TOPIC: &str = "payments";

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP ingress running on a backplane, its outlet `out` wired to [`TOPIC`].
pub(crate) struct Served {
    pub(crate) url: String,
    pub(crate) backend: Arc<GatedBackend>,
    shutdown: CancellationToken,
    task: JoinHandle<runnel_streamlet::Result<()>>,
}

impl Served {
    /// Starts `streamlet` with `parameters` (`port` is set) and waits until it reports itself
    /// ready, which must mean it accepts connections.
    pub(crate) async fn start(
        streamlet: impl Streamlet,
        parameters: &[(&str, ParameterValue)],
        topic: TopicSpec,
    ) -> Served {
        let (served, readiness) = Served::launch(streamlet, parameters, topic, free_port()).await;
        tokio::time::timeout(Duration::from_secs(10), readiness)
            .await
            .expect("the ingress reports itself ready")
            .expect("the ingress reports itself ready before it stops");
        let address = served
            .url
            .trim_start_matches("http://")
            .trim_end_matches('/');
        tokio::net::TcpStream::connect(address)
            .await
            .expect("a ready ingress accepts connections");
        served
    }

    /// Starts `streamlet` on `port` without waiting: the receiver completes when the
    /// instance reports itself ready, and fails if it stops first.
    pub(crate) async fn launch(
        streamlet: impl Streamlet,
        parameters: &[(&str, ParameterValue)],
        topic: TopicSpec,
        port: u16,
    ) -> (Served, tokio::sync::oneshot::Receiver<()>) {
        let backend = Arc::new(GatedBackend::default());
        backend.create_topic(&topic).await.unwrap();
        backend
            .create_topic(&TopicSpec::new("dead-letters", 1))
            .await
            .unwrap();
        let mut values: HashMap<String, ParameterValue> = HashMap::from([
            ("port".to_owned(), ParameterValue::Int(i64::from(port))),
            (
                "bind-address".to_owned(),
                ParameterValue::String("127.0.0.1".to_owned()),
            ),
            ("max-body-size".to_owned(), ParameterValue::MemorySize(1024)),
            ("max-in-flight".to_owned(), ParameterValue::Int(64)),
            (
                "retry-after".to_owned(),
                ParameterValue::Duration(Duration::from_secs(2)),
            ),
        ]);
        for (key, value) in parameters {
            values.insert((*key).to_owned(), value.clone());
        }
        let (ready, readiness) = tokio::sync::oneshot::channel();
        let wiring = Wiring {
            app: "test".to_owned(),
            instance: "ingress".to_owned(),
            inlets: Vec::new(),
            outlets: vec![OutletWiring {
                port: "out".to_owned(),
                topic: topic.name.clone(),
                tag_schema: false,
            }],
            dead_letter_topic: "dead-letters".to_owned(),
            parameters: values,
            settings: HostSettings::default(),
            ready: Some(ready),
            watermarks: None,
            transactional_id: None,
            static_member: None,
            attempts: Arc::new(FailedAttempts::new(3)),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(run_instance(
            Box::new(streamlet),
            backend.clone(),
            wiring,
            Arc::new(SystemClock),
            Arc::new(InstanceMetrics::default()),
            shutdown.clone(),
        ));
        let served = Served {
            url: format!("http://127.0.0.1:{port}/"),
            backend,
            shutdown,
            task,
        };
        (served, readiness)
    }

    /// Waits until the instance has stopped by itself, and gives its outcome.
    pub(crate) async fn outcome(self) -> runnel_streamlet::Result<()> {
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the ingress stops by itself")
            .unwrap()
    }

    /// The values written so far, decoded from JSON.
    pub(crate) fn written<T: serde::de::DeserializeOwned>(&self) -> Vec<T> {
        self.records()
            .iter()
            .map(|record| serde_json::from_slice(record.record.value.as_deref().unwrap()).unwrap())
            .collect()
    }

    pub(crate) fn records(&self) -> Vec<ConsumedRecord> {
        self.backend.memory.records(TOPIC).unwrap()
    }

    /// Asks the ingress to stop and waits until it has.
    pub(crate) async fn stop(self) -> runnel_streamlet::Result<()> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the ingress stops")
            .unwrap()
    }
}

/// An HTTP answer: status, `Retry-After`, and the body as JSON.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<String>,
    pub(crate) body: serde_json::Value,
}

/// POSTs `body` (from a reader, so without a length unless `length` is given) and waits
/// for the answer, on a blocking thread.
pub(crate) async fn post(url: &str, body: impl Read + Send + 'static) -> Answer {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let mut response = agent
            .post(&url)
            .send(ureq::SendBody::from_owned_reader(body))
            .expect("the ingress answers");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|value| value.to_str().unwrap().to_owned());
        let text = response.body_mut().read_to_string().unwrap();
        let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        Answer {
            status,
            retry_after,
            body,
        }
    })
    .await
    .unwrap()
}

/// POSTs `text` with its length.
pub(crate) async fn post_text(url: &str, text: &str) -> Answer {
    let url = url.to_owned();
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let mut response = agent.post(&url).send(text).expect("the ingress answers");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|value| value.to_str().unwrap().to_owned());
        let text = response.body_mut().read_to_string().unwrap();
        let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        Answer {
            status,
            retry_after,
            body,
        }
    })
    .await
    .unwrap()
}

/// Waits until `condition` holds; panics after 10 s.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A [`MemoryBackend`] whose producers' acknowledgements wait while the gate is closed,
/// as a log that is slow to make records durable: records are appended (and readable)
/// at once, but their receipts complete only once the gate opens.
#[derive(Debug)]
pub(crate) struct GatedBackend {
    pub(crate) memory: MemoryBackend,
    gate: watch::Sender<bool>,
}

impl Default for GatedBackend {
    fn default() -> Self {
        GatedBackend {
            memory: MemoryBackend::new(),
            gate: watch::Sender::new(true),
        }
    }
}

impl GatedBackend {
    /// Holds back acknowledgements (`false`) or lets them through (`true`).
    pub(crate) fn acknowledge(&self, open: bool) {
        self.gate.send_replace(open);
    }
}

#[async_trait]
impl Backend for GatedBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> runnel_backend::Result<TopicCreation> {
        self.memory.create_topic(spec).await
    }

    async fn topic(&self, name: &str) -> runnel_backend::Result<Option<TopicInfo>> {
        self.memory.topic(name).await
    }

    async fn offsets(&self, topic: &str) -> runnel_backend::Result<Vec<PartitionOffsets>> {
        self.memory.offsets(topic).await
    }

    async fn committed(
        &self,
        group: &str,
        topic: &str,
    ) -> runnel_backend::Result<Vec<Option<u64>>> {
        self.memory.committed(group, topic).await
    }

    async fn producer(&self, config: &ProducerConfig) -> runnel_backend::Result<Arc<dyn Producer>> {
        Ok(Arc::new(GatedProducer {
            inner: self.memory.producer(config).await?,
            gate: self.gate.subscribe(),
        }))
    }

    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        self.memory.consumer(config).await
    }

    async fn partition_reader(
        &self,
        config: &runnel_backend::ReaderConfig,
    ) -> runnel_backend::Result<Box<dyn runnel_backend::PartitionReader>> {
        self.memory.partition_reader(config).await
    }
}

#[derive(Debug)]
struct GatedProducer {
    inner: Arc<dyn Producer>,
    gate: watch::Receiver<bool>,
}

#[async_trait]
impl Producer for GatedProducer {
    async fn send(
        &self,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> runnel_backend::Result<Receipt> {
        let receipt = self.inner.send(topic, partition, record).await?;
        let mut gate = self.gate.clone();
        Ok(Receipt::new(async move {
            let _ = gate.wait_for(|open| *open).await;
            receipt.await
        }))
    }

    async fn flush(&self) -> runnel_backend::Result<()> {
        self.inner.flush().await
    }
}
