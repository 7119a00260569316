//! Writing records that failed to decode to the app's dead-letter topic.
//!
//! The dead-letter record keeps the original key, value, headers and timestamp, and adds
//! headers saying what went wrong and where the record came from:
//!
//! | header | value |
//! |---|---|
//! | `runnel.dead-letter.error` | why decoding failed |
//! | `runnel.dead-letter.topic` | the topic the record was read from |
//! | `runnel.dead-letter.partition` | its partition, in decimal |
//! | `runnel.dead-letter.offset` | its offset, in decimal |
//! | `runnel.dead-letter.streamlet` | the streamlet instance that could not read it |
//! | `runnel.dead-letter.inlet` | the inlet it arrived on |

use std::sync::Arc;

use runnel_backend::{ConsumedRecord, Producer, Record};

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

/// Sends undecodable records to the dead-letter topic of one streamlet instance.
#[derive(Debug)]
pub(crate) struct DeadLetters {
    pub(crate) producer: Arc<dyn Producer>,
    pub(crate) topic: Arc<str>,
    pub(crate) instance: Arc<str>,
    pub(crate) acknowledgements: Acknowledgements,
}

impl DeadLetters {
    /// Appends `consumed` with the reason and origin in headers; the send joins the
    /// acknowledgement queue so the bad record is committed only once it is durable here.
    pub(crate) async fn send(
        &self,
        inlet: &str,
        consumed: ConsumedRecord,
        reason: &str,
    ) -> Result<(), runnel_backend::Error> {
        let mut record: Record = consumed.record;
        record.headers.push(ERROR_HEADER, reason.to_owned());
        record
            .headers
            .push(TOPIC_HEADER, consumed.topic.to_string());
        record
            .headers
            .push(PARTITION_HEADER, consumed.partition.to_string());
        record
            .headers
            .push(OFFSET_HEADER, consumed.offset.to_string());
        record
            .headers
            .push(STREAMLET_HEADER, self.instance.to_string());
        record.headers.push(INLET_HEADER, inlet.to_owned());
        let permit = self.acknowledgements.send_permit().await;
        let receipt = self.producer.send(&self.topic, 0, record).await?;
        self.acknowledgements.sent(receipt, permit);
        Ok(())
    }
}
