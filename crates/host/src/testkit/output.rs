//! [`TestOutput`]: what a test run produced, read back by outlet.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{ConsumedRecord, Headers, MemoryBackend};

use super::TestError;
use runnel_streamlet::runtime::PortCodec as Codec;
use runnel_streamlet::window::PaneInfo;
use runnel_streamlet::{Data, InstanceMetrics, Outlet, SCHEMA_HEADER};

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

/// An output record with everything about it in one view: the value, key, event
/// timestamp, headers and partition, the pane metadata its headers carry (records of
/// windowed streamlets), and in a timed run the processing time it was sent at.
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::prelude::*;
/// use runnel_host::testkit::{TestRecord, TestRun};
/// use runnel_streamlet::window::{Pane, Sum, Timing, WindowSpec};
///
/// const IN: Inlet<i64> = Inlet::new("in");
/// const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
/// const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), runnel_host::testkit::TestError> {
/// let sums = WindowedAggregate::new(IN, OUT, MINUTE, Sum::of(|points: &i64| *points));
/// let run = TestRun::new(sums)
///     .at(5_000).input_records(IN, [TestRecord::new(3).timestamp(1_000)])
///     .at(9_000).watermark(60_000)
///     .run()
///     .await?;
/// let panes = run.timed_records(OUT)?;
/// let pane = panes[0].pane.expect("a pane record");
/// assert_eq!((panes[0].sent_at, panes[0].timestamp), (Some(9_000), 59_999));
/// assert_eq!((pane.timing, pane.index, pane.is_first, pane.is_last), (Timing::OnTime, 0, true, true));
/// assert_eq!(panes[0].headers.get_str("runnel.window.end"), Some("60000"));
/// # Ok(()) }
/// ```
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
    /// What the pane headers say (`runnel.pane.*`), for records that have them.
    pub pane: Option<PaneInfo>,
    /// In a timed run, the processing time at which it was sent; `None` otherwise.
    pub sent_at: Option<i64>,
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
        let sent_at: HashMap<(u32, u64), i64> = self
            .observed
            .as_ref()
            .and_then(|observed| observed.get(topic))
            .map(|records| {
                records
                    .iter()
                    .map(|(at, consumed)| ((consumed.partition, consumed.offset), *at))
                    .collect()
            })
            .unwrap_or_default();
        self.backend
            .records(topic)
            .expect("outlet topics exist")
            .into_iter()
            .map(|consumed| {
                let at = sent_at.get(&(consumed.partition, consumed.offset)).copied();
                decode(outlet, consumed, at)
            })
            .collect()
    }

    /// In a timed run (one using [`TestRun::at`](super::TestRun::at) or
    /// [`TestRun::watermark`](super::TestRun::watermark)), the records sent to an outlet in
    /// the order they were sent, each with the processing time it was sent at
    /// ([`Received::sent_at`]), its timestamp, headers and pane metadata.
    ///
    /// # Errors
    ///
    /// [`TestError::NotTimed`] if the run was not timed.
    ///
    /// # Panics
    ///
    /// If the outlet is not in the streamlet's shape or a value does not decode.
    pub fn timed_records<T: Data>(&self, outlet: Outlet<T>) -> Result<Vec<Received<T>>, TestError> {
        let topic = self.topic_of(outlet.name());
        let observed = self.observed.as_ref().ok_or_else(|| TestError::NotTimed {
            outlet: outlet.name().to_owned(),
        })?;
        Ok(observed
            .get(topic)
            .map(|records| {
                records
                    .iter()
                    .map(|(at, consumed)| decode(outlet, consumed.clone(), Some(*at)))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// In a timed run, the values sent to an outlet, each with the processing time at
    /// which it was sent, in sending order: [`timed_records`](Self::timed_records), values
    /// only.
    ///
    /// # Errors
    ///
    /// [`TestError::NotTimed`] if the run was not timed.
    ///
    /// # Panics
    ///
    /// If the outlet is not in the streamlet's shape or a value does not decode.
    pub fn timed_output<T: Data>(&self, outlet: Outlet<T>) -> Result<Vec<(i64, T)>, TestError> {
        Ok(self
            .timed_records(outlet)?
            .into_iter()
            .map(|record| (record.sent_at.unwrap_or_default(), record.value))
            .collect())
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

fn decode<T: Data>(
    outlet: Outlet<T>,
    consumed: ConsumedRecord,
    sent_at: Option<i64>,
) -> Received<T> {
    let codec = Codec::<T>::new(outlet.format());
    let writer = consumed
        .record
        .headers
        .get(SCHEMA_HEADER)
        .map(|v| v.to_vec());
    let value = codec
        .decode_value(consumed.record.value.as_deref(), writer.as_deref())
        .unwrap_or_else(|error| panic!("output on '{}' does not decode: {error}", outlet.name()));
    let pane = PaneInfo::from_headers(&consumed.record.headers).unwrap_or_else(|error| {
        panic!(
            "output on '{}' has bad pane headers: {error}",
            outlet.name()
        )
    });
    Received {
        value,
        key: consumed.record.key,
        timestamp: consumed.record.timestamp,
        headers: consumed.record.headers,
        partition: consumed.partition,
        pane,
        sent_at,
    }
}
