//! Topic specifications and what a backplane reports about its topics.

use std::collections::BTreeMap;

/// What a topic should look like when it is created.
///
/// ```
/// use runnel_backend::TopicSpec;
/// let spec = TopicSpec::new("readings", 3).with_config("retention.ms", "86400000");
/// assert_eq!(spec.partitions, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSpec {
    /// The topic name.
    pub name: String,
    /// The number of partitions, at least 1.
    pub partitions: u32,
    /// The replication factor; backplanes without replication ignore it.
    pub replication: Option<u16>,
    /// Topic settings with Kafka's names (`retention.ms`, `retention.bytes`,
    /// `segment.bytes`, ...). Each backplane documents the ones it honours.
    pub config: BTreeMap<String, String>,
}

impl TopicSpec {
    /// A topic with this name and partition count and default settings.
    pub fn new(name: impl Into<String>, partitions: u32) -> Self {
        TopicSpec {
            name: name.into(),
            partitions,
            replication: None,
            config: BTreeMap::new(),
        }
    }

    /// Adds a topic setting.
    pub fn with_config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.insert(key.into(), value.into());
        self
    }
}

/// What a backplane knows about an existing topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic name.
    pub name: String,
    /// The number of partitions.
    pub partitions: u32,
}

/// Whether [`create_topic`](crate::Backend::create_topic) created the topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicCreation {
    /// The topic did not exist and was created.
    Created,
    /// A topic with the same name and partition count already existed; it was left alone.
    AlreadyExists,
}

/// The first and the next-to-be-written offset of one partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// The offset of the oldest record still kept (retention moves it forward).
    pub start: u64,
    /// The offset the next appended record will get (the log end offset).
    pub end: u64,
}
