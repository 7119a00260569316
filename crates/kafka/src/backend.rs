//! [`KafkaBackend`]: the [`Backend`] on a Kafka cluster.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, Error, PartitionOffsets, PartitionReader, Producer,
    ProducerConfig, ReaderConfig, Result, SchemaNaming, TopicCreation, TopicInfo, TopicPartition,
    TopicSchema, TopicSpec, TransactionConfig, TransactionalProducer,
};

use crate::assigned::AssignedReader;
use crate::consumer::{GroupContext, KafkaConsumer, Shared};
use crate::context::LogContext;
use crate::error::Redactor;
use crate::metadata::{Metadata, blocking};
use crate::producer::KafkaProducer;
use crate::registry::SchemaRegistry;
use crate::topic_limits::TopicLimits;
use crate::transaction::KafkaTransactionalProducer;
use crate::{KafkaConfig, KafkaSettings};

/// How long to wait before asking a group's coordinator again while it is unsettled.
const COORDINATOR_RETRY: Duration = Duration::from_millis(100);

/// Whether `error` says a group's coordinator is loading, moving or not yet there: a
/// passing state, worth asking again.
fn coordinator_unsettled(error: &rdkafka::error::KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::NotCoordinator
                | RDKafkaErrorCode::CoordinatorLoadInProgress
                | RDKafkaErrorCode::CoordinatorNotAvailable
        )
    )
}

/// The backplane on a Kafka cluster, through librdkafka.
///
/// Cheap to clone: clones share the admin and metadata clients. Each
/// [`producer`](Backend::producer) and [`consumer`](Backend::consumer) is a librdkafka client
/// of its own.
///
/// ```no_run
/// use runnel_backend::{Backend, TopicSpec};
/// use runnel_kafka::{KafkaBackend, KafkaConfig};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let backend = KafkaBackend::connect(KafkaConfig::new("localhost:9092")).await?;
/// backend.create_topic(&TopicSpec::new("readings", 3)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct KafkaBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: KafkaConfig,
    redactor: Redactor,
    admin: Arc<AdminClient<LogContext>>,
    metadata: Arc<Metadata>,
    limits: Arc<TopicLimits>,
    /// One client per consumer group whose committed offsets were asked for.
    group_readers: Mutex<HashMap<String, Arc<BaseConsumer<LogContext>>>>,
    /// The schema registry that keeps the topics' schemas, when one is configured.
    registry: Option<Arc<SchemaRegistry>>,
}

impl std::fmt::Debug for KafkaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaBackend")
            .field("bootstrap_servers", &self.inner.config.bootstrap_servers)
            .field("settings", &self.inner.config.settings)
            .finish_non_exhaustive()
    }
}

/// How long one round of waiting for the cluster at start lasts before saying so.
const CONNECT_ROUND: Duration = Duration::from_secs(5);

impl KafkaBackend {
    /// Creates the clients and checks that the cluster answers, logging every few seconds
    /// while it does not.
    ///
    /// # Errors
    ///
    /// When librdkafka refuses a setting, or no broker answers within the request timeout.
    pub async fn connect(config: KafkaConfig) -> Result<Self, crate::Error> {
        let registry = SchemaRegistry::from_settings(&config.settings)
            .map_err(|source| crate::Error::RegistrySettings { source })?;
        let redactor = Redactor::new(Arc::new(config.settings.clone()));
        let context = LogContext {
            redactor: redactor.clone(),
        };
        let client_error = |client, error: &rdkafka::error::KafkaError| crate::Error::Client {
            client,
            bootstrap: config.bootstrap_servers.clone(),
            source: redactor.error(error),
        };
        let admin: AdminClient<LogContext> = config
            .admin()
            .create_with_context(context.clone())
            .map_err(|e| client_error("admin client", &e))?;
        let metadata_client: BaseConsumer<LogContext> = config
            .admin()
            .create_with_context(context)
            .map_err(|e| client_error("metadata client", &e))?;
        let metadata = Arc::new(Metadata::new(
            metadata_client,
            redactor.clone(),
            config.request_timeout,
        ));
        // Ask in short rounds, saying after each unanswered one that it is still waiting,
        // instead of one silent request timeout.
        let started = Instant::now();
        loop {
            let round_started = Instant::now();
            let probe = metadata.clone();
            let left = config.request_timeout.saturating_sub(started.elapsed());
            let round = CONNECT_ROUND.min(left);
            let reached = tokio::task::spawn_blocking(move || probe.reachable(round))
                .await
                .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()));
            match reached {
                Ok(()) => break,
                Err(error)
                    if started.elapsed() + Duration::from_millis(100) < config.request_timeout =>
                {
                    tracing::warn!(
                        "waiting for the kafka cluster at {}: no answer for {} s ({}); giving up after {} s",
                        config.bootstrap_servers,
                        started.elapsed().as_secs(),
                        redactor.error(&error),
                        config.request_timeout.as_secs()
                    );
                    // A refused connection fails at once: wait out the round.
                    let next = (round_started + round).min(started + config.request_timeout);
                    tokio::time::sleep_until(next.into()).await;
                }
                Err(error) => {
                    return Err(crate::Error::Connect {
                        bootstrap: config.bootstrap_servers.clone(),
                        source: redactor.error(&error),
                    });
                }
            }
        }
        let admin = Arc::new(admin);
        let limits = Arc::new(TopicLimits::new(admin.clone(), config.request_timeout));
        Ok(KafkaBackend {
            inner: Arc::new(Inner {
                config,
                redactor,
                admin,
                metadata,
                limits,
                group_readers: Mutex::default(),
                registry,
            }),
        })
    }

    pub(crate) fn inner_config(&self) -> &KafkaConfig {
        &self.inner.config
    }

    pub(crate) fn inner_redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    pub(crate) fn admin(&self) -> &AdminClient<LogContext> {
        &self.inner.admin
    }

    /// The configuration this backend was created with.
    pub fn config(&self) -> &KafkaConfig {
        &self.inner.config
    }

    /// The settings every client gets (secrets redacted when shown).
    pub fn settings(&self) -> &KafkaSettings {
        &self.inner.config.settings
    }

    /// Creates a consumer and starts its polling thread.
    pub(crate) fn start_consumer(
        &self,
        config: &ConsumerConfig,
        transactional: bool,
    ) -> Result<KafkaConsumer> {
        let inner = &self.inner;
        // Settings from the blueprint may hold secrets of their own.
        let redactor = inner.redactor.with(&config.settings);
        let shared = Arc::new(Shared::new(
            config,
            transactional,
            redactor.clone(),
            inner.metadata.clone(),
            inner.config.request_timeout,
        ));
        let client_config = inner.config.consumer(
            &config.group,
            config.start_from,
            &config.settings,
            config.static_member.as_deref(),
        );
        let failed = |error: &rdkafka::error::KafkaError| Error::Consume {
            topic: config.topics.join(", "),
            source: redactor.boxed(error),
        };
        let client: BaseConsumer<GroupContext> = client_config
            .create_with_context(GroupContext { shared })
            .map_err(|e| failed(&e))?;
        let topics: Vec<&str> = config.topics.iter().map(String::as_str).collect();
        KafkaConsumer::start(client, &topics).map_err(|e| failed(&e))
    }

    fn producer_client(
        &self,
        settings: &ProducerConfig,
        id: Option<&str>,
    ) -> Result<KafkaProducer> {
        let inner = &self.inner;
        // Settings from the blueprint may hold secrets of their own.
        let redactor = inner.redactor.with(&settings.settings);
        KafkaProducer::new(
            &inner.config.producer(&settings.settings, id),
            inner.metadata.clone(),
            inner.limits.clone(),
            redactor.clone(),
        )
        .map_err(|error| Error::Admin {
            operation: "creating a kafka producer".to_owned(),
            source: redactor.boxed(&error),
        })
    }

    fn group_reader(&self, group: &str) -> Result<Arc<BaseConsumer<LogContext>>> {
        let mut readers = self
            .inner
            .group_readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(reader) = readers.get(group) {
            return Ok(reader.clone());
        }
        let reader: BaseConsumer<LogContext> = self
            .inner
            .config
            .group_reader(group)
            .create_with_context(LogContext {
                redactor: self.inner.redactor.clone(),
            })
            .map_err(|error| Error::Admin {
                operation: format!("reading the offsets of group '{group}'"),
                source: self.inner.redactor.boxed(&error),
            })?;
        let reader = Arc::new(reader);
        readers.insert(group.to_owned(), reader.clone());
        Ok(reader)
    }

    /// Waits until the brokers' metadata shows a just-created topic.
    async fn await_topic(&self, name: &str) -> Result<()> {
        let deadline = Instant::now() + self.inner.config.request_timeout;
        loop {
            let metadata = self.inner.metadata.clone();
            let topic = name.to_owned();
            if blocking(move || metadata.fetch_partitions(&topic))
                .await?
                .is_some()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Admin {
                    operation: format!("creating topic '{name}'"),
                    source: crate::error::message("the topic did not appear in the metadata"),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Metadata {
    /// Whether any broker answers a metadata request.
    fn reachable(&self, timeout: Duration) -> Result<(), rdkafka::error::KafkaError> {
        self.client_metadata(timeout).map(|_| ())
    }
}

#[async_trait]
impl Backend for KafkaBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> Result<TopicCreation> {
        if spec.partitions == 0 {
            return Err(Error::InvalidTopic {
                topic: spec.name.clone(),
                reason: "a topic needs at least one partition".into(),
            });
        }
        let replication = spec.replication.map_or(-1, i32::from);
        let mut new_topic = NewTopic::new(
            &spec.name,
            spec.partitions as i32,
            TopicReplication::Fixed(replication),
        );
        for (key, value) in &spec.config {
            new_topic = new_topic.set(key, value);
        }
        // Existing topics are left alone (and a mock cluster, which has no CreateTopics, can
        // use topics created beforehand).
        if let Some(existing) = self.topic(&spec.name).await? {
            return if existing.partitions == spec.partitions {
                Ok(TopicCreation::AlreadyExists)
            } else {
                Err(Error::PartitionCountMismatch {
                    topic: spec.name.clone(),
                    requested: spec.partitions,
                    existing: existing.partitions,
                })
            };
        }
        let options =
            AdminOptions::new().operation_timeout(Some(self.inner.config.request_timeout));
        let operation = || format!("creating topic '{}'", spec.name);
        let results = self
            .inner
            .admin
            .create_topics([&new_topic], &options)
            .await
            .map_err(|error| Error::Admin {
                operation: operation(),
                source: self.inner.redactor.boxed(&error),
            })?;
        match results.into_iter().next() {
            Some(Ok(_)) => {
                self.inner.metadata.forget(&spec.name);
                self.inner.limits.forget(&spec.name);
                self.await_topic(&spec.name).await?;
                Ok(TopicCreation::Created)
            }
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => {
                // Another client created it between our look and our request; the broker
                // answering metadata may not know of it yet.
                self.await_topic(&spec.name).await?;
                let (_, existing) = self.inner.metadata.partitions(&spec.name, true).await?;
                if existing == spec.partitions {
                    Ok(TopicCreation::AlreadyExists)
                } else {
                    Err(Error::PartitionCountMismatch {
                        topic: spec.name.clone(),
                        requested: spec.partitions,
                        existing,
                    })
                }
            }
            Some(Err((_, code))) => Err(Error::Admin {
                operation: operation(),
                source: crate::error::message(format!("the broker answered: {code}")),
            }),
            None => Err(Error::Admin {
                operation: operation(),
                source: crate::error::message("the broker sent no result"),
            }),
        }
    }

    async fn topic(&self, name: &str) -> Result<Option<TopicInfo>> {
        let metadata = self.inner.metadata.clone();
        let topic = name.to_owned();
        let partitions = blocking(move || metadata.fetch_partitions(&topic)).await?;
        Ok(partitions.map(|partitions| TopicInfo {
            name: name.to_owned(),
            partitions,
        }))
    }

    async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
        let (_, partitions) = self.inner.metadata.partitions(topic, false).await?;
        let metadata = self.inner.metadata.clone();
        let topic = topic.to_owned();
        blocking(move || metadata.watermarks(&topic, partitions)).await
    }

    async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
        let (_, partitions) = self.inner.metadata.partitions(topic, false).await?;
        let reader = self.group_reader(group)?;
        let mut list = TopicPartitionList::new();
        for partition in 0..partitions {
            let _ = list.add_partition_offset(topic, partition as i32, Offset::Invalid);
        }
        let (timeout, redactor) = (
            self.inner.config.request_timeout,
            self.inner.redactor.clone(),
        );
        let (group, topic) = (group.to_owned(), topic.to_owned());
        blocking(move || {
            // A group's coordinator may be loading or moving (as on a fresh broker, while
            // `__consumer_offsets` is created): asked again until the timeout.
            let deadline = Instant::now() + timeout;
            let committed = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match reader.committed_offsets(list.clone(), left) {
                    Err(error)
                        if coordinator_unsettled(&error)
                            && Instant::now() + COORDINATOR_RETRY < deadline =>
                    {
                        std::thread::sleep(COORDINATOR_RETRY);
                    }
                    result => {
                        break result.map_err(|error| Error::Admin {
                            operation: format!("reading the offsets of group '{group}'"),
                            source: redactor.boxed(&error),
                        })?;
                    }
                }
            };
            Ok((0..partitions)
                .map(|partition| {
                    committed
                        .find_partition(&topic, partition as i32)
                        .and_then(|element| match element.offset() {
                            Offset::Offset(offset) if offset >= 0 => Some(offset as u64),
                            _ => None,
                        })
                })
                .collect())
        })
        .await
    }

    async fn producer(&self, config: &ProducerConfig) -> Result<Arc<dyn Producer>> {
        Ok(Arc::new(self.producer_client(config, None)?))
    }

    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
        for topic in &config.topics {
            self.inner.metadata.partitions(topic, false).await?;
        }
        Ok(Arc::new(self.start_consumer(config, false)?))
    }

    /// A client of its own that `assign`s the partitions at their starts: no group join,
    /// so the first records come with the first fetch. Each start is moved into its
    /// partition's bounds first (one offsets request per partition).
    async fn partition_reader(&self, config: &ReaderConfig) -> Result<Box<dyn PartitionReader>> {
        let inner = &self.inner;
        let mut starts = Vec::with_capacity(config.starts.len());
        for (tp, from) in &config.starts {
            let (name, partitions) = inner.metadata.partitions(&tp.topic, false).await?;
            if tp.partition >= partitions {
                return Err(Error::PartitionNotFound {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    partitions,
                });
            }
            let (metadata, topic, partition) = (inner.metadata.clone(), name.clone(), tp.partition);
            let bounds = blocking(move || metadata.partition_watermarks(&topic, partition)).await?;
            let start = (*from).clamp(bounds.start, bounds.end.max(bounds.start));
            starts.push((TopicPartition::new(name, tp.partition), start));
        }
        let client: BaseConsumer<LogContext> = inner
            .config
            .reader(config.isolation)
            .create_with_context(LogContext {
                redactor: inner.redactor.clone(),
            })
            .map_err(|error| Error::Consume {
                topic: config.topics().join(", "),
                source: inner.redactor.boxed(&error),
            })?;
        let reader = AssignedReader::start(
            client,
            starts,
            inner.metadata.clone(),
            inner.redactor.clone(),
        )?;
        Ok(Box::new(reader))
    }

    fn supports_transactions(&self) -> bool {
        true
    }

    fn supports_compaction(&self) -> bool {
        true
    }

    fn deletes_records(&self) -> bool {
        true
    }

    async fn topic_compacted(&self, topic: &str) -> Result<bool> {
        self.compacted(topic).await
    }

    /// Deletes through `DeleteRecords`; the broker drops whole segments below the
    /// partition's new first offset in the background.
    async fn delete_records_before(&self, topic: &str, partition: u32, offset: u64) -> Result<u64> {
        self.delete_records(topic, partition, offset).await
    }

    fn keeps_schemas(&self) -> bool {
        self.inner.registry.is_some()
    }

    fn schema_naming(&self) -> SchemaNaming {
        SchemaNaming::RegistryId
    }

    async fn topic_schemas(&self, topic: &str) -> Result<Vec<TopicSchema>> {
        match &self.inner.registry {
            Some(registry) => registry.topic_schemas(topic).await,
            None => Ok(Vec::new()),
        }
    }

    async fn register_schema(&self, topic: &str, schema: &TopicSchema) -> Result<Vec<TopicSchema>> {
        match &self.inner.registry {
            Some(registry) => registry.register(topic, schema).await,
            None => Err(runnel_backend::Error::Unsupported {
                feature: "keeping the schemas written to a topic without `schema.registry.url`",
            }),
        }
    }

    async fn schema_by_id(&self, id: u32) -> Result<TopicSchema> {
        match &self.inner.registry {
            Some(registry) => registry.schema_by_id(id).await,
            None => Err(runnel_backend::Error::Unsupported {
                feature: "a schema registry without `schema.registry.url`",
            }),
        }
    }

    async fn transactional_producer(
        &self,
        config: &TransactionConfig,
    ) -> Result<Arc<dyn TransactionalProducer>> {
        let producer = self.producer_client(&config.producer, Some(&config.id))?;
        let started = KafkaTransactionalProducer::start(
            self.clone(),
            producer,
            &config.id,
            self.inner.config.request_timeout,
        )
        .await?;
        Ok(Arc::new(started))
    }
}
