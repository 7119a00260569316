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

    /// Where a record for `partition` of `topic` goes, when this producer's own facts are
    /// current.
    pub(crate) fn cached(&self, topic: &str, partition: u32) -> Option<Destination> {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rdkafka::admin::AdminClient;
    use rdkafka::consumer::BaseConsumer;
    use rdkafka::mocking::MockCluster;
    use rdkafka::producer::DefaultProducerContext;

    use super::*;
    use crate::KafkaConfig;
    use crate::context::LogContext;
    use crate::error::Redactor;

    /// The shared caches of a backend on `mock`, and a producer's own facts over them.
    fn targets(mock: &MockCluster<'static, DefaultProducerContext>) -> Targets {
        let config = KafkaConfig::new(mock.bootstrap_servers());
        let context = LogContext {
            redactor: Redactor::new(Arc::default()),
        };
        let metadata_client: BaseConsumer<LogContext> =
            config.admin().create_with_context(context.clone()).unwrap();
        let admin: AdminClient<LogContext> = config.admin().create_with_context(context).unwrap();
        let timeout = Duration::from_secs(5);
        let metadata = Arc::new(Metadata::new(
            metadata_client,
            Redactor::new(Arc::default()),
            timeout,
        ));
        Targets::new(
            metadata,
            Arc::new(TopicLimits::new(Arc::new(admin), timeout)),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_producer_keeps_a_topics_facts_until_a_shared_cache_forgets_them() {
        let mock = MockCluster::new(1).unwrap();
        mock.create_topic("facts", 2, 1).unwrap();
        let targets = targets(&mock);
        assert!(targets.cached("facts", 1).is_none(), "nothing known yet");
        let destination = targets.destination("facts", 1).await.unwrap();
        assert_eq!(
            (&*destination.written.topic, destination.written.partition),
            ("facts", 1)
        );
        let cached = targets.cached("facts", 1).expect("kept after the look-up");
        assert!(
            Arc::ptr_eq(&cached.written, &destination.written),
            "one delivered cell per partition"
        );
        assert!(targets.cached("facts", 2).is_none(), "beyond the count");
        match targets.destination("facts", 2).await {
            Err(Error::PartitionNotFound {
                partition,
                partitions,
                ..
            }) => assert_eq!((partition, partitions), (2, 2)),
            other => panic!("expected partition 2 not to exist, got {other:?}"),
        }

        // A topic created again: its partition count is forgotten, so is this producer's.
        targets.metadata.forget("facts");
        assert!(targets.cached("facts", 1).is_none());
        targets.destination("facts", 1).await.unwrap();
        assert!(targets.cached("facts", 1).is_some());
        // Its limit is forgotten.
        targets.limits.forget("facts");
        assert!(targets.cached("facts", 1).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_limit_is_asked_for_again_when_due_without_a_clock_read_per_send() {
        let mock = MockCluster::new(1).unwrap();
        mock.create_topic("unsaid", 1, 1).unwrap();
        let targets = targets(&mock);
        let destination = targets.destination("unsaid", 0).await.unwrap();
        // librdkafka's mock cluster does not answer DescribeConfigs.
        assert_eq!(destination.limit, None);
        assert!(targets.cached("unsaid", 0).is_some());
        tokio::time::advance(Duration::from_secs(59)).await;
        tokio::task::yield_now().await;
        assert!(targets.cached("unsaid", 0).is_some(), "not due yet");
        tokio::time::advance(Duration::from_secs(2)).await;
        tokio::task::yield_now().await;
        assert!(
            targets.cached("unsaid", 0).is_none(),
            "asked for again once due"
        );
    }
}
