//! What a keyed state's changelog needs of the cluster so that it need not be compacted:
//! deleting a partition's records below an offset (`DeleteRecords`), once a snapshot has
//! superseded them, and telling whether an existing topic is compacted (a changelog an
//! earlier version created that way keeps one record per entry).

use rdkafka::admin::AdminOptions;
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{Error, Result};

use crate::KafkaBackend;

impl KafkaBackend {
    /// Deletes the records of `partition` of `topic` below `offset` (all of them for
    /// `u64::MAX`); returns the partition's first offset afterwards.
    pub(crate) async fn delete_records(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
    ) -> Result<u64> {
        let operation = || {
            format!(
                "deleting the records below offset {offset} of partition {partition} of topic '{topic}'"
            )
        };
        let below = match i64::try_from(offset) {
            Ok(offset) => Offset::Offset(offset),
            Err(_) => Offset::End,
        };
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset(topic, partition as i32, below)
            .map_err(|error| Error::Admin {
                operation: operation(),
                source: self.inner_redactor().boxed(&error),
            })?;
        let options =
            AdminOptions::new().operation_timeout(Some(self.inner_config().request_timeout));
        let result = self
            .admin()
            .delete_records(&offsets, &options)
            .await
            .map_err(|error| Error::Admin {
                operation: operation(),
                source: self.inner_redactor().boxed(&error),
            })?;
        let element = result
            .find_partition(topic, partition as i32)
            .ok_or_else(|| Error::Admin {
                operation: operation(),
                source: crate::error::message("the broker sent no result for the partition"),
            })?;
        element.error().map_err(|error| Error::Admin {
            operation: operation(),
            source: self.inner_redactor().boxed(&error),
        })?;
        match element.offset() {
            Offset::Offset(first) => Ok(u64::try_from(first).unwrap_or(0)),
            other => Err(Error::Admin {
                operation: operation(),
                source: crate::error::message(format!(
                    "the broker answered with the first offset {other:?}"
                )),
            }),
        }
    }

    /// Whether `topic`'s effective `cleanup.policy` (its own, else the broker's default)
    /// holds `compact`.
    pub(crate) async fn compacted(&self, topic: &str) -> Result<bool> {
        let operation = || format!("reading the cleanup policy of topic '{topic}'");
        let resource = match self.describe_topic(topic, operation).await? {
            Some(Ok(resource)) => resource,
            Some(Err(code)) => {
                return Err(Error::Admin {
                    operation: operation(),
                    source: crate::error::message(format!("the broker answered: {code}")),
                });
            }
            None => {
                return Err(Error::Admin {
                    operation: operation(),
                    source: crate::error::message("the broker sent no result"),
                });
            }
        };
        Ok(resource
            .get("cleanup.policy")
            .and_then(|entry| entry.value.as_deref())
            .is_some_and(|policy| policy.split(',').any(|part| part.trim() == "compact")))
    }
}
