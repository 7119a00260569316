//! [`TestOutput`]: what a test run produced, read back by outlet.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{ConsumedRecord, Headers, MemoryBackend};

use crate::codec::{Codec, SCHEMA_HEADER};
use crate::{Data, InstanceMetrics, Outlet};

/// The dead-letter topic of a test run.
pub(crate) const DEAD_LETTER_TOPIC: &str = "dead-letter";

/// What a [`TestRun`](super::TestRun) produced.
#[derive(Debug)]
pub struct TestOutput {
    pub(crate) backend: MemoryBackend,
    pub(crate) outlets: HashMap<String, String>,
    pub(crate) metrics: Arc<InstanceMetrics>,
    /// In timed runs: per outlet topic, each record with the processing time it appeared.
    pub(crate) observed: Option<super::timeline::Seen>,
}

/// An output record with its key, timestamp, headers and partition.
#[derive(Clone, Debug, PartialEq)]
pub struct Received<T> {
    /// The decoded value.
    pub value: T,
    /// The key, if any.
    pub key: Option<Bytes>,
    /// The event timestamp.
    pub timestamp: i64,
    /// Headers, Runnel's own included.
    pub headers: Headers,
    /// The partition it went to.
    pub partition: u32,
}

impl TestOutput {
    /// The values sent to an outlet, partition by partition, in order.
    ///
    /// # Panics
    ///
    /// If the outlet is not in the streamlet's shape or a value does not decode.
    pub fn output<T: Data>(&self, outlet: Outlet<T>) -> Vec<T> {
        self.records(outlet)
            .into_iter()
            .map(|record| record.value)
            .collect()
    }

    /// The records sent to an outlet, with keys, timestamps and headers.
    ///
    /// # Panics
    ///
    /// If the outlet is not in the streamlet's shape or a value does not decode.
    pub fn records<T: Data>(&self, outlet: Outlet<T>) -> Vec<Received<T>> {
        let topic = self.topic_of(outlet.name());
        self.backend
            .records(topic)
            .expect("outlet topics exist")
            .into_iter()
            .map(|consumed| decode(outlet, consumed))
            .collect()
    }

    /// In a timed run (one using [`TestRun::at`](super::TestRun::at)), the values sent to
    /// an outlet, each with the processing time at which it was sent, in sending order.
    ///
    /// # Panics
    ///
    /// If the run was not timed, the outlet is not in the streamlet's shape, or a value
    /// does not decode.
    pub fn timed_output<T: Data>(&self, outlet: Outlet<T>) -> Vec<(i64, T)> {
        let topic = self.topic_of(outlet.name());
        let observed = self
            .observed
            .as_ref()
            .expect("timed_output needs a timed run: schedule inputs with TestRun::at");
        observed
            .get(topic)
            .map(|records| {
                records
                    .iter()
                    .map(|(at, consumed)| (*at, decode(outlet, consumed.clone()).value))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The records sent to the dead-letter topic, with the reason and origin in headers.
    pub fn dead_letters(&self) -> Vec<ConsumedRecord> {
        self.backend
            .records(DEAD_LETTER_TOPIC)
            .expect("the dead-letter topic exists")
    }

    /// The instance's counters.
    pub fn metrics(&self) -> &InstanceMetrics {
        &self.metrics
    }

    fn topic_of(&self, outlet: &str) -> &String {
        self.outlets
            .get(outlet)
            .unwrap_or_else(|| panic!("outlet '{outlet}' is not in the streamlet's shape"))
    }
}

fn decode<T: Data>(outlet: Outlet<T>, consumed: ConsumedRecord) -> Received<T> {
    let codec = Codec::<T>::new(outlet.format());
    let writer = consumed
        .record
        .headers
        .get(SCHEMA_HEADER)
        .map(|v| v.to_vec());
    let value = codec
        .decode(&consumed.record.value, writer.as_deref())
        .unwrap_or_else(|error| panic!("output on '{}' does not decode: {error}", outlet.name()));
    Received {
        value,
        key: consumed.record.key,
        timestamp: consumed.record.timestamp,
        headers: consumed.record.headers,
        partition: consumed.partition,
    }
}
