//! [`Shared`]: the state of the open log that the backend and every producer, consumer and
//! reader handle hold (its topics and their partitions, committed offsets, consumer groups,
//! the transaction coordinator and the directory lock), and [`TopicLog`], one topic's
//! partitions. [`EmbeddedBackend`](crate::EmbeddedBackend) opens it and creates the handles.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use runnel_backend::group::GroupCoordinator;
use runnel_backend::{TopicCreation, TopicSpec};
use tokio::sync::watch;

use crate::config::LogConfig;
use crate::coordinator::Coordinator;
use crate::error::{Error, Result};
use crate::files;
use crate::lock::DirectoryLock;
use crate::offset_store::OffsetStore;
use crate::partition::{Partition, PartitionLimits, lock};
use crate::topic_settings::TopicMetadata;
use crate::writer;

/// Everything the backend, its producers and its consumers share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) directory: PathBuf,
    pub(crate) config: LogConfig,
    topics: RwLock<HashMap<String, Arc<TopicLog>>>,
    /// Serializes topic creation.
    creating: Mutex<()>,
    /// Serializes schema registrations.
    pub(crate) registering: Mutex<()>,
    pub(crate) offsets: OffsetStore,
    pub(crate) groups: GroupCoordinator,
    pub(crate) coordinator: Coordinator,
    /// Dropped last, after the writers stopped.
    _lock: DirectoryLock,
}

/// A topic's partitions.
#[derive(Debug)]
pub(crate) struct TopicLog {
    pub(crate) partitions: Vec<Arc<Partition>>,
    /// Bumped whenever records of this topic become visible; its consumers wait on it, so
    /// an append wakes only the readers of its own topic.
    pub(crate) appended: Arc<watch::Sender<u64>>,
}

impl Shared {
    /// The state of the log in `directory`, its `topics` recovered (their writers not yet
    /// started), held under the directory `lock` until it is dropped.
    pub(crate) fn new(
        directory: PathBuf,
        config: LogConfig,
        topics: HashMap<String, Arc<TopicLog>>,
        offsets: OffsetStore,
        coordinator: Coordinator,
        lock: DirectoryLock,
    ) -> Shared {
        Shared {
            directory,
            config,
            topics: RwLock::new(topics),
            creating: Mutex::new(()),
            registering: Mutex::new(()),
            offsets,
            groups: GroupCoordinator::default(),
            coordinator,
            _lock: lock,
        }
    }

    /// The directory of topic `name`.
    pub(crate) fn topic_directory(&self, name: &str) -> PathBuf {
        self.directory.join("topics").join(name)
    }

    /// The topic called `name`.
    pub(crate) fn topic(&self, name: &str) -> runnel_backend::Result<Arc<TopicLog>> {
        self.topics
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .ok_or_else(|| runnel_backend::Error::TopicNotFound {
                topic: name.to_owned(),
            })
    }

    /// One partition of a topic.
    pub(crate) fn partition(
        &self,
        topic: &str,
        partition: u32,
    ) -> runnel_backend::Result<Arc<Partition>> {
        let log = self.topic(topic)?;
        log.partitions
            .get(partition as usize)
            .cloned()
            .ok_or_else(|| runnel_backend::Error::PartitionNotFound {
                topic: topic.to_owned(),
                partition,
                partitions: log.partitions.len() as u32,
            })
    }

    /// The number of partitions of a topic, 0 when it does not exist.
    pub(crate) fn partitions_of(&self, topic: &str) -> u32 {
        self.topic(topic)
            .map_or(0, |log| log.partitions.len() as u32)
    }

    /// Every partition of every topic.
    pub(crate) fn all_partitions(&self) -> Vec<Arc<Partition>> {
        let topics = self.topics.read().unwrap_or_else(PoisonError::into_inner);
        topics
            .values()
            .flat_map(|topic| topic.partitions.iter().cloned())
            .collect()
    }

    /// Creates a topic on disk and starts its writers. Blocks on disk I/O.
    pub(crate) fn create_topic(
        &self,
        spec: &TopicSpec,
        metadata: TopicMetadata,
    ) -> runnel_backend::Result<TopicCreation> {
        let _creating = lock(&self.creating);
        if let Ok(existing) = self.topic(&spec.name) {
            let existing = existing.partitions.len() as u32;
            return if existing == spec.partitions {
                Ok(TopicCreation::AlreadyExists)
            } else {
                Err(runnel_backend::Error::PartitionCountMismatch {
                    topic: spec.name.clone(),
                    requested: spec.partitions,
                    existing,
                })
            };
        }
        let operation = || format!("creating topic '{}'", spec.name);
        let path = self.directory.join("topics").join(&spec.name);
        let created = (|| {
            if path.exists() {
                // Left by an interrupted creation: no records were ever acknowledged in it.
                std::fs::remove_dir_all(&path).map_err(|source| Error::Remove {
                    path: path.clone(),
                    source,
                })?;
            }
            files::create_directory(&path)?;
            let topic = open_topic(&path, &spec.name, &metadata, &self.config)?;
            // The metadata file is written last: its presence marks the topic as complete.
            metadata.store(&path)?;
            if let Err(error) = topic.partitions.iter().try_for_each(writer::start) {
                topic
                    .partitions
                    .iter()
                    .for_each(|partition| partition.shut_down());
                return Err(error);
            }
            Ok::<_, Error>(topic)
        })()
        .map_err(|error| error.into_admin(operation()))?;
        self.topics
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(spec.name.clone(), Arc::new(created));
        Ok(TopicCreation::Created)
    }
}

/// Opens (recovers) the partitions of topic `name`, stored in `path`; their writers are not
/// started.
pub(crate) fn open_topic(
    path: &Path,
    name: &str,
    metadata: &TopicMetadata,
    config: &LogConfig,
) -> Result<TopicLog> {
    let appended = Arc::new(watch::Sender::new(0));
    let limits = PartitionLimits::new(metadata.settings(config), config);
    let name: Arc<str> = Arc::from(name);
    let partitions = (0..metadata.partitions)
        .map(|number| {
            let directory = path.join(number.to_string());
            Partition::open(directory, name.clone(), number, limits, appended.clone()).map(Arc::new)
        })
        .collect::<Result<_>>()?;
    Ok(TopicLog {
        partitions,
        appended,
    })
}

impl Drop for Shared {
    fn drop(&mut self) {
        for partition in self.all_partitions() {
            partition.shut_down();
        }
    }
}
