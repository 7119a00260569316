//! Running one streamlet instance against a backplane: the single code path shared by the
//! local runner, pod mode and the test kit.

use std::collections::BTreeMap;
use std::sync::Arc;

use runnel_backend::{
    Backend, Consumer, ConsumerConfig, Producer, TopicSpec, TransactionConfig,
    TransactionalProducer,
};
use runnel_blueprint::descriptor::Delivery;
use tokio_util::sync::CancellationToken;

use runnel_streamlet::checkpoint::{changelog_topic, checkpoint_topic};
use runnel_streamlet::runtime::{
    self, Acknowledgements, CheckpointSource, Gate, InletConnection, InstanceParts, InstanceSetup,
    OutletConnection,
};
use runnel_streamlet::{Clock, DynStreamlet, Error, InstanceMetrics, Result};

use crate::committer::{
    ChangelogWriter, CheckpointWriter, CommitError, CommitTarget, Committer, Mode,
};
use crate::topic_schemas;
use crate::wiring::{InletWiring, Wiring};

/// Segment size and retention of checkpoint topics: old checkpoints go, the last stays.
const CHECKPOINT_SEGMENT_BYTES: &str = "16777216";

/// How long a changelog record is kept before compaction may drop it for a newer one of its
/// key: a day.
const CHANGELOG_COMPACTION_LAG_MS: &str = "86400000";

/// Runs one instance of `streamlet` until it returns or `shutdown` fires and it drains.
///
/// Connects every port of the shape as `wiring` says, runs the streamlet, and commits input
/// offsets after their outputs are acknowledged; when the streamlet returns (successfully or
/// not) everything acknowledged is committed before this returns.
///
/// # Errors
///
/// The streamlet's own error, or an
/// [`ErrorKind::External`](runnel_streamlet::ErrorKind::External)
/// error when the backplane fails (a port's topic is missing, a send is not acknowledged, a
/// commit is refused).
pub async fn run_instance(
    streamlet: Box<dyn DynStreamlet>,
    backend: Arc<dyn Backend>,
    wiring: Wiring,
    clock: Arc<dyn Clock>,
    metrics: Arc<InstanceMetrics>,
    shutdown: CancellationToken,
) -> Result<()> {
    let shape = streamlet.shape();
    let settings = wiring.settings.clone();
    let instance: Arc<str> = Arc::from(wiring.instance.as_str());
    let transaction = match shape.delivery() {
        Delivery::ExactlyOnce => {
            let id = wiring
                .transactional_id
                .clone()
                .unwrap_or_else(|| format!("{}.{}", wiring.app, wiring.instance));
            let config = TransactionConfig {
                id,
                producer: settings.producer.clone(),
            };
            Some(
                backend
                    .transactional_producer(&config)
                    .await
                    .map_err(Error::external)?,
            )
        }
        Delivery::AtLeastOnce | Delivery::AtMostOnce => None,
    };
    let producer: Arc<dyn Producer> = match &transaction {
        Some(transaction) => transaction.clone(),
        None => backend
            .producer(&settings.producer)
            .await
            .map_err(Error::external)?,
    };
    let gate = transaction.as_ref().map(|_| Arc::new(Gate::default()));
    let (acknowledgements, events) = Acknowledgements::new(
        settings.max_unacknowledged_sends,
        settings.max_uncommitted_messages,
        gate.clone(),
    );

    // A checkpointed instance resumes from its last checkpoint: state and input offsets.
    let checkpoints_topic = checkpoint_topic(&wiring.app, &wiring.instance);
    // One split by input partition restores each partition when it is assigned one.
    let by_partition = shape.is_checkpointed_by_partition();
    // Keyed state also writes its changes to a changelog with a partition per input
    // partition; a whole state with a changelog, to its one partition.
    let changelog = shape
        .has_changelog()
        .then(|| changelog_topic(&wiring.app, &wiring.instance));
    // Whether the changelog keeps one record per entry, for its log to compact.
    let mut changelog_compacted = false;
    let restored = if shape.is_checkpointed() {
        let partitions = if by_partition {
            input_partitions(&*backend, &instance, &wiring.inlets).await?
        } else {
            1
        };
        if let Some(changelog) = &changelog {
            changelog_compacted =
                create_changelog(&*backend, &instance, changelog, partitions).await?;
        }
        if shape.has_keyed_state() {
            runtime::set_input_partitions(&metrics, partitions);
        }
        let spec = TopicSpec::new(&checkpoints_topic, partitions)
            .with_config("segment.bytes", CHECKPOINT_SEGMENT_BYTES)
            .with_config("retention.bytes", CHECKPOINT_SEGMENT_BYTES);
        let existing = create_state_topic(&*backend, &spec).await?;
        if existing != partitions {
            return Err(Error::msg(format!(
                "the checkpoint topic '{checkpoints_topic}' of streamlet '{instance}' has {existing} partition(s) where its checkpoints need {partitions}; it was written by a version of the streamlet that kept its state {}; delete the topic to start from empty state",
                if existing == 1 {
                    "whole"
                } else {
                    "split otherwise"
                }
            )));
        }
        let restored = if by_partition {
            None
        } else {
            runtime::read_last(&*backend, &checkpoints_topic, 0)
                .await
                .map_err(Error::external)?
        };
        if let Some(restored) = &restored {
            tracing::info!(
                instance = %instance,
                topic = %checkpoints_topic,
                bytes = restored.state.len(),
                "resuming from the last checkpoint"
            );
        }
        restored
    } else {
        None
    };
    let reports_readiness = shape.is_reporting_readiness();
    let mut parts = InstanceParts::new(InstanceSetup {
        instance: instance.clone(),
        shape: shape.clone(),
        backend: backend.clone(),
        producer: producer.clone(),
        dead_letter_topic: Arc::from(wiring.dead_letter_topic.as_str()),
        clock,
        metrics: metrics.clone(),
        shutdown,
        attempts: wiring.attempts.clone(),
        poll_batch: settings.poll_batch,
        acknowledgements: acknowledgements.clone(),
    });
    let mut checkpoint_offsets = Vec::new();
    let mut targets = Vec::new();
    let mut inlet_wirings = wiring.inlets;
    // In the shape's order: the committer's targets are indexed as the inlets' commits are.
    for port in shape.inlet_names() {
        let position = inlet_wirings.iter().position(|inlet| inlet.port == port);
        let Some(position) = position else {
            return Err(not_connected(&instance, "inlet", port));
        };
        let inlet = inlet_wirings.swap_remove(position);
        let mut config = ConsumerConfig::new(inlet.group.clone(), [inlet.topic.clone()]);
        config.settings = inlet.consumer_settings;
        config.static_member = wiring.static_member.clone();
        let consumer = consumer(&*backend, transaction.as_deref(), &config).await?;
        let topic: Arc<str> = Arc::from(inlet.topic.as_str());
        let mut resume = BTreeMap::new();
        let saved = restored.iter().flat_map(|restored| &restored.offsets);
        for saved in saved.filter(|saved| saved.inlet == port && saved.topic == inlet.topic) {
            // The consumer group's offsets are written only after the checkpoint, so they
            // are never past it; the inlet skips what the checkpoint already reflects. The
            // seek saves reading that again where the partition is assigned already (after
            // a crash the old member may still hold it for a while).
            if let Err(error) = consumer
                .seek(&saved.topic, saved.partition, saved.offset)
                .await
            {
                tracing::debug!(%error, partition = saved.partition, "not seeking to the checkpoint");
            }
            resume.insert(saved.partition, saved.offset);
        }
        checkpoint_offsets.push(resume.clone());
        targets.push(CommitTarget {
            inlet: port,
            consumer: consumer.clone(),
            topic: topic.clone(),
            group: inlet.group,
        });
        let kept = topic_schemas::kept(&*backend, &inlet.topic).await?;
        let mut writer_schemas = inlet.writer_schemas;
        writer_schemas.extend(kept.writers);
        parts.connect_inlet(InletConnection {
            port,
            topic,
            consumer,
            writer_schemas,
            base_schema: kept.base,
            registry_schemas: kept.registry,
            end_of_input: inlet.end_of_input,
            resume,
        });
    }

    for port in shape.outlet_names() {
        let Some(outlet) = wiring.outlets.iter().find(|outlet| outlet.port == port) else {
            return Err(not_connected(&instance, "outlet", port));
        };
        let info = backend
            .topic(&outlet.topic)
            .await
            .map_err(Error::external)?;
        let Some(info) = info else {
            return Err(Error::external(runnel_backend::Error::TopicNotFound {
                topic: outlet.topic.clone(),
            }));
        };
        let naming = topic_schemas::register_outlet(
            &*backend,
            &outlet.topic,
            shape.outlet_schema(port),
            outlet.tag_schema,
        )
        .await?;
        parts.connect_outlet(OutletConnection {
            port,
            topic: Arc::from(outlet.topic.as_str()),
            partitions: info.partitions,
            tag_schema: naming.tag,
            registry_id: naming.registry_id,
        });
    }

    let writer = shape.is_checkpointed().then(|| CheckpointWriter {
        producer: producer.clone(),
        topic: Arc::from(checkpoints_topic.as_str()),
        instance: instance.clone(),
        offsets: checkpoint_offsets,
        changelog: changelog.as_ref().map(|topic| {
            let mut writer = ChangelogWriter::new(
                backend.clone(),
                Arc::from(topic.as_str()),
                changelog_compacted,
            );
            if let Some(restored) = restored.as_ref().filter(|_| !by_partition) {
                // A whole state's records, in the changelog's one partition.
                writer.restored(0, restored.changelog.clone());
            }
            writer
        }),
    });
    let source = CheckpointSource {
        backend: backend.clone(),
        topic: checkpoints_topic.clone(),
        changelog,
    };
    let checkpoints = shape
        .is_checkpointed()
        .then(|| parts.checkpoints(restored, source));
    let mode = match (transaction, gate) {
        (Some(producer), Some(gate)) => Mode::ExactlyOnce {
            producer,
            gate,
            sending: acknowledgements
                .sending()
                .expect("exactly-once acknowledgements have a sending gate"),
            messages: acknowledgements.messages(),
            max_messages: settings.max_uncommitted_messages.max(1),
        },
        _ if shape.delivery() == Delivery::AtMostOnce => Mode::AtMostOnce,
        _ => Mode::AtLeastOnce,
    };
    let committer = Committer::new(
        targets,
        settings.commit_interval,
        metrics.clone(),
        writer,
        mode,
    );
    let mut committing = tokio::spawn(committer.run(events));
    // A streamlet that does not report readiness is ready once its ports are connected.
    let (readiness, ready_now) = if reports_readiness {
        (wiring.ready, None)
    } else {
        (None, wiring.ready)
    };
    let ctx = parts.into_context(wiring.parameters, wiring.watermarks, checkpoints, readiness);
    if let Some(ready) = ready_now {
        let _ = ready.send(());
    }
    let running = streamlet.run_boxed(ctx);
    tokio::pin!(running);
    let outcome = tokio::select! {
        outcome = &mut running => outcome,
        committed = &mut committing => {
            // The committer only stops early on a failure; the streamlet cannot go on.
            return Err(match committed {
                Ok(Err(error)) => committer_failed(error),
                Ok(Ok(())) => Error::msg("the committer stopped before the streamlet"),
                Err(join) => Error::msg(format!("the committer panicked: {join}")),
            });
        }
    };
    acknowledgements.finish(outcome.is_ok());
    drop(acknowledgements);
    let committed = match committing.await {
        Ok(result) => result.map_err(committer_failed),
        Err(join) => Err(Error::msg(format!("the committer panicked: {join}"))),
    };
    let flushed = producer.flush().await.map_err(Error::external);
    outcome.and(committed).and(flushed)
}

/// Creates the changelog topic of an instance with keyed state, or checks that the existing
/// one has a partition per input partition; returns whether it is compacted.
///
/// A new changelog is compacted only where the backend compacts but cannot delete records:
/// where it can, records of many entries cost the producer and the log once per part rather
/// than once per entry, and the checkpoints delete what a snapshot superseded. An existing
/// one stays as it was created.
async fn create_changelog(
    backend: &dyn Backend,
    instance: &str,
    topic: &str,
    partitions: u32,
) -> Result<bool> {
    if let Some(existing) = backend.topic(topic).await.map_err(Error::external)? {
        check_changelog_partitions(instance, topic, existing.partitions, partitions)?;
        // Where its settings cannot be read (a cluster that does not let this principal
        // describe them), a record per entry is right either way: a compacted topic needs
        // its keys, and one that is not takes them too.
        return Ok(match backend.topic_compacted(topic).await {
            Ok(compacted) => compacted,
            Err(error) => {
                tracing::warn!(
                    topic,
                    error = %error,
                    "cannot tell whether the changelog is compacted; writing a record per entry and deleting none"
                );
                true
            }
        });
    }
    let compacted = backend.supports_compaction() && !backend.deletes_records();
    let mut spec = TopicSpec::new(topic, partitions);
    if compacted {
        // At least once, an owner that crashed mid-checkpoint leaves records outside the
        // state, which the partition's next restore overwrites; until then the record they
        // superseded must not be compacted away.
        spec = spec
            .with_config("cleanup.policy", "compact")
            .with_config("min.compaction.lag.ms", CHANGELOG_COMPACTION_LAG_MS);
    } else {
        // Nothing may go by age or size: a key written once stays in the state however old
        // its record. The records a snapshot supersedes are deleted by the checkpoints.
        spec = spec
            .with_config("retention.ms", "-1")
            .with_config("retention.bytes", "-1");
    }
    let existing = create_state_topic(backend, &spec).await?;
    check_changelog_partitions(instance, topic, existing, partitions)?;
    // A member that created it first decided the same way.
    Ok(compacted)
}

/// Refuses a changelog of `existing` partitions for a state of `partitions`.
fn check_changelog_partitions(
    instance: &str,
    topic: &str,
    existing: u32,
    partitions: u32,
) -> Result<()> {
    if existing != partitions {
        return Err(Error::msg(format!(
            "the changelog topic '{topic}' of streamlet '{instance}' has {existing} partition(s) where its state needs {partitions} (one per input partition for a state split by partition, one for a whole state); delete the changelog and checkpoint topics to start from empty state"
        )));
    }
    Ok(())
}

/// Creates a checkpoint or changelog topic as `spec` says, unless it exists; returns the
/// partition count it has (an existing one's may differ from the spec's).
async fn create_state_topic(backend: &dyn Backend, spec: &TopicSpec) -> Result<u32> {
    backend.create_topic(spec).await.map_err(Error::external)?;
    let existing = backend.topic(&spec.name).await.map_err(Error::external)?;
    Ok(existing.map_or(spec.partitions, |topic| topic.partitions))
}

/// The partition count of the inlets of an instance checkpointed by partition, which must
/// be the same for all of them.
async fn input_partitions(
    backend: &dyn Backend,
    instance: &str,
    inlets: &[InletWiring],
) -> Result<u32> {
    let mut counts = Vec::with_capacity(inlets.len());
    for inlet in inlets {
        let info = backend.topic(&inlet.topic).await.map_err(Error::external)?;
        let Some(info) = info else {
            return Err(Error::external(runnel_backend::Error::TopicNotFound {
                topic: inlet.topic.clone(),
            }));
        };
        counts.push((inlet.topic.as_str(), info.partitions));
    }
    match counts.first() {
        None => Ok(1),
        Some(&(_, first)) if counts.iter().all(|&(_, count)| count == first) => Ok(first),
        Some(_) => {
            let listed: Vec<String> = counts
                .iter()
                .map(|(topic, count)| format!("'{topic}' has {count}"))
                .collect();
            Err(Error::msg(format!(
                "streamlet '{instance}' keeps its state by input partition, so its inlets' topics must have the same number of partitions, but {}",
                listed.join(", ")
            )))
        }
    }
}

/// An inlet's consumer: made by the transactional producer in exactly-once mode, so its
/// offsets commit with the transactions.
async fn consumer(
    backend: &dyn Backend,
    transaction: Option<&dyn TransactionalProducer>,
    config: &ConsumerConfig,
) -> Result<Arc<dyn Consumer>> {
    match transaction {
        Some(transaction) => transaction.consumer(config).await,
        None => backend.consumer(config).await,
    }
    .map_err(Error::external)
}

/// A committer's failure as the instance's error: the backplane's fault, unless the
/// streamlet broke the exactly-once contract (then restarting it cannot help).
fn committer_failed(error: CommitError) -> Error {
    match error {
        CommitError::HeldAtCheckpoint { .. } => Error::msg(error.to_string()),
        other => Error::external(other),
    }
}

fn not_connected(instance: &str, kind: &str, port: &str) -> Error {
    Error::msg(format!(
        "{kind} '{port}' of streamlet '{instance}' is not connected to a topic"
    ))
}
