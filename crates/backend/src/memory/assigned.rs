//! The [`PartitionReader`] of [`MemoryBackend`]: positions in the partitions it was made
//! for, no group.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{MemoryBackend, State, lock};
use crate::{ConsumedRecord, Error, PartitionReader, ReaderConfig, Result, TopicPartition};

/// Reads chosen partitions of a [`MemoryBackend`] from chosen offsets.
#[derive(Debug)]
pub(super) struct AssignedReader {
    state: Arc<State>,
    /// The partitions, with the offset of the next record to return; rotated after every
    /// poll so that a busy partition does not starve the others.
    positions: Mutex<Vec<(TopicPartition, u64)>>,
}

impl AssignedReader {
    /// A reader of the partitions of `config`, which must exist; starts past a partition's
    /// end wait at the end (nothing is ever deleted here, so no start is below the first
    /// record).
    pub(super) fn new(backend: &MemoryBackend, config: &ReaderConfig) -> Result<Self> {
        let mut positions = Vec::with_capacity(config.starts.len());
        for (tp, from) in &config.starts {
            let (topic, partition) = backend.state.partition(&tp.topic, tp.partition)?;
            let end = lock(&topic.partitions[partition]).len() as u64;
            positions.push((
                TopicPartition::new(topic.name.clone(), tp.partition),
                (*from).min(end),
            ));
        }
        Ok(AssignedReader {
            state: backend.state.clone(),
            positions: Mutex::new(positions),
        })
    }

    fn take_available(&self, max_records: usize) -> Vec<ConsumedRecord> {
        let mut positions = lock(&self.positions);
        let mut out = Vec::new();
        for (tp, position) in positions.iter_mut() {
            let Ok(topic) = self.state.topic(&tp.topic) else {
                continue;
            };
            let Some(records) = topic.partitions.get(tp.partition as usize) else {
                continue;
            };
            let records = lock(records);
            while out.len() < max_records && (*position as usize) < records.len() {
                out.push(ConsumedRecord {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    offset: *position,
                    record: records[*position as usize].clone(),
                });
                *position += 1;
            }
        }
        if !positions.is_empty() {
            positions.rotate_left(1);
        }
        out
    }
}

#[async_trait]
impl PartitionReader for AssignedReader {
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>> {
        let mut appended = self.state.appended.subscribe();
        loop {
            appended.borrow_and_update();
            let records = self.take_available(max_records.max(1));
            if !records.is_empty() {
                return Ok(records);
            }
            appended.changed().await.map_err(|_| Error::Closed)?;
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        let mut positions = lock(&self.positions).clone();
        positions.sort_by(|a, b| (&a.0.topic, a.0.partition).cmp(&(&b.0.topic, b.0.partition)));
        positions
    }
}
