//! [`Targets`]: what one producer knows of each topic it writes, so a send checks its
//! partition and size against facts it holds itself.
//!
//! The backend's shared caches ([`Metadata`]'s partition counts, [`TopicLimits`]) are
//! hash maps behind mutexes shared by every producer and consumer of the process; looking
//! both up for every record (and the delivered end for every delivery report) was a
//! measurable share of a relay's CPU. A producer writes few topics, so it keeps their facts
//! in a short list, found by comparing names, and stays in step with the shared caches
//! through their generation counters: when a topic is created again (its partition count
//! or limit forgotten, or a limit the broker did not say is due to be asked for again) or a
//! partition count changes, every producer looks again.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use runnel_backend::{Error, Result};

use crate::metadata::{Metadata, Written};
use crate::topic_limits::{Known, TopicLimits};

/// What one producer knows of the topics it writes.
pub(crate) struct Targets {
    metadata: Arc<Metadata>,
    limits: Arc<TopicLimits>,
    known: Mutex<Vec<Target>>,
}

/// One topic a producer writes.
struct Target {
    name: Arc<str>,
    /// Indexed by partition; as many as the topic had when last looked up.
    partitions: Vec<Arc<Written>>,
    limit: Known,
    /// The shared caches' generations when these facts were read from them.
    generations: (u64, u64),
}

/// Where a record goes, as a send needs to know it.
#[derive(Debug)]
pub(crate) struct Destination {
    /// The partition written, shared with the delivery report.
    pub(crate) written: Arc<Written>,
    /// The largest record batch the topic accepts, when the broker said.
    pub(crate) limit: Option<usize>,
}

impl Targets {
    pub(crate) fn new(metadata: Arc<Metadata>, limits: Arc<TopicLimits>) -> Self {
        Targets {
            metadata,
            limits,
            known: Mutex::default(),
        }
    }

    /// Where a record for `partition` of `topic` goes: from this producer's own facts when
    /// they are current, else from the shared caches (and the brokers behind them).
    pub(crate) async fn destination(&self, topic: &str, partition: u32) -> Result<Destination> {
        match self.cached(topic, partition) {
            Some(destination) => Ok(destination),
            None => self.look_up(topic, partition).await,
        }
    }

    fn generations(&self) -> (u64, u64) {
        (self.metadata.generation(), self.limits.generation())
    }

    fn cached(&self, topic: &str, partition: u32) -> Option<Destination> {
        let generations = self.generations();
        let known = self.lock();
        let target = known.iter().find(|target| &*target.name == topic)?;
        if target.generations != generations {
            return None;
        }
        let written = target.partitions.get(partition as usize)?;
        let limit = match target.limit {
            Known::Limit(limit) => Some(limit),
            // Unchecked until the shared cache forgets it, which changes its generation.
            Known::Unknown { .. } => None,
        };
        Some(Destination {
            written: written.clone(),
            limit,
        })
    }

    async fn look_up(&self, topic: &str, partition: u32) -> Result<Destination> {
        // Read before the facts: a change meanwhile makes the next send look again.
        let generations = self.generations();
        let (name, mut partitions) = self.metadata.partitions(topic, false).await?;
        if partition >= partitions {
            // A partition beyond the cached count may be new.
            partitions = self.metadata.partitions(topic, true).await?.1;
            if partition >= partitions {
                return Err(Error::PartitionNotFound {
                    topic: topic.to_owned(),
                    partition,
                    partitions,
                });
            }
        }
        let limit = self.limits.max_record_bytes(topic).await;
        let cells = self.metadata.written(&name, partitions);
        let destination = Destination {
            written: cells[partition as usize].clone(),
            limit: match limit {
                Known::Limit(limit) => Some(limit),
                Known::Unknown { .. } => None,
            },
        };
        let mut known = self.lock();
        known.retain(|target| &*target.name != topic);
        known.push(Target {
            name,
            partitions: cells,
            limit,
            generations,
        });
        Ok(destination)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Target>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
