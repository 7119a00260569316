//! The embedded log's [`Consumer`]: a member of a consumer group, reading its assigned
//! partitions with one [`PartitionReader`] each.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runnel_backend::group::MemberId;
use runnel_backend::{
    CommitOffset, ConsumedRecord, Consumer, ConsumerConfig, Isolation, StartFrom, TopicPartition,
};
use tokio::sync::watch;

use crate::partition::{Partition, lock};
use crate::reader::PartitionReader;
use crate::shared::Shared;

/// How many records a poll makes room for up front.
const INITIAL_CAPACITY: usize = 4096;

/// A member of a consumer group of an [`EmbeddedBackend`](crate::EmbeddedBackend).
#[derive(Debug)]
pub(crate) struct EmbeddedConsumer {
    shared: Arc<Shared>,
    group: String,
    topics: Vec<String>,
    start_from: StartFrom,
    isolation: Isolation,
    member: MemberId,
    membership: Mutex<watch::Receiver<u64>>,
    assignment: Mutex<Assignment>,
    /// How many rebalances took partitions from this member.
    revocations: AtomicU64,
    closed: AtomicBool,
}

#[derive(Debug)]
struct Assignment {
    /// The group generation this assignment was computed for.
    generation: Option<u64>,
    readers: Vec<(TopicPartition, PartitionReader)>,
}

impl EmbeddedConsumer {
    /// Joins the group of `config` reading as `isolation`; the topics were checked to
    /// exist.
    pub(crate) fn join(shared: Arc<Shared>, config: &ConsumerConfig, isolation: Isolation) -> Self {
        let member = shared.groups.join(&config.group, config.topics.clone());
        let membership = shared.groups.watch(&config.group);
        EmbeddedConsumer {
            shared,
            group: config.group.clone(),
            topics: config.topics.clone(),
            start_from: config.start_from,
            isolation,
            member,
            membership: Mutex::new(membership),
            assignment: Mutex::new(Assignment {
                generation: None,
                readers: Vec::new(),
            }),
            revocations: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// The member of its group this consumer joined as.
    pub(crate) fn member(&self) -> MemberId {
        self.member
    }

    /// Re-reads the assignment after a rebalance: partitions this member keeps keep their
    /// position, new ones start at the committed offset or per `start_from`.
    fn refresh_assignment(&self) {
        let generation = *lock(&self.membership).borrow_and_update();
        let mut assignment = lock(&self.assignment);
        if assignment.generation == Some(generation) {
            return;
        }
        let owned = self
            .shared
            .groups
            .assignment(&self.group, self.member, |topic| {
                self.shared.partitions_of(topic)
            });
        let mut previous = std::mem::take(&mut assignment.readers);
        for topic_partition in owned {
            let kept = previous
                .iter()
                .position(|(owned, _)| *owned == topic_partition)
                .map(|at| previous.swap_remove(at));
            if let Some(kept) = kept {
                assignment.readers.push(kept);
                continue;
            }
            let Ok(partition) = self
                .shared
                .partition(&topic_partition.topic, topic_partition.partition)
            else {
                continue;
            };
            let position = self.start_position(&partition);
            assignment.readers.push((
                topic_partition,
                PartitionReader::new(partition, position, self.isolation),
            ));
        }
        if !previous.is_empty() {
            // Partitions left this member: one given back later starts at the committed
            // offset, not where this member had read to.
            self.revocations.fetch_add(1, Ordering::SeqCst);
        }
        assignment.generation = Some(generation);
    }

    fn start_position(&self, partition: &Partition) -> u64 {
        let (start, end) = (partition.start(), partition.end());
        let committed =
            self.shared
                .offsets
                .committed(&self.group, &partition.topic, partition.number);
        match committed {
            Some(offset) if offset > end => {
                tracing::warn!(
                    group = %self.group, topic = %partition.topic, partition = partition.number,
                    committed = offset, end,
                    "the committed offset is past the end of the log; starting at the end"
                );
                end
            }
            // Below the start is handled by the reader, which moves up with a warning.
            Some(offset) => offset,
            None => match self.start_from {
                StartFrom::Earliest => start,
                StartFrom::Latest => end,
            },
        }
    }

    /// Reads what is available from the assigned partitions, rotating which goes first so
    /// that a busy partition does not starve the others.
    ///
    /// Also says whether a position moved without records (past transaction markers or,
    /// reading committed, aborted records), so that `poll` can return and its caller see
    /// that it reached the end.
    fn take_available(
        &self,
        max_records: usize,
    ) -> runnel_backend::Result<(Vec<ConsumedRecord>, bool)> {
        let mut assignment = lock(&self.assignment);
        let mut out = Vec::with_capacity(max_records.min(INITIAL_CAPACITY));
        let mut failure = None;
        let mut moved = false;
        for (topic_partition, reader) in assignment.readers.iter_mut() {
            if out.len() >= max_records {
                break;
            }
            let before = reader.position();
            let read = reader.read(max_records - out.len(), &mut out);
            moved |= reader.position() != before;
            if let Err(error) = read {
                failure = Some(error.into_consume(&topic_partition.topic));
                break;
            }
        }
        if !assignment.readers.is_empty() {
            assignment.readers.rotate_left(1);
        }
        // Records already read are returned; the error comes again on the next poll.
        match failure {
            Some(error) if out.is_empty() => Err(error),
            _ => Ok((out, moved)),
        }
    }
}

#[async_trait]
impl Consumer for EmbeddedConsumer {
    async fn poll(&self, max_records: usize) -> runnel_backend::Result<Vec<ConsumedRecord>> {
        let mut appended = Vec::with_capacity(self.topics.len());
        for topic in &self.topics {
            appended.push(self.shared.topic(topic)?.appended.subscribe());
        }
        loop {
            for receiver in &mut appended {
                receiver.borrow_and_update();
            }
            self.refresh_assignment();
            let (records, moved) = self.take_available(max_records.max(1))?;
            // Moving past markers alone returns nothing, but returns: a caller waiting for
            // its position to reach the end must see that it did.
            if !records.is_empty() || moved {
                return Ok(records);
            }
            let mut membership = lock(&self.membership).clone();
            // `select_all` panics on no futures; a consumer of no topics only watches the group.
            let any_appended = async {
                if appended.is_empty() {
                    std::future::pending::<()>().await;
                }
                futures::future::select_all(appended.iter_mut().map(|r| Box::pin(r.changed())))
                    .await
                    .0
            };
            tokio::select! {
                changed = any_appended => changed.map_err(|_| runnel_backend::Error::Closed)?,
                changed = membership.changed() => changed.map_err(|_| runnel_backend::Error::Closed)?,
            }
        }
    }

    async fn commit(&self, offsets: &[CommitOffset]) -> runnel_backend::Result<()> {
        let mut entries = Vec::with_capacity(offsets.len());
        for offset in offsets {
            self.shared.partition(&offset.topic, offset.partition)?;
            entries.push((offset.topic.to_string(), offset.partition, offset.offset));
        }
        let shared = self.shared.clone();
        let group = self.group.clone();
        tokio::task::spawn_blocking(move || shared.offsets.commit(&group, &entries))
            .await
            .map_err(|_| runnel_backend::Error::Closed)?
            .map_err(|error| error.into_commit(&self.group))
    }

    async fn seek(&self, topic: &str, partition: u32, offset: u64) -> runnel_backend::Result<()> {
        self.refresh_assignment();
        let mut assignment = lock(&self.assignment);
        let owned = assignment
            .readers
            .iter_mut()
            .find(|(owned, _)| &*owned.topic == topic && owned.partition == partition);
        let Some((_, reader)) = owned else {
            return Err(runnel_backend::Error::NotAssigned {
                topic: topic.to_owned(),
                partition,
            });
        };
        let handle = self.shared.partition(topic, partition)?;
        // A fresh reader; past the end it waits at the end, below the start it moves up.
        let position = offset.min(handle.end());
        *reader = PartitionReader::new(handle, position, self.isolation);
        Ok(())
    }

    fn committable(&self, topic: &str, partition: u32, next: u64) -> u64 {
        lock(&self.assignment)
            .readers
            .iter()
            .find(|(owned, _)| &*owned.topic == topic && owned.partition == partition)
            .map_or(next, |(_, reader)| reader.committable(next))
    }

    fn revocations(&self) -> u64 {
        self.revocations.load(Ordering::SeqCst)
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        self.refresh_assignment();
        lock(&self.assignment)
            .readers
            .iter()
            .map(|(topic_partition, reader)| (topic_partition.clone(), reader.position()))
            .collect()
    }

    async fn close(&self) -> runnel_backend::Result<()> {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.shared.groups.leave(&self.group, self.member);
        }
        Ok(())
    }
}

impl Drop for EmbeddedConsumer {
    fn drop(&mut self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.shared.groups.leave(&self.group, self.member);
        }
    }
}
