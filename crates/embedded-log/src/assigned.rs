//! The embedded log's [`runnel_backend::PartitionReader`]: one [`PartitionReader`] per
//! partition the caller chose, no group.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runnel_backend::{ConsumedRecord, ReaderConfig, TopicPartition};
use tokio::sync::watch;

use crate::partition::lock;
use crate::reader::PartitionReader;
use crate::shared::Shared;

/// How many records a poll makes room for up front.
const INITIAL_CAPACITY: usize = 4096;

/// Reads chosen partitions of an [`EmbeddedBackend`](crate::EmbeddedBackend) from chosen
/// offsets.
#[derive(Debug)]
pub(crate) struct AssignedReader {
    /// One reader per partition; rotated after every poll so that a busy partition does not
    /// starve the others.
    readers: Mutex<Vec<(TopicPartition, PartitionReader)>>,
    /// Bumped when records of each topic read become visible.
    appended: Vec<Arc<watch::Sender<u64>>>,
}

impl AssignedReader {
    /// Readers of the partitions of `config`, each starting at its offset moved into the
    /// partition's bounds.
    pub(crate) fn new(shared: &Shared, config: &ReaderConfig) -> runnel_backend::Result<Self> {
        let mut readers = Vec::with_capacity(config.starts.len());
        let mut appended = Vec::new();
        for (tp, from) in &config.starts {
            let partition = shared.partition(&tp.topic, tp.partition)?;
            let topic = shared.topic(&tp.topic)?;
            if !appended
                .iter()
                .any(|known| Arc::ptr_eq(known, &topic.appended))
            {
                appended.push(topic.appended.clone());
            }
            let position = (*from).clamp(partition.start(), partition.end());
            let name = TopicPartition::new(partition.topic.clone(), tp.partition);
            readers.push((
                name,
                PartitionReader::new(partition, position, config.isolation),
            ));
        }
        Ok(AssignedReader {
            readers: Mutex::new(readers),
            appended,
        })
    }

    /// What is available, and whether a position moved (past markers or aborted records,
    /// which returns nothing but must return).
    fn take_available(
        &self,
        max_records: usize,
    ) -> runnel_backend::Result<(Vec<ConsumedRecord>, bool)> {
        let mut readers = lock(&self.readers);
        let mut out = Vec::with_capacity(max_records.min(INITIAL_CAPACITY));
        let mut failure = None;
        let mut moved = false;
        for (tp, reader) in readers.iter_mut() {
            if out.len() >= max_records {
                break;
            }
            let before = reader.position();
            let read = reader.read(max_records - out.len(), &mut out);
            moved |= reader.position() != before;
            if let Err(error) = read {
                failure = Some(error.into_consume(&tp.topic));
                break;
            }
        }
        if !readers.is_empty() {
            readers.rotate_left(1);
        }
        // Records already read are returned; the error comes again on the next poll.
        match failure {
            Some(error) if out.is_empty() => Err(error),
            _ => Ok((out, moved)),
        }
    }
}

#[async_trait]
impl runnel_backend::PartitionReader for AssignedReader {
    async fn poll(&self, max_records: usize) -> runnel_backend::Result<Vec<ConsumedRecord>> {
        let mut appended: Vec<_> = self.appended.iter().map(|a| a.subscribe()).collect();
        loop {
            for receiver in &mut appended {
                receiver.borrow_and_update();
            }
            let (records, moved) = self.take_available(max_records.max(1))?;
            if !records.is_empty() || moved {
                return Ok(records);
            }
            if appended.is_empty() {
                // Reading no partitions: nothing ever arrives.
                std::future::pending::<()>().await;
            }
            futures::future::select_all(appended.iter_mut().map(|r| Box::pin(r.changed())))
                .await
                .0
                .map_err(|_| runnel_backend::Error::Closed)?;
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        let mut positions: Vec<_> = lock(&self.readers)
            .iter()
            .map(|(tp, reader)| (tp.clone(), reader.position()))
            .collect();
        positions.sort_by(|a, b| (&a.0.topic, a.0.partition).cmp(&(&b.0.topic, b.0.partition)));
        positions
    }
}
