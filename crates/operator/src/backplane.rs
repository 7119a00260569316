//! The operator's view of Kafka: making sure topics exist (never deleting any) and sampling
//! consumer lag, through any [`Backend`], behind the [`Backplanes`] seam.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use runnel_application::TopicSpec;
use runnel_backend::{Backend, Error as BackendError};

use crate::observed::{ObservedTopic, TopicFailure};

/// Connects to the Kafka cluster of an Application. The operator uses Kafka through this
/// seam only; tests hand it a `runnel_backend::MemoryBackend`.
pub trait Backplanes: fmt::Debug + Send + Sync {
    /// A backend for the cluster at `bootstrap_servers` with client `settings`.
    fn connect<'a>(
        &'a self,
        bootstrap_servers: &'a str,
        settings: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Arc<dyn Backend>, String>>;
}

/// One backend for every cluster, whatever the address: for tests.
#[derive(Debug, Clone)]
pub struct SingleBackplane(pub Arc<dyn Backend>);

impl Backplanes for SingleBackplane {
    fn connect<'a>(
        &'a self,
        _bootstrap_servers: &'a str,
        _settings: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Arc<dyn Backend>, String>> {
        let backend = self.0.clone();
        Box::pin(async move { Ok(backend) })
    }
}

/// Kafka clusters through `runnel-kafka`, one connection per cluster and settings, kept.
#[cfg(feature = "kafka")]
#[derive(Debug, Default)]
pub struct KafkaBackplanes {
    connected: Mutex<BTreeMap<String, Arc<dyn Backend>>>,
}

#[cfg(feature = "kafka")]
impl Backplanes for KafkaBackplanes {
    fn connect<'a>(
        &'a self,
        bootstrap_servers: &'a str,
        settings: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Arc<dyn Backend>, String>> {
        Box::pin(async move {
            let key = format!("{bootstrap_servers} {settings:?}");
            if let Some(backend) = self.connected.lock().expect("not poisoned").get(&key) {
                return Ok(backend.clone());
            }
            let mut config = runnel_kafka::KafkaConfig::new(bootstrap_servers);
            config.settings.extend(settings);
            let backend: Arc<dyn Backend> = Arc::new(
                runnel_kafka::KafkaBackend::connect(config)
                    .await
                    .map_err(|error| chain(&error))?,
            );
            self.connected
                .lock()
                .expect("not poisoned")
                .insert(key, backend.clone());
            Ok(backend)
        })
    }
}

/// Creates each topic that does not exist and describes every one; an existing topic
/// with another partition count is described as it is (the reconcile reports it).
pub(crate) async fn ensure_topics(
    backend: &dyn Backend,
    topics: &[TopicSpec],
) -> Result<Vec<ObservedTopic>, TopicFailure> {
    let mut observed = Vec::with_capacity(topics.len());
    for topic in topics {
        let mut spec = runnel_backend::TopicSpec::new(&topic.name, topic.partitions.max(1) as u32);
        spec.replication = topic.replication_factor.and_then(|r| u16::try_from(r).ok());
        spec.config = topic.config.clone();
        let failure = |error: &dyn std::error::Error| TopicFailure {
            topic: Some(topic.name.clone()),
            message: chain(error),
        };
        let partitions = match backend.create_topic(&spec).await {
            Ok(_) => topic.partitions,
            Err(BackendError::PartitionCountMismatch { existing, .. }) => existing as i32,
            Err(error) => return Err(failure(&error)),
        };
        observed.push(ObservedTopic {
            name: topic.name.clone(),
            partitions,
        });
    }
    Ok(observed)
}

/// The Avro schemas `backend` keeps for each of `topics` (oldest first); `None` where it
/// keeps none.
pub(crate) async fn kept_schemas(
    backend: &dyn Backend,
    topics: &[TopicSpec],
) -> Option<Result<runnel_blueprint::KeptSchemas, String>> {
    if !backend.keeps_schemas() {
        return None;
    }
    let mut kept = runnel_blueprint::KeptSchemas::new();
    for topic in topics {
        let schemas = match backend.topic_schemas(&topic.name).await {
            Ok(schemas) => schemas,
            Err(BackendError::TopicNotFound { .. }) => Vec::new(),
            Err(error) => {
                return Some(Err(format!(
                    "reading the schemas of topic '{}' failed: {}",
                    topic.name,
                    chain(&error)
                )));
            }
        };
        let schemas = schemas
            .into_iter()
            .filter_map(|schema| {
                let definition = serde_json::from_str(&schema.definition).ok()?;
                Some(runnel_blueprint::kept_schema(
                    &schema.fingerprint,
                    definition,
                ))
            })
            .collect();
        kept.insert(topic.name.clone(), schemas);
    }
    Some(Ok(kept))
}

/// The lag of one consumer group on one topic and the topic's end offsets.
pub(crate) async fn group_lag(
    backend: &dyn Backend,
    group: &str,
    topic: &str,
) -> Result<(i64, i64, i32), String> {
    let offsets = backend.offsets(topic).await.map_err(|e| chain(&e))?;
    let committed = backend
        .committed(group, topic)
        .await
        .map_err(|e| chain(&e))?;
    let mut lag = 0i64;
    let mut end = 0i64;
    for (index, partition) in offsets.iter().enumerate() {
        let at = committed
            .get(index)
            .copied()
            .flatten()
            .unwrap_or(partition.start);
        lag += partition.end.saturating_sub(at) as i64;
        end += partition.end as i64;
    }
    Ok((lag, end, offsets.len() as i32))
}

/// An error and its causes, `: `-separated.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
