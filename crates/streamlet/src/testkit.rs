//! [`TestRun`]: run one streamlet against in-memory inlets and outlets and read what it
//! produced.
//!
//! ```
//! use runnel_streamlet::prelude::*;
//! use runnel_streamlet::testkit::TestRun;
//!
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
//! pub struct Reading { pub celsius: f64 }
//!
//! const IN: Inlet<Reading> = Inlet::new("in");
//! const OUT: Outlet<Reading> = Outlet::new("out");
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), runnel_streamlet::testkit::TestError> {
//! let plausible = Processor::new(IN, OUT, |r: Reading| (r.celsius < 150.0).then_some(r));
//! let run = TestRun::new(plausible)
//!     .input(IN, [Reading { celsius: 21.5 }, Reading { celsius: 900.0 }])
//!     .run()
//!     .await?;
//! assert_eq!(run.output(OUT), [Reading { celsius: 21.5 }]);
//! # Ok(()) }
//! ```
//!
//! The run uses the same host as production on a [`MemoryBackend`]. It lasts until every
//! inlet has been read to the end and the streamlet returns (or, for sources that never
//! end, until [`TestRun::stop_after`]), and it fails if the streamlet failed or left an
//! input record uncommitted.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use runnel_backend::{
    Backend, ConsumedRecord, Headers, MemoryBackend, ProducerConfig, Record, TopicSpec,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::codec::{Codec, SCHEMA_HEADER};
use crate::host::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};
use crate::port::Direction;
use crate::{
    Data, DynStreamlet, ErrorKind, Inlet, InstanceMetrics, Outlet, ParameterError, Streamlet,
    resolve_parameters,
};

/// The dead-letter topic of a test run.
const DEAD_LETTER_TOPIC: &str = "dead-letter";

/// An input record with a key, an event timestamp or headers of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct TestRecord<T> {
    /// The value.
    pub value: T,
    /// The key, if any.
    pub key: Option<Bytes>,
    /// The event timestamp in milliseconds; `None` means the clock's time at `run`.
    pub timestamp: Option<i64>,
    /// Headers.
    pub headers: Headers,
}

impl<T> TestRecord<T> {
    /// A record holding `value`.
    pub fn new(value: T) -> Self {
        TestRecord {
            value,
            key: None,
            timestamp: None,
            headers: Headers::new(),
        }
    }

    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the event timestamp.
    pub fn timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(key, value);
        self
    }
}

/// Why a test run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestError {
    /// A parameter value is missing or invalid.
    #[error("invalid parameters: {}", list(.0))]
    Parameters(Vec<ParameterError>),
    /// The streamlet returned an error.
    #[error("the streamlet failed ({}): {message}", kind.label())]
    Streamlet {
        /// How the runtime would have reacted.
        kind: ErrorKind,
        /// The error with its causes.
        message: String,
    },
    /// The streamlet did not return in time.
    #[error(
        "the streamlet did not finish within {0:?}; a source that never ends needs TestRun::stop_after"
    )]
    TimedOut(Duration),
    /// An input record was never committed.
    #[error(
        "inlet '{inlet}' left input uncommitted: partition {partition} is committed up to {}, but it holds {end} records",
        committed.map_or_else(|| "nothing".to_owned(), |offset| format!("offset {offset}"))
    )]
    Uncommitted {
        /// The inlet.
        inlet: String,
        /// The partition.
        partition: u32,
        /// The committed offset, if any.
        committed: Option<u64>,
        /// The number of records in the partition.
        end: u64,
    },
    /// The in-memory backplane failed (a bug in the test kit).
    #[error("the in-memory backplane failed")]
    Backend(#[from] runnel_backend::Error),
}

fn list(errors: &[ParameterError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One streamlet, its inputs and parameters, ready to run.
#[derive(Debug)]
pub struct TestRun {
    streamlet: Box<dyn DynStreamlet>,
    instance: String,
    inputs: Vec<(&'static str, Record)>,
    parameters: BTreeMap<String, String>,
    partitions: u32,
    timeout: Duration,
    stop_after: Option<Duration>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for dyn DynStreamlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Streamlet")
    }
}

impl TestRun {
    /// A run of `streamlet` with no inputs, named `test`.
    pub fn new(streamlet: impl Streamlet) -> Self {
        TestRun {
            streamlet: Box::new(streamlet),
            instance: "test".to_owned(),
            inputs: Vec::new(),
            parameters: BTreeMap::new(),
            partitions: 1,
            timeout: Duration::from_secs(10),
            stop_after: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Feeds values to an inlet, encoded in the inlet's format.
    pub fn input<T: Data>(self, inlet: Inlet<T>, values: impl IntoIterator<Item = T>) -> Self {
        self.input_records(inlet, values.into_iter().map(TestRecord::new))
    }

    /// Feeds records with keys, timestamps or headers to an inlet.
    ///
    /// # Panics
    ///
    /// If a value cannot be encoded in the inlet's format.
    pub fn input_records<T: Data>(
        mut self,
        inlet: Inlet<T>,
        records: impl IntoIterator<Item = TestRecord<T>>,
    ) -> Self {
        let codec = Codec::<T>::new(inlet.format());
        let now = self.clock.now_millis();
        for record in records {
            let value = codec.encode(&record.value).expect("test input encodes");
            let mut headers = record.headers;
            if let Some(fingerprint) = codec.fingerprint() {
                headers.push(SCHEMA_HEADER, fingerprint.clone());
            }
            let stored = Record {
                key: record.key,
                value: Bytes::from(value),
                headers,
                timestamp: record.timestamp.unwrap_or(now),
            };
            self.inputs.push((inlet.name(), stored));
        }
        self
    }

    /// Feeds raw bytes to an inlet, for testing records that do not decode.
    pub fn raw_input<T>(
        mut self,
        inlet: Inlet<T>,
        payloads: impl IntoIterator<Item = Vec<u8>>,
    ) -> Self {
        let now = self.clock.now_millis();
        for payload in payloads {
            self.inputs
                .push((inlet.name(), Record::new(payload).with_timestamp(now)));
        }
        self
    }

    /// Sets a parameter, written as in a config file.
    pub fn parameter(mut self, key: &str, value: &str) -> Self {
        self.parameters.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Names the instance (the default is `test`).
    pub fn instance(mut self, name: &str) -> Self {
        name.clone_into(&mut self.instance);
        self
    }

    /// Gives every topic this many partitions (the default is 1); inputs go round robin.
    pub fn partitions(mut self, partitions: u32) -> Self {
        self.partitions = partitions.max(1);
        self
    }

    /// Fails the run if the streamlet has not returned after this long (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Asks the streamlet to stop after this long, as a shutdown signal would; for sources.
    pub fn stop_after(mut self, after: Duration) -> Self {
        self.stop_after = Some(after);
        self
    }

    /// Uses this clock for processing time.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Runs the streamlet to the end and collects its outputs.
    ///
    /// # Errors
    ///
    /// See [`TestError`].
    pub async fn run(self) -> Result<TestOutput, TestError> {
        let backend = MemoryBackend::new();
        let shape = self.streamlet.shape();
        let parameters = resolve_parameters(&self.instance, shape.parameters(), &self.parameters)
            .map_err(TestError::Parameters)?;

        backend
            .create_topic(&TopicSpec::new(DEAD_LETTER_TOPIC, 1))
            .await?;
        let producer = backend.producer(&ProducerConfig::default()).await?;
        let (end_of_input, ended) = watch::channel(true);
        let mut inlets = Vec::new();
        for port in shape.ports_in(Direction::Inlet) {
            let topic = format!("in.{}", port.name);
            backend
                .create_topic(&TopicSpec::new(&topic, self.partitions))
                .await?;
            let records = self.inputs.iter().filter(|(name, _)| *name == port.name);
            for (sequence, (_, record)) in records.enumerate() {
                let partition = sequence as u32 % self.partitions;
                producer
                    .send(&topic, partition, record.clone())
                    .await?
                    .await?;
            }
            inlets.push(InletWiring {
                port: port.name.to_owned(),
                group: format!("{}.{}", self.instance, port.name),
                topic,
                writer_schemas: Vec::new(),
                end_of_input: ended.clone(),
                consumer_settings: BTreeMap::new(),
            });
        }
        let mut outlets = Vec::new();
        for port in shape.ports_in(Direction::Outlet) {
            let topic = format!("out.{}", port.name);
            backend
                .create_topic(&TopicSpec::new(&topic, self.partitions))
                .await?;
            outlets.push(OutletWiring {
                port: port.name.to_owned(),
                topic,
                tag_schema: false,
            });
        }
        let groups: Vec<(String, String, String)> = inlets
            .iter()
            .map(|i| (i.port.clone(), i.group.clone(), i.topic.clone()))
            .collect();
        let wiring = Wiring {
            app: "test".to_owned(),
            instance: self.instance.clone(),
            inlets,
            outlets: outlets.clone(),
            dead_letter_topic: DEAD_LETTER_TOPIC.to_owned(),
            parameters,
            settings: HostSettings::default(),
            ready: None,
        };

        let metrics = Arc::new(InstanceMetrics::for_shape(&shape));
        let shutdown = CancellationToken::new();
        if let Some(after) = self.stop_after {
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                shutdown.cancel();
            });
        }
        let backend_handle: Arc<dyn Backend> = Arc::new(backend.clone());
        let running = run_instance(
            self.streamlet,
            backend_handle,
            wiring,
            self.clock,
            metrics.clone(),
            shutdown,
        );
        let outcome = tokio::time::timeout(self.timeout, running)
            .await
            .map_err(|_| TestError::TimedOut(self.timeout))?;
        drop(end_of_input);
        outcome.map_err(|error| TestError::Streamlet {
            kind: error.kind(),
            message: format!("{error:#}"),
        })?;

        for (inlet, group, topic) in groups {
            let committed = backend.committed(&group, &topic).await?;
            let ends = backend.offsets(&topic).await?;
            for (partition, (committed, offsets)) in committed.into_iter().zip(ends).enumerate() {
                if offsets.end > committed.unwrap_or(0) {
                    return Err(TestError::Uncommitted {
                        inlet,
                        partition: partition as u32,
                        committed,
                        end: offsets.end,
                    });
                }
            }
        }
        let outlets = outlets
            .into_iter()
            .map(|outlet| (outlet.port, outlet.topic))
            .collect();
        Ok(TestOutput {
            backend,
            outlets,
            metrics,
        })
    }
}

/// What a [`TestRun`] produced.
#[derive(Debug)]
pub struct TestOutput {
    backend: MemoryBackend,
    outlets: HashMap<String, String>,
    metrics: Arc<InstanceMetrics>,
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
        let topic = self.outlets.get(outlet.name()).unwrap_or_else(|| {
            panic!("outlet '{}' is not in the streamlet's shape", outlet.name())
        });
        let codec = Codec::<T>::new(outlet.format());
        self.backend
            .records(topic)
            .expect("outlet topics exist")
            .into_iter()
            .map(|consumed| {
                let writer = consumed
                    .record
                    .headers
                    .get(SCHEMA_HEADER)
                    .map(|v| v.to_vec());
                let value = codec
                    .decode(&consumed.record.value, writer.as_deref())
                    .unwrap_or_else(|error| {
                        panic!("output on '{}' does not decode: {error}", outlet.name())
                    });
                Received {
                    value,
                    key: consumed.record.key,
                    timestamp: consumed.record.timestamp,
                    headers: consumed.record.headers,
                    partition: consumed.partition,
                }
            })
            .collect()
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
}
