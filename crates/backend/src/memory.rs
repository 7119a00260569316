//! [`MemoryBackend`]: a backplane held in memory, for tests and the streamlet test kit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tokio::sync::watch;

use crate::group::{GroupCoordinator, MemberId};
use crate::{
    Backend, CommitOffset, ConsumedRecord, Consumer, ConsumerConfig, Error, PartitionOffsets,
    PartitionReader, Producer, ProducerConfig, ReaderConfig, Receipt, Record, Result, StartFrom,
    TopicCreation, TopicInfo, TopicPartition, TopicSchema, TopicSpec, TransactionConfig,
    TransactionalProducer,
};

mod assigned;
mod transaction;

/// A backplane in memory: nothing survives the process, every send is acknowledged at once.
///
/// ```
/// use runnel_backend::{Backend, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> runnel_backend::Result<()> {
/// let backend = MemoryBackend::new();
/// backend.create_topic(&TopicSpec::new("greetings", 1)).await?;
/// let producer = backend.producer(&ProducerConfig::default()).await?;
/// producer.send("greetings", 0, Record::new("hello")).await?.await?;
///
/// let consumer = backend.consumer(&ConsumerConfig::new("readers", ["greetings"])).await?;
/// let records = consumer.poll(10).await?;
/// assert_eq!(records[0].record.value.as_deref(), Some(&b"hello"[..]));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryBackend {
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    topics: Mutex<HashMap<String, Arc<Topic>>>,
    committed: Mutex<HashMap<GroupTopic, Vec<Option<u64>>>>,
    groups: GroupCoordinator,
    /// The epoch of every transactional id; a producer whose epoch is older is fenced.
    epochs: Mutex<HashMap<String, u64>>,
    /// Bumped on every append, so waiting consumers look again.
    appended: watch::Sender<u64>,
    /// The schemas registered per topic, in order.
    schemas: Mutex<HashMap<String, Vec<TopicSchema>>>,
}

impl Default for State {
    fn default() -> Self {
        State {
            topics: Mutex::default(),
            committed: Mutex::default(),
            groups: GroupCoordinator::default(),
            epochs: Mutex::default(),
            appended: watch::Sender::new(0),
            schemas: Mutex::default(),
        }
    }
}

/// A consumer group name and a topic name.
type GroupTopic = (String, String);

#[derive(Debug)]
struct Topic {
    name: Arc<str>,
    partitions: Vec<Mutex<Vec<Record>>>,
    /// The largest record accepted, from the topic's `max.message.bytes` setting.
    max_record_bytes: Option<usize>,
}

/// The topic setting that limits record sizes, with Kafka's name.
const MAX_RECORD_BYTES: &str = "max.message.bytes";

/// A record's size as this backplane counts it against `max.message.bytes`: key, value,
/// and every header's name and value.
fn record_size(record: &Record) -> usize {
    let headers: usize = record
        .headers
        .iter()
        .map(|header| header.key.len() + header.value.len())
        .sum();
    record.key.as_ref().map_or(0, |key| key.len()) + record.value_len() + headers
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryBackend {
    /// An empty backplane.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes a topic with its records and committed offsets, as an administrator might
    /// under a running app; for tests of what happens then.
    ///
    /// Returns whether the topic existed.
    pub fn delete_topic(&self, topic: &str) -> bool {
        lock(&self.state.committed).retain(|(_, name), _| name != topic);
        lock(&self.state.topics).remove(topic).is_some()
    }

    /// Every record of a topic, partition by partition, in offset order.
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] if the topic does not exist.
    pub fn records(&self, topic: &str) -> Result<Vec<ConsumedRecord>> {
        let topic = self.state.topic(topic)?;
        let mut out = Vec::new();
        for (partition, records) in topic.partitions.iter().enumerate() {
            out.extend(
                lock(records)
                    .iter()
                    .enumerate()
                    .map(|(offset, record)| ConsumedRecord {
                        topic: topic.name.clone(),
                        partition: partition as u32,
                        offset: offset as u64,
                        record: record.clone(),
                    }),
            );
        }
        Ok(out)
    }
}

impl State {
    fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        lock(&self.topics)
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TopicNotFound {
                topic: name.to_owned(),
            })
    }

    /// The partition's records, or an error naming what does not exist.
    fn partition(&self, topic: &str, partition: u32) -> Result<(Arc<Topic>, usize)> {
        let topic = self.topic(topic)?;
        if partition as usize >= topic.partitions.len() {
            return Err(Error::PartitionNotFound {
                topic: topic.name.to_string(),
                partition,
                partitions: topic.partitions.len() as u32,
            });
        }
        Ok((topic, partition as usize))
    }

    /// Appends a record without waking readers; returns its offset.
    fn append(&self, topic: &Topic, partition: usize, record: Record) -> u64 {
        let mut records = lock(&topic.partitions[partition]);
        records.push(record);
        records.len() as u64 - 1
    }

    /// Stores committed offsets of a group.
    fn store_offsets(&self, group: &str, offsets: &[CommitOffset]) -> Result<()> {
        let mut committed = lock(&self.committed);
        for offset in offsets {
            let partitions = self.topic(&offset.topic)?.partitions.len();
            if offset.partition as usize >= partitions {
                return Err(Error::PartitionNotFound {
                    topic: offset.topic.to_string(),
                    partition: offset.partition,
                    partitions: partitions as u32,
                });
            }
            let slots = committed
                .entry((group.to_owned(), offset.topic.to_string()))
                .or_insert_with(|| vec![None; partitions]);
            slots[offset.partition as usize] = Some(offset.offset);
        }
        Ok(())
    }

    fn partitions_of(&self, name: &str) -> u32 {
        lock(&self.topics)
            .get(name)
            .map_or(0, |topic| topic.partitions.len() as u32)
    }

    fn committed(&self, group: &str, topic: &str, partition: u32) -> Option<u64> {
        lock(&self.committed)
            .get(&(group.to_owned(), topic.to_owned()))
            .and_then(|offsets| offsets.get(partition as usize).copied().flatten())
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> Result<TopicCreation> {
        if spec.partitions == 0 {
            return Err(Error::InvalidTopic {
                topic: spec.name.clone(),
                reason: "a topic needs at least one partition".into(),
            });
        }
        let mut topics = lock(&self.state.topics);
        if let Some(existing) = topics.get(&spec.name) {
            let existing = existing.partitions.len() as u32;
            return if existing == spec.partitions {
                Ok(TopicCreation::AlreadyExists)
            } else {
                Err(Error::PartitionCountMismatch {
                    topic: spec.name.clone(),
                    requested: spec.partitions,
                    existing,
                })
            };
        }
        let max_record_bytes = match spec.config.get(MAX_RECORD_BYTES) {
            Some(text) => Some(text.parse().map_err(|_| Error::InvalidTopic {
                topic: spec.name.clone(),
                reason: format!("{MAX_RECORD_BYTES} '{text}' is not a byte count"),
            })?),
            None => None,
        };
        let topic = Topic {
            name: Arc::from(spec.name.as_str()),
            partitions: (0..spec.partitions).map(|_| Mutex::default()).collect(),
            max_record_bytes,
        };
        topics.insert(spec.name.clone(), Arc::new(topic));
        Ok(TopicCreation::Created)
    }

    async fn topic(&self, name: &str) -> Result<Option<TopicInfo>> {
        Ok(lock(&self.state.topics).get(name).map(|topic| TopicInfo {
            name: name.to_owned(),
            partitions: topic.partitions.len() as u32,
        }))
    }

    async fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
        let topic = self.state.topic(topic)?;
        Ok(topic
            .partitions
            .iter()
            .map(|records| PartitionOffsets {
                start: 0,
                end: lock(records).len() as u64,
            })
            .collect())
    }

    async fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
        let partitions = self.state.topic(topic)?.partitions.len() as u32;
        Ok((0..partitions)
            .map(|p| self.state.committed(group, topic, p))
            .collect())
    }

    async fn producer(&self, _config: &ProducerConfig) -> Result<Arc<dyn Producer>> {
        Ok(Arc::new(MemoryProducer {
            state: self.state.clone(),
        }))
    }

    async fn consumer(&self, config: &ConsumerConfig) -> Result<Arc<dyn Consumer>> {
        Ok(Arc::new(self.member(config)?))
    }

    /// Reads without a group. A transaction's records are appended when it commits, so
    /// both isolations read the same records.
    async fn partition_reader(&self, config: &ReaderConfig) -> Result<Box<dyn PartitionReader>> {
        Ok(Box::new(assigned::AssignedReader::new(self, config)?))
    }

    fn supports_transactions(&self) -> bool {
        true
    }

    fn keeps_schemas(&self) -> bool {
        true
    }

    async fn topic_schemas(&self, topic: &str) -> Result<Vec<TopicSchema>> {
        self.state.topic(topic)?;
        Ok(lock(&self.state.schemas)
            .get(topic)
            .cloned()
            .unwrap_or_default())
    }

    async fn register_schema(&self, topic: &str, schema: &TopicSchema) -> Result<Vec<TopicSchema>> {
        self.state.topic(topic)?;
        let mut schemas = lock(&self.state.schemas);
        let registered = schemas.entry(topic.to_owned()).or_default();
        if !registered
            .iter()
            .any(|known| known.fingerprint == schema.fingerprint)
        {
            registered.push(schema.clone());
        }
        Ok(registered.clone())
    }

    async fn transactional_producer(
        &self,
        config: &TransactionConfig,
    ) -> Result<Arc<dyn TransactionalProducer>> {
        Ok(Arc::new(transaction::MemoryTransactionalProducer::new(
            self.clone(),
            &config.id,
        )))
    }
}

impl MemoryBackend {
    fn member(&self, config: &ConsumerConfig) -> Result<MemoryConsumer> {
        for topic in &config.topics {
            self.state.topic(topic)?;
        }
        let member = self.state.groups.join(&config.group, config.topics.clone());
        let membership = self.state.groups.watch(&config.group);
        Ok(MemoryConsumer {
            state: self.state.clone(),
            group: config.group.clone(),
            start_from: config.start_from,
            member,
            membership: Mutex::new(membership),
            positions: Mutex::new(Positions {
                generation: u64::MAX,
                of: Vec::new(),
            }),
            revocations: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }
}

#[derive(Debug)]
struct MemoryProducer {
    state: Arc<State>,
}

#[async_trait]
impl Producer for MemoryProducer {
    async fn send(&self, topic: &str, partition: u32, record: Record) -> Result<Receipt> {
        let (topic, partition) = self.state.partition(topic, partition)?;
        if let Some(limit) = topic.max_record_bytes {
            let size = record_size(&record);
            if size > limit {
                return Err(Error::RecordTooLarge {
                    topic: topic.name.to_string(),
                    partition: partition as u32,
                    size,
                    limit: Some(limit),
                });
            }
        }
        let offset = self.state.append(&topic, partition, record);
        self.state.appended.send_modify(|count| *count += 1);
        Ok(Receipt::ready(Ok(offset)))
    }

    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
struct Positions {
    generation: u64,
    of: Vec<(TopicPartition, u64)>,
}

#[derive(Debug)]
struct MemoryConsumer {
    state: Arc<State>,
    group: String,
    start_from: StartFrom,
    member: MemberId,
    membership: Mutex<watch::Receiver<u64>>,
    positions: Mutex<Positions>,
    /// How many rebalances took partitions from this member.
    revocations: AtomicU64,
    closed: std::sync::atomic::AtomicBool,
}

impl MemoryConsumer {
    /// Re-reads the assignment after a rebalance, keeping the position of partitions this
    /// member still owns and starting the others from the committed offset.
    fn refresh_assignment(&self) {
        let generation = *lock(&self.membership).borrow_and_update();
        let mut positions = lock(&self.positions);
        if positions.generation == generation {
            return;
        }
        let assigned = self
            .state
            .groups
            .assignment(&self.group, self.member, |t| self.state.partitions_of(t));
        let previous = std::mem::take(&mut positions.of);
        if previous.iter().any(|(owned, _)| !assigned.contains(owned)) {
            // Partitions left this member: one given back later starts at the committed
            // offset, not where this member had read to.
            self.revocations.fetch_add(1, Ordering::SeqCst);
        }
        positions.of = assigned
            .into_iter()
            .map(|tp| {
                let kept = previous
                    .iter()
                    .find(|(owned, _)| *owned == tp)
                    .map(|(_, at)| *at);
                let start = kept
                    .or_else(|| self.state.committed(&self.group, &tp.topic, tp.partition))
                    .unwrap_or_else(|| match self.start_from {
                        StartFrom::Earliest => 0,
                        StartFrom::Latest => self.state.topic(&tp.topic).map_or(0, |t| {
                            lock(&t.partitions[tp.partition as usize]).len() as u64
                        }),
                    });
                (tp, start)
            })
            .collect();
        positions.generation = generation;
    }

    fn take_available(&self, max_records: usize) -> Vec<ConsumedRecord> {
        let mut positions = lock(&self.positions);
        let mut out = Vec::new();
        for (tp, position) in positions.of.iter_mut() {
            let Ok(topic) = self.state.topic(&tp.topic) else {
                continue;
            };
            let records = lock(&topic.partitions[tp.partition as usize]);
            while out.len() < max_records && (*position as usize) < records.len() {
                out.push(ConsumedRecord {
                    topic: topic.name.clone(),
                    partition: tp.partition,
                    offset: *position,
                    record: records[*position as usize].clone(),
                });
                *position += 1;
            }
        }
        // Rotate so that a busy partition does not starve the others on the next poll.
        if !positions.of.is_empty() {
            positions.of.rotate_left(1);
        }
        out
    }
}

#[async_trait]
impl Consumer for MemoryConsumer {
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>> {
        let mut appended = self.state.appended.subscribe();
        loop {
            appended.borrow_and_update();
            self.refresh_assignment();
            let records = self.take_available(max_records.max(1));
            if !records.is_empty() {
                return Ok(records);
            }
            let mut membership = lock(&self.membership).clone();
            tokio::select! {
                changed = appended.changed() => changed.map_err(|_| Error::Closed)?,
                changed = membership.changed() => changed.map_err(|_| Error::Closed)?,
            }
        }
    }

    async fn commit(&self, offsets: &[CommitOffset]) -> Result<()> {
        self.state.store_offsets(&self.group, offsets)
    }

    async fn seek(&self, topic: &str, partition: u32, offset: u64) -> Result<()> {
        self.refresh_assignment();
        let mut positions = lock(&self.positions);
        let owned = positions
            .of
            .iter_mut()
            .find(|(owned, _)| &*owned.topic == topic && owned.partition == partition);
        match owned {
            Some((_, position)) => {
                *position = offset;
                drop(positions);
                // Wake a poll that is waiting, so it reads from the new position.
                self.state.appended.send_modify(|count| *count += 1);
                Ok(())
            }
            None => Err(Error::NotAssigned {
                topic: topic.to_owned(),
                partition,
            }),
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        self.refresh_assignment();
        lock(&self.positions).of.clone()
    }

    fn revocations(&self) -> u64 {
        self.refresh_assignment();
        self.revocations.load(Ordering::SeqCst)
    }

    async fn close(&self) -> Result<()> {
        if !self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.state.groups.leave(&self.group, self.member);
        }
        Ok(())
    }
}

impl Drop for MemoryConsumer {
    fn drop(&mut self) {
        if !self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.state.groups.leave(&self.group, self.member);
        }
    }
}
