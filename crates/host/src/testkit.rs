//! [`TestRun`]: run one streamlet against in-memory inlets and outlets and read what it
//! produced.
//!
//! ```
//! use runnel_streamlet::prelude::*;
//! use runnel_host::testkit::TestRun;
//!
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
//! pub struct Reading { pub celsius: f64 }
//!
//! const IN: Inlet<Reading> = Inlet::new("in");
//! const OUT: Outlet<Reading> = Outlet::new("out");
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), runnel_host::testkit::TestError> {
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
//!
//! # Controlling time
//!
//! A **timed run** schedules inputs at processing times with [`TestRun::at`], moves the
//! watermark with [`TestRun::watermark`], and reads outputs with the processing time they
//! were sent at ([`TestOutput::timed_records`], with timestamps, headers and pane metadata;
//! [`TestOutput::timed_output`], values only). Processing time is then a [`ManualClock`]
//! moved step by step, and the run happens on a paused tokio clock in a thread of its own,
//! so timers fire exactly when due and nothing depends on the machine's speed: no real
//! sleeps, the same result every time.
//!
//! ```
//! use std::time::Duration;
//! use runnel_streamlet::prelude::*;
//! use runnel_host::testkit::{TestRecord, TestRun};
//! use runnel_streamlet::window::{Pane, Sum, Timing, WindowSpec};
//!
//! const IN: Inlet<i64> = Inlet::new("in");
//! const OUT: Outlet<Pane<String, i64>> = Outlet::new("out");
//! const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), runnel_host::testkit::TestError> {
//! let sums = WindowedAggregate::new(IN, OUT, MINUTE, Sum::of(|points: &i64| *points));
//! let run = TestRun::new(sums)
//!     .at(10_000).input_records(IN, [TestRecord::new(5).timestamp(1_000)])
//!     .at(20_000).input_records(IN, [TestRecord::new(7).timestamp(2_000)])
//!     .at(30_000).watermark(60_000) // the window [0, 60 s) is complete
//!     .run()
//!     .await?;
//! let fired = run.timed_output(OUT)?;
//! assert_eq!(fired.len(), 1);
//! assert_eq!((fired[0].0, fired[0].1.value, fired[0].1.timing), (30_000, 12, Timing::OnTime));
//! # Ok(()) }
//! ```

mod manual_clock;
mod output;
mod timeline;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use runnel_backend::{
    Backend, Headers, MemoryBackend, Producer, ProducerConfig, Record, TopicSpec,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use runnel_streamlet::runtime::PortCodec as Codec;
use runnel_streamlet::watermark::ScriptedWatermarks;
use runnel_streamlet::{
    Clock, Data, DynStreamlet, ErrorKind, Inlet, InstanceMetrics, ParameterError, SCHEMA_HEADER,
    Streamlet, SystemClock, resolve_parameters,
};

use crate::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};

pub use manual_clock::ManualClock;
pub use output::{Received, TestOutput};

use output::DEAD_LETTER_TOPIC;
use timeline::{Action, Observers, Scheduled, advance, settle};

/// An input record with a key, an event timestamp or headers of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct TestRecord<T> {
    /// The value.
    pub value: T,
    /// The key, if any.
    pub key: Option<Bytes>,
    /// The event timestamp in milliseconds; `None` means the processing time it is fed at.
    pub timestamp: Option<i64>,
    /// Headers.
    pub headers: Headers,
    /// The partition to append it to; `None` goes round robin.
    pub partition: Option<u32>,
}

impl<T> TestRecord<T> {
    /// A record holding `value`.
    pub fn new(value: T) -> Self {
        TestRecord {
            value,
            key: None,
            timestamp: None,
            headers: Headers::new(),
            partition: None,
        }
    }

    /// Appends it to this partition of the inlet's topic (taken modulo the partition
    /// count) instead of round robin.
    pub fn partition(mut self, partition: u32) -> Self {
        self.partition = Some(partition);
        self
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
    /// A view with processing times was asked of a run without them.
    #[error(
        "outlet '{outlet}': outputs have processing times only in a timed run; schedule inputs with TestRun::at or set watermarks with TestRun::watermark"
    )]
    NotTimed {
        /// The outlet asked for.
        outlet: String,
    },
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
    inputs: Vec<Scheduled>,
    parameters: BTreeMap<String, String>,
    partitions: u32,
    timeout: Duration,
    stop_after: Option<Duration>,
    clock: Arc<dyn Clock>,
    /// The processing time of the inputs and watermarks given next (timed runs).
    cursor: Option<i64>,
    /// Whether the test sets the watermarks.
    scripted: bool,
    /// The largest record the outlets' and the dead-letter topics accept.
    max_record_bytes: Option<usize>,
    /// Per inlet, the schemas of the types fed to it: the writer schemas its records name,
    /// as a topic's producers' are in a run, so an inlet of an evolved type resolves them.
    writer_schemas: BTreeMap<&'static str, Vec<serde_json::Value>>,
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
            cursor: None,
            scripted: false,
            max_record_bytes: None,
            writer_schemas: BTreeMap::new(),
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
        if inlet.format() == runnel_blueprint::descriptor::Format::Avro {
            let definition = runnel_codec::schema_descriptor::<T>(inlet.format()).definition;
            let known = self.writer_schemas.entry(inlet.name()).or_default();
            if !known.contains(&definition) {
                known.push(definition);
            }
        }
        for record in records {
            let value = codec.encode(&record.value).expect("test input encodes");
            let mut headers = record.headers;
            if let Some(fingerprint) = codec.fingerprint() {
                headers.push(SCHEMA_HEADER, fingerprint.clone());
            }
            let stored = Record {
                key: record.key,
                value: Some(Bytes::from(value)),
                headers,
                timestamp: record.timestamp.unwrap_or_default(),
            };
            self.schedule(Action::Record {
                inlet: inlet.name(),
                record: stored,
                stamped: record.timestamp.is_some(),
                partition: record.partition,
            });
        }
        self
    }

    /// Feeds records as the backplane stores them to an inlet: raw values (a null one, a
    /// tombstone, included), keys, headers and timestamps (kept as given, 0 included), for
    /// testing records that do not decode.
    ///
    /// ```
    /// use runnel_streamlet::prelude::*;
    /// use runnel_host::testkit::TestRun;
    ///
    /// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    /// pub struct Reading { pub celsius: f64 }
    ///
    /// const IN: Inlet<Reading> = Inlet::new("in");
    /// const OUT: Outlet<Reading> = Outlet::new("out");
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), runnel_host::testkit::TestError> {
    /// let tombstone = runnel_backend::Record::null().with_key("sensor-1");
    /// let run = TestRun::new(Processor::new(IN, OUT, Some))
    ///     .raw_records(IN, [tombstone])
    ///     .run()
    ///     .await?;
    /// assert_eq!(run.dead_letters()[0].record.value, None, "still null, not empty");
    /// # Ok(()) }
    /// ```
    pub fn raw_records<T>(
        mut self,
        inlet: Inlet<T>,
        records: impl IntoIterator<Item = Record>,
    ) -> Self {
        for record in records {
            self.schedule(Action::Record {
                inlet: inlet.name(),
                record,
                stamped: true,
                partition: None,
            });
        }
        self
    }

    /// Feeds raw bytes to an inlet, for testing records that do not decode.
    pub fn raw_input<T>(
        mut self,
        inlet: Inlet<T>,
        payloads: impl IntoIterator<Item = Vec<u8>>,
    ) -> Self {
        for payload in payloads {
            self.schedule(Action::Record {
                inlet: inlet.name(),
                record: Record::new(payload),
                stamped: false,
                partition: None,
            });
        }
        self
    }

    /// Makes the run timed and sets the processing time of the inputs and watermarks given
    /// next. The run's processing time starts at the first `at`; between steps it moves to
    /// every deadline the streamlet waits for, so processing-time timers fire at their own
    /// time. A last `at` with nothing after it moves processing time there before the
    /// input ends.
    ///
    /// # Panics
    ///
    /// If `processing_time` is before the previous `at`.
    pub fn at(mut self, processing_time: i64) -> Self {
        if let Some(previous) = self.cursor {
            assert!(
                processing_time >= previous,
                "TestRun::at({processing_time}) goes back in processing time from {previous}"
            );
        }
        self.cursor = Some(processing_time);
        self
    }

    /// Sets the streamlet's watermark to `watermark` at the current [`at`](Self::at), in
    /// place of the watermarks it would generate itself (see
    /// [`ScriptedWatermarks`]). The end of the input still moves it to the end of time.
    pub fn watermark(mut self, watermark: i64) -> Self {
        self.scripted = true;
        self.schedule(Action::Watermark(watermark));
        self
    }

    /// The test sets the watermarks (with [`watermark`](Self::watermark)), even if it never
    /// does: with none, nothing moves the watermark before the end of the input, as in a
    /// batch job.
    pub fn scripted_watermarks(mut self) -> Self {
        self.scripted = true;
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

    /// Fails the run if the streamlet has not returned this long after its input ended
    /// (default 10 s; in a timed run, processing time on the paused clock).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Makes the outlets' topics and the dead-letter topic refuse records larger than
    /// `bytes` (key, value and headers), as a Kafka topic's `max.message.bytes` does; for
    /// testing what happens to oversized outputs and dead letters.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = Some(bytes);
        self
    }

    /// Asks the streamlet to stop after this long, as a shutdown signal would; for sources.
    pub fn stop_after(mut self, after: Duration) -> Self {
        self.stop_after = Some(after);
        self
    }

    /// Uses this clock for processing time (untimed runs; a timed run uses a
    /// [`ManualClock`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn schedule(&mut self, action: Action) {
        self.inputs.push(Scheduled {
            at: self.cursor,
            action,
        });
    }

    fn is_timed(&self) -> bool {
        self.scripted || self.cursor.is_some()
    }

    /// Runs the streamlet to the end and collects its outputs.
    ///
    /// # Errors
    ///
    /// See [`TestError`].
    ///
    /// # Panics
    ///
    /// If the streamlet panics.
    pub async fn run(self) -> Result<TestOutput, TestError> {
        if !self.is_timed() {
            return self.execute().await;
        }
        // A timed run owns a paused clock, which needs a current-thread runtime of its own;
        // it logs where the caller does (a test's scoped subscriber too).
        let (done, result) = tokio::sync::oneshot::channel();
        let logging = tracing::dispatcher::get_default(Clone::clone);
        let thread = std::thread::Builder::new()
            .name("runnel-timed-test".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .expect("a current-thread runtime builds");
                let _logging = tracing::dispatcher::set_default(&logging);
                let _ = done.send(runtime.block_on(self.execute()));
            })
            .expect("the test kit can start a thread");
        match result.await {
            Ok(result) => result,
            Err(_) => match thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the timed run thread always reports"),
            },
        }
    }

    async fn execute(self) -> Result<TestOutput, TestError> {
        let timed = self.is_timed();
        let backend = MemoryBackend::new();
        let shape = self.streamlet.shape();
        let parameters = resolve_parameters(&self.instance, shape.parameters(), &self.parameters)
            .map_err(TestError::Parameters)?;
        let start = self.inputs.iter().find_map(|input| input.at).unwrap_or(0);
        let manual = Arc::new(ManualClock::new(start));
        let clock: Arc<dyn Clock> = if timed {
            manual.clone()
        } else {
            self.clock.clone()
        };

        let limited = |spec: TopicSpec| match self.max_record_bytes {
            Some(bytes) => spec.with_config("max.message.bytes", bytes.to_string()),
            None => spec,
        };
        backend
            .create_topic(&limited(TopicSpec::new(DEAD_LETTER_TOPIC, 1)))
            .await?;
        let producer = backend.producer(&ProducerConfig::default()).await?;
        let (end_of_input, ended) = watch::channel(!timed);
        let mut inlets = Vec::new();
        let mut feeds = BTreeMap::new();
        for port in shape.inlet_names() {
            let topic = format!("in.{}", port);
            backend
                .create_topic(&TopicSpec::new(&topic, self.partitions))
                .await?;
            feeds.insert(
                port,
                Feed {
                    topic: topic.clone(),
                    sent: 0,
                },
            );
            inlets.push(InletWiring {
                port: port.to_owned(),
                group: format!("{}.{}", self.instance, port),
                topic,
                writer_schemas: self.writer_schemas.get(port).cloned().unwrap_or_default(),
                end_of_input: ended.clone(),
                consumer_settings: BTreeMap::new(),
            });
        }
        let (set_watermark, scripted) = ScriptedWatermarks::channel();
        let (now, partitions) = (clock.now_millis(), self.partitions);
        let mut later = Vec::new();
        for input in self.inputs {
            match (input.at, input.action) {
                (
                    None,
                    Action::Record {
                        inlet,
                        record,
                        stamped,
                        partition,
                    },
                ) => {
                    let to = Target {
                        inlet,
                        partition,
                        partitions,
                    };
                    feed(&*producer, &mut feeds, to, record, stamped, now).await?;
                }
                (None, Action::Watermark(watermark)) => {
                    set_watermark.send_replace(Some(watermark));
                }
                (Some(at), action) => later.push((at, action)),
            }
        }
        let mut outlets = Vec::new();
        for port in shape.outlet_names() {
            let topic = format!("out.{}", port);
            backend
                .create_topic(&limited(TopicSpec::new(&topic, self.partitions)))
                .await?;
            outlets.push(OutletWiring {
                port: port.to_owned(),
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
            watermarks: self.scripted.then_some(scripted),
            transactional_id: None,
            static_member: None,
            attempts: Default::default(),
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
            clock,
            metrics.clone(),
            shutdown,
        );
        let mut observed = None;
        let outcome = if timed {
            let topics: Vec<String> = outlets.iter().map(|o| o.topic.clone()).collect();
            let observers = Observers::start(&backend, &topics, manual.clone()).await?;
            let running = tokio::spawn(running);
            settle().await;
            for (at, action) in later {
                advance(&manual, at).await;
                match action {
                    Action::Record {
                        inlet,
                        record,
                        stamped,
                        partition,
                    } => {
                        let to = Target {
                            inlet,
                            partition,
                            partitions,
                        };
                        feed(&*producer, &mut feeds, to, record, stamped, at).await?;
                    }
                    Action::Watermark(watermark) => {
                        set_watermark.send_replace(Some(watermark));
                    }
                }
                settle().await;
            }
            if let Some(end) = self.cursor {
                advance(&manual, end).await;
            }
            end_of_input.send_replace(true);
            let outcome = tokio::time::timeout(self.timeout, running)
                .await
                .map_err(|_| TestError::TimedOut(self.timeout))?;
            observed = Some(observers.finish().await);
            match outcome {
                Ok(outcome) => outcome,
                Err(join) => std::panic::resume_unwind(join.into_panic()),
            }
        } else {
            let outcome = tokio::time::timeout(self.timeout, running)
                .await
                .map_err(|_| TestError::TimedOut(self.timeout))?;
            drop(end_of_input);
            outcome
        };
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
            observed,
        })
    }
}

/// Where an inlet's inputs go, and how many went so far (for round robin).
#[derive(Debug)]
struct Feed {
    topic: String,
    sent: u32,
}

/// Where one input record goes.
#[derive(Clone, Copy, Debug)]
struct Target {
    inlet: &'static str,
    /// A partition of its own, or round robin.
    partition: Option<u32>,
    partitions: u32,
}

/// Appends one input record to its inlet's topic, stamped with `now` unless it has its
/// own timestamp.
async fn feed(
    producer: &dyn Producer,
    feeds: &mut BTreeMap<&'static str, Feed>,
    to: Target,
    mut record: Record,
    stamped: bool,
    now: i64,
) -> Result<(), TestError> {
    let Some(feed) = feeds.get_mut(to.inlet) else {
        panic!(
            "the test feeds inlet '{}', which is not in the streamlet's shape",
            to.inlet
        );
    };
    if !stamped {
        record.timestamp = now;
    }
    let partition = to.partition.unwrap_or(feed.sent) % to.partitions;
    feed.sent += 1;
    producer.send(&feed.topic, partition, record).await?.await?;
    Ok(())
}
