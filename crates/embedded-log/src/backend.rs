//! [`EmbeddedBackend`]: the log directory opened by this process, as a
//! [`runnel_backend::Backend`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use async_trait::async_trait;
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, PartitionOffsets, PartitionReader, Producer, ProducerConfig,
    ReaderConfig, TopicCreation, TopicInfo, TopicSchema, TopicSpec, TransactionConfig,
    TransactionalProducer,
};

use crate::assigned::AssignedReader;
use crate::config::LogConfig;
use crate::consumer::EmbeddedConsumer;
use crate::coordinator::Coordinator;
use crate::error::Result;
use crate::files;
use crate::lock::DirectoryLock;
use crate::offset_store::OffsetStore;
use crate::partition::{PartitionStatus, lock};
use crate::producer::EmbeddedProducer;
use crate::shared::{Shared, open_topic};
use crate::topic_schemas;
use crate::topic_settings::{METADATA_FILE, TopicMetadata};
use crate::transactional_producer::{self, EmbeddedTransactionalProducer};
use crate::{retention, transaction_timeouts, writer};

/// A durable, partitioned log in a local directory: Runnel's default backplane.
///
/// Cloning is cheap and shares the open log. The log stays open while any clone, producer
/// or consumer exists; when the last one is dropped, each partition's writer appends and
/// syncs what it already accepted, and the directory lock is released. Dropping blocks for
/// that long.
///
/// ```
/// use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
/// use runnel_embedded_log::{EmbeddedBackend, LogConfig};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let directory = tempfile::tempdir()?;
/// let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
/// backend.create_topic(&TopicSpec::new("readings", 2)).await?;
/// let producer = backend.producer(&ProducerConfig::default()).await?;
/// let offset = producer.send("readings", 0, Record::new("21.5")).await?.await?;
/// assert_eq!(offset, 0);
/// assert_eq!(backend.partition_status("readings", 0)?.end, 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct EmbeddedBackend {
    shared: Arc<Shared>,
}

impl EmbeddedBackend {
    /// Opens the log in `directory`, creating it if needed, and locks it for this process.
    ///
    /// Every topic is recovered: a torn tail of each partition's last segment is truncated
    /// (with a warning), indexes are rebuilt where needed, and corruption anywhere else is
    /// an error.
    ///
    /// # Errors
    ///
    /// [`Error::DirectoryLocked`](crate::Error::DirectoryLocked) when another process (or
    /// another open backend in this one) has the directory;
    /// [`Error::CorruptBatch`](crate::Error::CorruptBatch) naming the file and byte position
    /// of corruption recovery must not repair; I/O errors naming the file.
    ///
    /// ```
    /// use runnel_embedded_log::{EmbeddedBackend, Error, LogConfig};
    /// # let directory = tempfile::tempdir()?;
    /// let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
    /// assert_eq!(backend.directory(), directory.path());
    /// let second = EmbeddedBackend::open(directory.path(), LogConfig::default());
    /// assert!(matches!(second, Err(Error::DirectoryLocked { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(directory: impl AsRef<Path>, config: LogConfig) -> Result<EmbeddedBackend> {
        let directory = directory.as_ref().to_owned();
        files::create_directory(&directory)?;
        let directory_lock = DirectoryLock::acquire(&directory)?;
        let topics_directory = directory.join("topics");
        files::create_directory(&topics_directory)?;
        let mut topics = HashMap::new();
        for path in files::list_directory(&topics_directory)? {
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            if !path.join(METADATA_FILE).exists() {
                tracing::warn!(directory = %path.display(), "ignoring a topic directory without metadata (its creation was interrupted)");
                continue;
            }
            let metadata = TopicMetadata::load(&path)?;
            let topic = open_topic(&path, name, &metadata, &config)?;
            topics.insert(name.to_owned(), Arc::new(topic));
        }
        let offsets = OffsetStore::open(directory.join("groups"))?;
        let coordinator = Coordinator::open(&directory)?;
        let shared = Arc::new(Shared::new(
            directory,
            config,
            topics,
            offsets,
            coordinator,
            directory_lock,
        ));
        // Writers start only once everything opened, so a failed open leaves none running.
        for partition in shared.all_partitions() {
            writer::start(&partition)?;
        }
        recover_transactions(&shared)?;
        transaction_timeouts::start(&shared)?;
        Ok(EmbeddedBackend { shared })
    }

    /// The data directory.
    pub fn directory(&self) -> &Path {
        &self.shared.directory
    }

    /// The settings the log was opened with.
    pub fn config(&self) -> &LogConfig {
        &self.shared.config
    }

    /// The state of one partition: offsets, segments, bytes and the pending buffer.
    ///
    /// # Errors
    ///
    /// [`TopicNotFound`](runnel_backend::Error::TopicNotFound) or
    /// [`PartitionNotFound`](runnel_backend::Error::PartitionNotFound).
    pub fn partition_status(
        &self,
        topic: &str,
        partition: u32,
    ) -> runnel_backend::Result<PartitionStatus> {
        Ok(self.shared.partition(topic, partition)?.status())
    }

    /// Applies retention to every partition now instead of at the next periodic check;
    /// returns how many segments were deleted.
    ///
    /// # Errors
    ///
    /// When a segment file could not be inspected or removed.
    ///
    /// ```
    /// use runnel_backend::{Backend, TopicSpec};
    /// use runnel_embedded_log::{EmbeddedBackend, LogConfig};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let directory = tempfile::tempdir()?;
    /// let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
    /// backend.create_topic(&TopicSpec::new("t", 1).with_config("retention.bytes", "0")).await?;
    /// // Nothing is sealed yet, and the active segment is never deleted.
    /// assert_eq!(backend.enforce_retention()?, 0);
    /// # Ok(()) }
    /// ```
    pub fn enforce_retention(&self) -> Result<usize> {
        let now = std::time::SystemTime::now();
        let mut deleted = 0;
        for partition in self.shared.all_partitions() {
            deleted += retention::enforce(&partition, now)?;
        }
        Ok(deleted)
    }
}

/// Seeds the partitions with the aborted ranges of past transactions, then finishes every
/// transaction the previous process left unfinished: those that reached their commit point
/// commit, the others abort. No producer of that process is alive (the directory lock says
/// so), so none of them can still complete.
fn recover_transactions(shared: &Arc<Shared>) -> Result<()> {
    for ((topic, number), range) in shared.coordinator.aborted_ranges() {
        if let Ok(partition) = shared.partition(&topic, number) {
            lock(&partition.transactions).restore_aborted(range);
        }
    }
    for (id, decided) in shared.coordinator.recover()? {
        tracing::info!(
            id = %id,
            outcome = ?decided.fields.control,
            partitions = decided.partitions.len(),
            "finishing a transaction the previous process left open"
        );
        futures::executor::block_on(transactional_producer::finish(
            shared,
            &id,
            decided,
            transactional_producer::Context::Blocking,
        ))?;
    }
    Ok(())
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> runnel_backend::Result<TopicCreation> {
        let metadata = TopicMetadata::from_spec(spec)?;
        if let Ok(existing) = self.shared.topic(&spec.name)
            && existing.partitions.len() as u32 == spec.partitions
        {
            return Ok(TopicCreation::AlreadyExists);
        }
        let shared = self.shared.clone();
        let spec = spec.clone();
        tokio::task::spawn_blocking(move || shared.create_topic(&spec, metadata))
            .await
            .map_err(|_| runnel_backend::Error::Closed)?
    }

    async fn topic(&self, name: &str) -> runnel_backend::Result<Option<TopicInfo>> {
        Ok(self.shared.topic(name).ok().map(|topic| TopicInfo {
            name: name.to_owned(),
            partitions: topic.partitions.len() as u32,
        }))
    }

    async fn offsets(&self, topic: &str) -> runnel_backend::Result<Vec<PartitionOffsets>> {
        let topic = self.shared.topic(topic)?;
        Ok(topic
            .partitions
            .iter()
            .map(|partition| PartitionOffsets {
                start: partition.start(),
                end: partition.end(),
            })
            .collect())
    }

    /// Deletes whole sealed segments below `offset`: records of the segment holding `offset`
    /// and of the active segment stay.
    async fn delete_records_before(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
    ) -> runnel_backend::Result<u64> {
        let log = self.shared.partition(topic, partition)?;
        retention::delete_before(&log, offset).map_err(|error| {
            error.into_admin(format!(
                "deleting records below offset {offset} of partition {partition} of topic '{topic}'"
            ))
        })
    }

    async fn committed(
        &self,
        group: &str,
        topic: &str,
    ) -> runnel_backend::Result<Vec<Option<u64>>> {
        let partitions = self.shared.topic(topic)?.partitions.len() as u32;
        Ok((0..partitions)
            .map(|partition| self.shared.offsets.committed(group, topic, partition))
            .collect())
    }

    async fn producer(
        &self,
        _config: &ProducerConfig,
    ) -> runnel_backend::Result<Arc<dyn Producer>> {
        Ok(Arc::new(EmbeddedProducer::new(self.shared.clone())))
    }

    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        let isolation = config.isolation_level()?;
        for topic in &config.topics {
            self.shared.topic(topic)?;
        }
        Ok(Arc::new(EmbeddedConsumer::join(
            self.shared.clone(),
            config,
            isolation,
        )))
    }

    /// Reads without a group, each partition with a reader of its own, read committed up to
    /// the last stable offset unless `config` says otherwise.
    async fn partition_reader(
        &self,
        config: &ReaderConfig,
    ) -> runnel_backend::Result<Box<dyn PartitionReader>> {
        Ok(Box::new(AssignedReader::new(&self.shared, config)?))
    }

    fn supports_transactions(&self) -> bool {
        true
    }

    fn deletes_records(&self) -> bool {
        true
    }

    fn keeps_schemas(&self) -> bool {
        true
    }

    async fn topic_schemas(&self, topic: &str) -> runnel_backend::Result<Vec<TopicSchema>> {
        self.shared.topic(topic)?;
        let directory = self.shared.topic_directory(topic);
        tokio::task::spawn_blocking(move || topic_schemas::read(&directory))
            .await
            .map_err(|_| runnel_backend::Error::Closed)?
            .map_err(|error| error.into_admin(format!("reading the schemas of topic '{topic}'")))
    }

    async fn register_schema(
        &self,
        topic: &str,
        schema: &TopicSchema,
    ) -> runnel_backend::Result<Vec<TopicSchema>> {
        self.shared.topic(topic)?;
        let shared = self.shared.clone();
        let directory = self.shared.topic_directory(topic);
        let schema = schema.clone();
        tokio::task::spawn_blocking(move || {
            let _registering = shared
                .registering
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            topic_schemas::register(&directory, &schema)
        })
        .await
        .map_err(|_| runnel_backend::Error::Closed)?
        .map_err(|error| error.into_admin(format!("registering a schema of topic '{topic}'")))
    }

    async fn transactional_producer(
        &self,
        config: &TransactionConfig,
    ) -> runnel_backend::Result<Arc<dyn TransactionalProducer>> {
        Ok(Arc::new(
            EmbeddedTransactionalProducer::begin(self.shared.clone(), config).await?,
        ))
    }
}
