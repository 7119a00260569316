//! [`Store`]: the backplane the tools read and write, the embedded log or Kafka.
//!
//! On the embedded log, reading (topics, records, committed offsets) goes through the
//! [`LogInspector`], so it works while the app runs; writing (producing, resetting offsets)
//! opens the log, which takes its lock: it works only while the app is stopped, and is
//! refused naming the process that holds the log otherwise. A data directory that does not
//! hold a log yet (an app that never ran) can be produced to: the log and the topic are
//! created as the app's run would create them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use runnel_backend::{
    Backend, CommitOffset, ConsumedRecord, ConsumerConfig, PartitionOffsets, ProducerConfig,
    Record, SchemaNaming, TopicSchema, TopicSpec,
};
use runnel_embedded_log::{EmbeddedBackend, LogConfig, LogInspector};

use crate::error::{Result, ToolError};

/// A topic as the tools list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicListing {
    /// The topic name.
    pub name: String,
    /// Its partition count.
    pub partitions: u32,
    /// The settings set on it (`retention.ms`, ...); defaults are not listed.
    pub settings: BTreeMap<String, String>,
}

/// The schema `produce` encoded records' values with: registered (where the backplane keeps
/// schemas) before they are appended, and named in each record unless it is the topic's base.
#[derive(Clone, Debug)]
pub struct EncodedWith {
    /// The schema.
    pub schema: TopicSchema,
    /// Whether records name it where the backplane keeps no schemas (the blueprint's rule:
    /// the topic has several writer schemas).
    pub named: bool,
}

/// Where the tools find the topics.
#[derive(Debug)]
pub enum Store {
    /// The embedded log in a data directory.
    Embedded {
        /// The data directory.
        directory: PathBuf,
        /// Its reader; `None` while the directory holds no log yet.
        inspector: Option<LogInspector>,
    },
    /// A Kafka cluster.
    #[cfg(feature = "kafka")]
    Kafka(runnel_kafka::KafkaBackend),
}

impl Store {
    /// The embedded log in `directory`, which need not hold a log yet: reading it is then
    /// an error that says so, and producing creates it.
    ///
    /// # Errors
    ///
    /// When the directory cannot be read.
    pub fn embedded(directory: PathBuf) -> Result<Self> {
        let inspector = match LogInspector::new(&directory) {
            Ok(inspector) => Some(inspector),
            Err(runnel_embedded_log::Error::NotALog { .. }) => None,
            Err(source) => {
                return Err(ToolError::Log {
                    directory: directory.display().to_string(),
                    source,
                });
            }
        };
        Ok(Store::Embedded {
            directory,
            inspector,
        })
    }

    /// The reader of the embedded log, or why there is none.
    fn inspector<'a>(&self, inspector: &'a Option<LogInspector>) -> Result<&'a LogInspector> {
        inspector.as_ref().ok_or_else(|| {
            let path = match self {
                Store::Embedded { directory, .. } => directory.clone(),
                #[cfg(feature = "kafka")]
                Store::Kafka(_) => PathBuf::new(),
            };
            self.log_error(runnel_embedded_log::Error::NotALog { path })
        })
    }

    /// Every topic.
    ///
    /// # Errors
    ///
    /// When the backplane cannot be read.
    pub async fn topics(&self) -> Result<Vec<TopicListing>> {
        match self {
            Store::Embedded { inspector, .. } => Ok(self
                .inspector(inspector)?
                .topics()
                .map_err(|source| self.log_error(source))?
                .into_iter()
                .map(|topic| TopicListing {
                    name: topic.name,
                    partitions: topic.partitions,
                    settings: topic.settings,
                })
                .collect()),
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => {
                let mut listed = Vec::new();
                for topic in kafka
                    .list_topics()
                    .await
                    .map_err(|e| backplane("listing topics", e))?
                {
                    let settings = kafka.topic_settings(&topic.name).await.unwrap_or_default();
                    listed.push(TopicListing {
                        name: topic.name,
                        partitions: topic.partitions,
                        settings,
                    });
                }
                Ok(listed)
            }
        }
    }

    /// The topic called `name`, or an error listing the topics there are.
    ///
    /// # Errors
    ///
    /// [`ToolError::TopicNotFound`]; when the backplane cannot be read.
    pub async fn topic(&self, name: &str) -> Result<TopicListing> {
        let topics = self.topics().await?;
        let known = topics
            .iter()
            .map(|topic| topic.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        topics
            .iter()
            .find(|topic| topic.name == name)
            .cloned()
            .ok_or_else(|| ToolError::TopicNotFound {
                topic: name.to_owned(),
                known,
            })
    }

    /// The start and end offset of every partition of `topic`.
    ///
    /// # Errors
    ///
    /// When the backplane cannot be read.
    pub async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
        match self {
            Store::Embedded { inspector, .. } => self
                .inspector(inspector)?
                .offsets(topic)
                .map_err(|source| self.log_error(source)),
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => kafka
                .offsets(topic)
                .await
                .map_err(|e| backplane(format!("reading the offsets of topic '{topic}'"), e)),
        }
    }

    /// Up to `max_records` records of one partition from `from` on; on Kafka, waiting up to
    /// `wait` for the first.
    ///
    /// # Errors
    ///
    /// When the backplane cannot be read.
    pub async fn read(
        &self,
        topic: &str,
        partition: u32,
        from: u64,
        max_records: usize,
        wait: Duration,
    ) -> Result<Vec<ConsumedRecord>> {
        let _ = wait;
        match self {
            Store::Embedded { inspector, .. } => self
                .inspector(inspector)?
                .read(topic, partition, from, max_records)
                .map_err(|source| self.log_error(source)),
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => kafka
                .read(topic, partition, from, max_records, wait)
                .await
                .map_err(|e| {
                    backplane(format!("reading topic '{topic}' partition {partition}"), e)
                }),
        }
    }

    /// The schemas kept with `topic` (oldest first); none where the backplane keeps none,
    /// or the topic does not exist yet.
    ///
    /// # Errors
    ///
    /// When they cannot be read.
    pub async fn topic_schemas(&self, topic: &str) -> Result<Vec<TopicSchema>> {
        match self {
            Store::Embedded {
                inspector: Some(inspector),
                ..
            } => match inspector.schemas(topic) {
                Ok(schemas) => Ok(schemas),
                Err(runnel_embedded_log::Error::TopicNotFound { .. }) => Ok(Vec::new()),
                Err(source) => Err(self.log_error(source)),
            },
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => kafka
                .topic_schemas(topic)
                .await
                .map_err(|e| backplane(format!("reading the schemas of topic '{topic}'"), e)),
            Store::Embedded { .. } => Ok(Vec::new()),
        }
    }

    /// Whether every Avro value starts with its schema's registry id (Kafka with a schema
    /// registry).
    pub fn frames_by_registry(&self) -> bool {
        match self {
            Store::Embedded { .. } => false,
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => {
                kafka.keeps_schemas()
                    && kafka.schema_naming() == runnel_backend::SchemaNaming::RegistryId
            }
        }
    }

    /// The schema the registry knows by `id`; `None` when it has none, or there is no
    /// registry.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached.
    #[cfg_attr(not(feature = "kafka"), allow(unused_variables))]
    pub async fn schema_by_id(&self, id: u32) -> Result<Option<TopicSchema>> {
        match self {
            // The embedded log keeps schemas by fingerprint, and has no ids.
            Store::Embedded { .. } => Ok(None),
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => match kafka.schema_by_id(id).await {
                Ok(schema) => Ok(Some(schema)),
                Err(runnel_backend::Error::SchemaNotFound { .. }) => Ok(None),
                Err(error) => Err(backplane(
                    format!("looking up schema id {id} in the schema registry"),
                    error,
                )),
            },
        }
    }

    /// The offsets `group` committed on `topic`, by partition.
    ///
    /// # Errors
    ///
    /// When the backplane cannot be read.
    pub async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
        match self {
            Store::Embedded { inspector, .. } => self
                .inspector(inspector)?
                .committed(group, topic)
                .map_err(|source| self.log_error(source)),
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => kafka
                .committed(group, topic)
                .await
                .map_err(|e| backplane(format!("reading the offsets of group '{group}'"), e)),
        }
    }

    /// Appends `records` to `topic` (to `partition`, or by key, else round robin), all sent
    /// before any acknowledgement is waited for, and returns the (partition, offset) of each
    /// once every one is acknowledged. A topic that does not exist yet is created from
    /// `declared` (the blueprint's), as the app's run would create it. On the embedded log
    /// the app must be stopped.
    ///
    /// # Errors
    ///
    /// When the topic does not exist and is not declared, `partition` is not one of its
    /// partitions, the log is in use, or it refuses a record.
    pub async fn produce(
        &self,
        topic: &str,
        partition: Option<u32>,
        mut records: Vec<Record>,
        declared: Option<&TopicSpec>,
        encoded_with: Option<&EncodedWith>,
    ) -> Result<Vec<(u32, u64)>> {
        let backend = self.writable().await?;
        let describe = |e| backplane(format!("describing topic '{topic}'"), e);
        let partitions = match backend.topic(topic).await.map_err(describe)? {
            Some(info) => info.partitions,
            None => {
                let Some(spec) = declared else {
                    return Err(self.topic_not_found(topic).await);
                };
                backend
                    .create_topic(spec)
                    .await
                    .map_err(|e| backplane(format!("creating topic '{topic}'"), e))?;
                spec.partitions
            }
        };
        if let Some(partition) = partition
            && partition >= partitions
        {
            return Err(ToolError::Usage(format!(
                "topic '{topic}' has {partitions} partitions; there is no partition {partition}"
            )));
        }
        if let Some(encoded) = encoded_with {
            let kept = if backend.keeps_schemas() {
                backend
                    .register_schema(topic, &encoded.schema)
                    .await
                    .map_err(|e| {
                        backplane(format!("registering the schema of topic '{topic}'"), e)
                    })?
            } else {
                Vec::new()
            };
            let fingerprint = &encoded.schema.fingerprint;
            if backend.keeps_schemas() && backend.schema_naming() == SchemaNaming::RegistryId {
                let id = kept
                    .iter()
                    .find(|kept| kept.fingerprint == *fingerprint)
                    .and_then(|kept| kept.id)
                    .ok_or_else(|| {
                        ToolError::Usage(format!(
                            "the schema registry does not list the schema of topic '{topic}' it accepted"
                        ))
                    })?;
                for record in &mut records {
                    if let Some(value) = &record.value {
                        let mut framed = Vec::with_capacity(value.len() + 5);
                        framed.push(0);
                        framed.extend_from_slice(&id.to_be_bytes());
                        framed.extend_from_slice(value);
                        record.value = Some(framed.into());
                    }
                }
            }
            let named = match backend.schema_naming() {
                _ if !backend.keeps_schemas() => encoded.named,
                SchemaNaming::Header => kept
                    .first()
                    .is_some_and(|base| base.fingerprint != *fingerprint),
                SchemaNaming::RegistryId => false,
            };
            if named {
                let fingerprint = encoded.schema.fingerprint.clone();
                for record in records.iter_mut().filter(|record| !record.is_null()) {
                    record
                        .headers
                        .push(crate::schemas::SCHEMA_HEADER, fingerprint.clone());
                }
            }
        }
        let producer = backend
            .producer(&ProducerConfig::default())
            .await
            .map_err(|e| backplane("creating a producer", e))?;
        let refused = |e| backplane(format!("producing to topic '{topic}'"), e);
        // Every record is handed over before any acknowledgement is waited for: the log
        // syncs them in a few batches instead of one sync per record.
        let mut receipts = Vec::with_capacity(records.len());
        for (index, record) in records.into_iter().enumerate() {
            let partition = partition.unwrap_or_else(|| match &record.key {
                Some(key) => runnel_backend::partition_for_key(key, partitions),
                None => index as u32 % partitions,
            });
            let receipt = producer
                .send(topic, partition, record)
                .await
                .map_err(refused)?;
            receipts.push((partition, receipt));
        }
        let mut written = Vec::with_capacity(receipts.len());
        for (partition, receipt) in receipts {
            written.push((partition, receipt.await.map_err(refused)?));
        }
        Ok(written)
    }

    /// The error for a topic that does not exist, listing those that do.
    async fn topic_not_found(&self, topic: &str) -> ToolError {
        let known = match self.topics().await {
            Ok(topics) if !topics.is_empty() => topics
                .iter()
                .map(|topic| topic.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            _ => "none yet".to_owned(),
        };
        ToolError::TopicNotFound {
            topic: topic.to_owned(),
            known,
        }
    }

    /// Sets `group`'s committed offsets (topic, partition, next offset to read). The app
    /// must be stopped: on the embedded log its lock says so, on Kafka the group must have
    /// no members.
    ///
    /// # Errors
    ///
    /// When the app runs or the backplane refuses the offsets.
    pub async fn set_committed(&self, group: &str, offsets: &[(String, u32, u64)]) -> Result<()> {
        match self {
            Store::Embedded { .. } => {
                let backend = self.writable().await?;
                let topics: Vec<String> = offsets.iter().map(|(topic, ..)| topic.clone()).collect();
                let consumer = backend
                    .consumer(&ConsumerConfig::new(group, topics))
                    .await
                    .map_err(|e| backplane(format!("joining group '{group}'"), e))?;
                let commits: Vec<CommitOffset> = offsets
                    .iter()
                    .map(|(topic, partition, offset)| CommitOffset {
                        topic: std::sync::Arc::from(topic.as_str()),
                        partition: *partition,
                        offset: *offset,
                    })
                    .collect();
                consumer
                    .commit(&commits)
                    .await
                    .map_err(|e| backplane(format!("committing offsets of group '{group}'"), e))?;
                consumer
                    .close()
                    .await
                    .map_err(|e| backplane(format!("leaving group '{group}'"), e))
            }
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => kafka
                .set_committed(group, offsets)
                .await
                .map_err(|e| backplane(format!("resetting the offsets of group '{group}'"), e)),
        }
    }

    /// A backend that can write: the embedded log opened (and locked), or Kafka.
    async fn writable(&self) -> Result<std::sync::Arc<dyn Backend>> {
        match self {
            Store::Embedded { directory, .. } => {
                let backend = EmbeddedBackend::open(directory, LogConfig::default())
                    .map_err(|source| self.log_error(source))?;
                Ok(std::sync::Arc::new(backend))
            }
            #[cfg(feature = "kafka")]
            Store::Kafka(kafka) => Ok(std::sync::Arc::new(kafka.clone())),
        }
    }

    fn log_error(&self, source: runnel_embedded_log::Error) -> ToolError {
        let directory = match self {
            Store::Embedded { directory, .. } => directory.display().to_string(),
            #[cfg(feature = "kafka")]
            Store::Kafka(_) => String::new(),
        };
        ToolError::Log { directory, source }
    }
}

fn backplane(operation: impl Into<String>, source: runnel_backend::Error) -> ToolError {
    ToolError::Backplane {
        operation: operation.into(),
        source,
    }
}
