//! Writing records that cannot be processed to the app's dead-letter topic.
//!
//! The dead-letter record keeps the original key, value, headers and timestamp, and adds
//! headers saying what went wrong and where the record came from. A null value (a
//! tombstone, which no inlet codec decodes) stays null in its dead letter, and an empty
//! value stays empty, so the two can be told apart when the dead letters are read:
//!
//! | header | value |
//! |---|---|
//! | `runnel.dead-letter.error` | why the record was rejected |
//! | `runnel.dead-letter.topic` | the topic the record was read from |
//! | `runnel.dead-letter.partition` | its partition, in decimal |
//! | `runnel.dead-letter.offset` | its offset, in decimal |
//! | `runnel.dead-letter.streamlet` | the streamlet instance that rejected it |
//! | `runnel.dead-letter.inlet` | the inlet it arrived on |
//! | `runnel.dead-letter.truncated` | only on a truncated copy: the original value's size (0 for a null value, which stays null) |
//!
//! A record can be too large to dead-letter as it is: near the topic's size limit, the
//! extra headers push it over. Then a truncated copy is written instead: the same headers
//! (error, origin and `runnel.dead-letter.truncated` with the original value's size in
//! bytes), the first [`TRUNCATED_VALUE_BYTES`] bytes of the value, the key if it is at most
//! [`TRUNCATED_KEY_BYTES`] bytes (else its first bytes and `runnel.dead-letter.key-truncated`
//! with its size), and none of the original headers. The broker may also refuse the full
//! copy only when it arrives (a topic whose `max.message.bytes` is below the producer's);
//! the truncated copy is then written in its place before the input is committed.

use std::sync::Arc;

use runnel_backend::{Headers, Producer, Receipt, Record};

use crate::acknowledgement::Acknowledgements;

/// Header: why decoding failed.
pub const ERROR_HEADER: &str = "runnel.dead-letter.error";
/// Header: the topic the record was read from.
pub const TOPIC_HEADER: &str = "runnel.dead-letter.topic";
/// Header: the partition the record was read from.
pub const PARTITION_HEADER: &str = "runnel.dead-letter.partition";
/// Header: the offset the record was read from.
pub const OFFSET_HEADER: &str = "runnel.dead-letter.offset";
/// Header: the streamlet instance that could not read it.
pub const STREAMLET_HEADER: &str = "runnel.dead-letter.streamlet";
/// Header: the inlet it arrived on.
pub const INLET_HEADER: &str = "runnel.dead-letter.inlet";

/// Header on a truncated dead letter: the size of the original value in bytes.
pub const TRUNCATED_HEADER: &str = "runnel.dead-letter.truncated";
/// Header on a truncated dead letter whose key was cut too: the original key's size.
pub const KEY_TRUNCATED_HEADER: &str = "runnel.dead-letter.key-truncated";
/// How much of the value a truncated dead letter keeps.
pub const TRUNCATED_VALUE_BYTES: usize = 16 * 1024;
/// The longest key a truncated dead letter keeps whole.
pub const TRUNCATED_KEY_BYTES: usize = 1024;

/// Where a rejected record was read.
#[derive(Clone, Debug)]
pub(crate) struct Origin {
    pub(crate) inlet: &'static str,
    pub(crate) topic: Arc<str>,
    pub(crate) partition: u32,
    pub(crate) offset: u64,
}

/// Sends rejected records to the dead-letter topic of one streamlet instance.
#[derive(Debug)]
pub(crate) struct DeadLetters {
    pub(crate) producer: Arc<dyn Producer>,
    pub(crate) topic: Arc<str>,
    pub(crate) instance: Arc<str>,
    pub(crate) acknowledgements: Acknowledgements,
}

impl DeadLetters {
    /// Appends `record` with the reason and origin in headers (or, when it is too large for
    /// the topic, a truncated copy); the send joins the acknowledgement queue so the
    /// rejected record is committed only once its dead letter is durable.
    pub(crate) async fn send(
        &self,
        origin: &Origin,
        record: Record,
        reason: &str,
    ) -> Result<(), runnel_backend::Error> {
        let truncated = self.letter(origin, truncate(&record), reason);
        let full = self.letter(origin, record, reason);
        let permit = self.acknowledgements.send_permit().await;
        let receipt = match self.producer.send(&self.topic, 0, full).await {
            Ok(receipt) => receipt,
            Err(error @ runnel_backend::Error::RecordTooLarge { .. }) => {
                tracing::warn!(
                    topic = %origin.topic,
                    partition = origin.partition,
                    offset = origin.offset,
                    "writing a truncated dead letter: {error}"
                );
                self.producer
                    .send(&self.topic, 0, truncated.clone())
                    .await?
            }
            Err(error) => return Err(error),
        };
        // The broker may refuse the full copy only when it arrives; the truncated copy then
        // takes its place, before the commit behind it in the queue.
        let (producer, topic) = (self.producer.clone(), self.topic.clone());
        let receipt = Receipt::new(async move {
            match receipt.await {
                Err(error @ runnel_backend::Error::RecordTooLarge { .. }) => {
                    tracing::warn!("writing a truncated dead letter: {error}");
                    producer.send(&topic, 0, truncated).await?.await
                }
                other => other,
            }
        });
        self.acknowledgements.sent(receipt, permit);
        Ok(())
    }

    /// `record` with the dead-letter headers added.
    fn letter(&self, origin: &Origin, mut record: Record, reason: &str) -> Record {
        let headers = &mut record.headers;
        headers.push(ERROR_HEADER, reason.to_owned());
        headers.push(TOPIC_HEADER, origin.topic.to_string());
        headers.push(PARTITION_HEADER, origin.partition.to_string());
        headers.push(OFFSET_HEADER, origin.offset.to_string());
        headers.push(STREAMLET_HEADER, self.instance.to_string());
        headers.push(INLET_HEADER, origin.inlet.to_owned());
        record
    }
}

/// A copy of `record` small enough for any topic: a prefix of its value (and of a long
/// key), its timestamp, no headers but the ones saying what was cut.
fn truncate(record: &Record) -> Record {
    let mut headers = Headers::new();
    headers.push(TRUNCATED_HEADER, record.value_len().to_string());
    let key = record.key.as_ref().map(|key| {
        if key.len() > TRUNCATED_KEY_BYTES {
            headers.push(KEY_TRUNCATED_HEADER, key.len().to_string());
        }
        key.slice(..key.len().min(TRUNCATED_KEY_BYTES))
    });
    Record {
        key,
        value: record
            .value
            .as_ref()
            .map(|value| value.slice(..value.len().min(TRUNCATED_VALUE_BYTES))),
        headers,
        timestamp: record.timestamp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_copy_keeps_a_prefix_and_says_how_large_the_original_was() {
        let record = Record::new(vec![7u8; 100_000])
            .with_key(vec![1u8; 5000])
            .with_timestamp(42);
        let mut original = record.clone();
        original.headers.push("trace-id", "abc");
        let copy = truncate(&original);
        assert_eq!(copy.value_len(), TRUNCATED_VALUE_BYTES);
        assert!(!copy.is_null());
        assert_eq!(
            copy.key.as_ref().map(|key| key.len()),
            Some(TRUNCATED_KEY_BYTES)
        );
        assert_eq!(copy.headers.get_str(TRUNCATED_HEADER), Some("100000"));
        assert_eq!(copy.headers.get_str(KEY_TRUNCATED_HEADER), Some("5000"));
        assert_eq!(copy.headers.get("trace-id"), None);
        assert_eq!(copy.timestamp, 42);
    }

    #[test]
    fn a_truncated_copy_of_a_null_value_stays_null_and_of_an_empty_one_stays_empty() {
        let null = truncate(&Record::null().with_key(vec![1u8; 5000]));
        assert_eq!(null.value, None);
        assert_eq!(null.headers.get_str(TRUNCATED_HEADER), Some("0"));
        let empty = truncate(&Record::new("").with_key(vec![1u8; 5000]));
        assert_eq!(empty.value, Some(bytes::Bytes::new()));
        assert_eq!(empty.headers.get_str(TRUNCATED_HEADER), Some("0"));
    }
}
