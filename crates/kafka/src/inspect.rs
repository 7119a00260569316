//! What the topic tools need from a Kafka cluster beyond the [`Backend`] trait: list topics
//! with their settings, read a partition from an offset without joining a group, see whether
//! a group has members, and set a group's committed offsets.
//!
//! [`Backend`]: runnel_backend::Backend

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rdkafka::admin::{AdminOptions, ConfigResourceResult, ResourceSpecifier};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::message::{Headers as _, Message as _};
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{ConsumedRecord, Error, Headers, Record, Result};

use crate::KafkaBackend;
use crate::context::LogContext;
use crate::metadata::blocking;

/// A topic as the cluster describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaTopic {
    /// The topic name.
    pub name: String,
    /// Its partition count.
    pub partitions: u32,
}

impl KafkaBackend {
    /// Every topic of the cluster except Kafka's internal ones (`__consumer_offsets`, ...),
    /// by name.
    ///
    /// # Errors
    ///
    /// When no broker answers.
    pub async fn list_topics(&self) -> Result<Vec<KafkaTopic>> {
        let client = self.admin_client()?;
        let (timeout, redactor) = (
            self.inner_config().request_timeout,
            self.inner_redactor().clone(),
        );
        blocking(move || {
            let metadata = client
                .fetch_metadata(None, timeout)
                .map_err(|error| Error::Admin {
                    operation: "listing topics".to_owned(),
                    source: redactor.boxed(&error),
                })?;
            let mut topics: Vec<KafkaTopic> = metadata
                .topics()
                .iter()
                .filter(|topic| !topic.name().starts_with("__") && topic.error().is_none())
                .map(|topic| KafkaTopic {
                    name: topic.name().to_owned(),
                    partitions: topic.partitions().len() as u32,
                })
                .collect();
            topics.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(topics)
        })
        .await
    }

    /// The settings of a topic the broker reports as set on it (not its defaults), such as
    /// `retention.ms`; empty where the broker does not describe configurations.
    ///
    /// # Errors
    ///
    /// When no broker answers.
    pub async fn topic_settings(&self, topic: &str) -> Result<BTreeMap<String, String>> {
        let operation = || format!("describing the settings of topic '{topic}'");
        let Some(Ok(resource)) = self.describe_topic(topic, operation).await? else {
            return Ok(BTreeMap::new());
        };
        Ok(resource
            .entries
            .into_iter()
            .filter(|entry| !entry.is_default)
            .filter_map(|entry| entry.value.map(|value| (entry.name, value)))
            .collect())
    }

    /// Every setting of `topic` as the broker describes it (its defaults too), or the
    /// broker's answer for the topic where it describes none; `None` where it sent no
    /// result. `operation` names the request in errors.
    pub(crate) async fn describe_topic(
        &self,
        topic: &str,
        operation: impl Fn() -> String,
    ) -> Result<Option<ConfigResourceResult>> {
        let options =
            AdminOptions::new().request_timeout(Some(self.inner_config().request_timeout));
        let results = self
            .admin()
            .describe_configs([&ResourceSpecifier::Topic(topic)], &options)
            .await
            .map_err(|error| Error::Admin {
                operation: operation(),
                source: self.inner_redactor().boxed(&error),
            })?;
        Ok(results.into_iter().next())
    }

    /// Up to `max_records` records of one partition from offset `from` on, read without a
    /// consumer group, waiting at most `wait` for the first of them.
    ///
    /// # Errors
    ///
    /// When the client cannot be created or the partition does not exist.
    pub async fn read(
        &self,
        topic: &str,
        partition: u32,
        from: u64,
        max_records: usize,
        wait: Duration,
    ) -> Result<Vec<ConsumedRecord>> {
        let client = self.reader_client()?;
        let redactor = self.inner_redactor().clone();
        let name: Arc<str> = Arc::from(topic);
        let topic = topic.to_owned();
        blocking(move || {
            let mut assignment = TopicPartitionList::new();
            let start = Offset::Offset(i64::try_from(from).unwrap_or(i64::MAX));
            let _ = assignment.add_partition_offset(&topic, partition as i32, start);
            client.assign(&assignment).map_err(|error| Error::Consume {
                topic: topic.clone(),
                source: redactor.boxed(&error),
            })?;
            let deadline = Instant::now() + wait;
            let mut records = Vec::new();
            while records.len() < max_records {
                let left = if records.is_empty() {
                    deadline.saturating_duration_since(Instant::now())
                } else {
                    Duration::from_millis(50)
                };
                match client.poll(left) {
                    Some(Ok(message)) => records.push(convert(&name, &message)),
                    Some(Err(error)) => {
                        return Err(Error::Consume {
                            topic: topic.clone(),
                            source: redactor.boxed(&error),
                        });
                    }
                    None if records.is_empty() && Instant::now() < deadline => {}
                    None => break,
                }
            }
            Ok(records)
        })
        .await
    }

    /// How many members `group` has now, or `None` when the cluster does not say.
    ///
    /// # Errors
    ///
    /// When no broker answers.
    pub async fn group_members(&self, group: &str) -> Result<Option<usize>> {
        let client = self.admin_client()?;
        let timeout = self.inner_config().request_timeout;
        let group = group.to_owned();
        blocking(move || {
            Ok(client
                .fetch_group_list(Some(&group), timeout)
                .ok()
                .and_then(|list| {
                    list.groups()
                        .iter()
                        .find(|found| found.name() == group)
                        .map(|found| found.members().len())
                }))
        })
        .await
    }

    /// Sets the committed offsets of `group`, which must have no members (its app is
    /// stopped).
    ///
    /// # Errors
    ///
    /// When the group has members, or the cluster refuses the offsets.
    pub async fn set_committed(&self, group: &str, offsets: &[(String, u32, u64)]) -> Result<()> {
        if let Some(members) = self.group_members(group).await?
            && members > 0
        {
            return Err(Error::Commit {
                group: group.to_owned(),
                source: crate::error::message(format!(
                    "the group has {members} active members; stop the app before resetting its offsets"
                )),
            });
        }
        let client: BaseConsumer<LogContext> = self
            .inner_config()
            .group_reader(group)
            .create_with_context(LogContext {
                redactor: self.inner_redactor().clone(),
            })
            .map_err(|error| Error::Commit {
                group: group.to_owned(),
                source: self.inner_redactor().boxed(&error),
            })?;
        let mut list = TopicPartitionList::new();
        for (topic, partition, offset) in offsets {
            let offset = Offset::Offset(i64::try_from(*offset).unwrap_or(i64::MAX));
            let _ = list.add_partition_offset(topic, *partition as i32, offset);
        }
        let (redactor, group) = (self.inner_redactor().clone(), group.to_owned());
        blocking(move || {
            client
                .commit(&list, CommitMode::Sync)
                .map_err(|error| Error::Commit {
                    group,
                    source: redactor.boxed(&error),
                })
        })
        .await
    }

    /// A plain consumer-type client for metadata and group listings.
    fn admin_client(&self) -> Result<Arc<BaseConsumer<LogContext>>> {
        self.plain_client(self.inner_config().admin())
    }

    /// A client that reads assigned partitions and commits nothing.
    fn reader_client(&self) -> Result<Arc<BaseConsumer<LogContext>>> {
        let mut config = self.inner_config().group_reader("runnel-tools");
        config.set("enable.partition.eof", "false");
        self.plain_client(config)
    }

    fn plain_client(&self, config: rdkafka::ClientConfig) -> Result<Arc<BaseConsumer<LogContext>>> {
        config
            .create_with_context(LogContext {
                redactor: self.inner_redactor().clone(),
            })
            .map(Arc::new)
            .map_err(|error| Error::Admin {
                operation: "creating a kafka client".to_owned(),
                source: self.inner_redactor().boxed(&error),
            })
    }
}

fn convert(topic: &Arc<str>, message: &rdkafka::message::BorrowedMessage<'_>) -> ConsumedRecord {
    let mut headers = Headers::new();
    if let Some(borrowed) = message.headers() {
        for header in borrowed.iter() {
            headers.push(
                header.key,
                Bytes::copy_from_slice(header.value.unwrap_or_default()),
            );
        }
    }
    ConsumedRecord {
        topic: topic.clone(),
        partition: message.partition() as u32,
        offset: message.offset() as u64,
        record: Record {
            key: message.key().map(Bytes::copy_from_slice),
            // A message without a payload is a null value (a tombstone), not an empty one.
            value: message.payload().map(Bytes::copy_from_slice),
            headers,
            timestamp: message.timestamp().to_millis().unwrap_or(0),
        },
    }
}
