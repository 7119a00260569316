//! The seam between the author API and the host that runs it (`runnel-host`).
//!
//! A streamlet author never needs this module; it is hidden from the documentation and may
//! change with any release. The host connects an instance's ports to the backplane, and
//! this crate owns what the streamlet holds: the inlets and outlets behind a
//! [`Context`](crate::Context), the dead-letter sender, the [`Checkpoints`], and the sending
//! side of the acknowledgement queue ([`Acknowledgements`]) that every send, commit and
//! checkpoint goes into. The host drains that queue with its committer, which takes the
//! queue's [`Event`]s, writes checkpoint records ([`checkpoint_record`]) and opens and
//! closes the exactly-once [`Gate`]s.
//!
//! How the host uses it, per instance:
//!
//! 1. [`Acknowledgements::new`] makes the queue, giving the committer its
//!    [`EventReceiver`].
//! 2. [`InstanceParts::new`] takes the instance's shape and what every port shares;
//!    [`InstanceParts::connect_inlet`] and [`InstanceParts::connect_outlet`] add each port
//!    as the host connected it.
//! 3. [`InstanceParts::checkpoints`] gives a checkpointed streamlet the state it restored
//!    ([`read_last`]) and where to read partitions' checkpoints from.
//! 4. [`InstanceParts::into_context`] makes the [`Context`](crate::Context) the streamlet
//!    runs with.
//!
//! The test kit also encodes its inputs and decodes outputs as the ports do, with
//! [`PortCodec`].

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{Backend, Consumer, Producer};
use runnel_blueprint::descriptor::Format;
use runnel_blueprint::parameter::ParameterValue;
use runnel_codec::Codec;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Checkpoints;
use crate::clock::Clock;
use crate::dead_letter::DeadLetters;
use crate::inlet::InletParts;
use crate::outlet::OutletParts;
use crate::port::Direction;
use crate::watermark::ScriptedWatermarks;
use crate::{CodecError, Context, Data, FailedAttempts, InstanceMetrics, Shape};

pub use crate::acknowledgement::{Acknowledgements, Event, EventReceiver};
pub use crate::checkpoint::{
    CHANGELOG_ENTRIES_HEADER, CHANGELOG_WRITER_HEADER, ChangelogBatch, ChangelogRange,
    CheckpointError, CheckpointSource, InletOffset, PartitionSave, Restored, SavedState, read_last,
    record as checkpoint_record,
};
pub use crate::gate::Gate;
pub use runnel_event_time::changelog_entries::ChangelogEntries;

/// What every port of one instance shares, for [`InstanceParts::new`].
#[derive(Debug)]
pub struct InstanceSetup {
    /// The instance name.
    pub instance: Arc<str>,
    /// The streamlet's shape.
    pub shape: Shape,
    /// The backplane (inlets read end offsets and rewind through it).
    pub backend: Arc<dyn Backend>,
    /// The producer of the outlets and the dead-letter topic (exactly-once: the
    /// transactional one).
    pub producer: Arc<dyn Producer>,
    /// Where records that fail to decode go.
    pub dead_letter_topic: Arc<str>,
    /// Processing time.
    pub clock: Arc<dyn Clock>,
    /// The instance's counters.
    pub metrics: Arc<InstanceMetrics>,
    /// Fires when the instance is asked to stop.
    pub shutdown: CancellationToken,
    /// The record the instance was handling when it last failed, kept across restarts.
    pub attempts: Arc<FailedAttempts>,
    /// Records an inlet asks for per poll.
    pub poll_batch: usize,
    /// The sending side of the instance's acknowledgement queue.
    pub acknowledgements: Acknowledgements,
}

/// Where the host connected one inlet, for [`InstanceParts::connect_inlet`].
#[derive(Debug)]
pub struct InletConnection {
    /// The inlet's name in the shape.
    pub port: &'static str,
    /// The topic it reads.
    pub topic: Arc<str>,
    /// The consumer reading it.
    pub consumer: Arc<dyn Consumer>,
    /// The Avro schemas the topic's producers write with, so evolved readers resolve them.
    pub writer_schemas: Vec<serde_json::Value>,
    /// The topic's base schema, where the backplane keeps schemas: records without a schema
    /// header were written with it.
    pub base_schema: Option<serde_json::Value>,
    /// Where a schema registry keeps the topic's schemas: the ids and definitions known
    /// when the inlet started (others are looked up as records name them). Every value is
    /// then in the Confluent wire format.
    pub registry_schemas: Option<Vec<(u32, serde_json::Value)>>,
    /// Becomes `true` once nothing more will be appended to the topic.
    pub end_of_input: watch::Receiver<bool>,
    /// Per partition, the first offset the restored checkpoint does not reflect: records
    /// before it are skipped.
    pub resume: std::collections::BTreeMap<u32, u64>,
}

/// Where the host connected one outlet, for [`InstanceParts::connect_outlet`].
#[derive(Debug)]
pub struct OutletConnection {
    /// The outlet's name in the shape.
    pub port: &'static str,
    /// The topic it appends to.
    pub topic: Arc<str>,
    /// The topic's partition count.
    pub partitions: u32,
    /// Whether every record names its writer schema in the
    /// [`SCHEMA_HEADER`](crate::SCHEMA_HEADER).
    pub tag_schema: bool,
    /// Where a schema registry keeps the topic's schemas: the registry's id of the schema
    /// the outlet writes with; every value is then in the Confluent wire format.
    pub registry_id: Option<u32>,
}

/// The parts of one instance a streamlet holds, assembled by the host port by port, then
/// turned into the streamlet's [`Context`].
#[derive(Debug)]
pub struct InstanceParts {
    setup: InstanceSetup,
    dead_letters: Arc<DeadLetters>,
    inlets: HashMap<&'static str, InletParts>,
    outlets: HashMap<&'static str, OutletParts>,
}

impl InstanceParts {
    /// Starts assembling an instance with no port connected.
    pub fn new(setup: InstanceSetup) -> Self {
        let dead_letters = Arc::new(DeadLetters {
            producer: setup.producer.clone(),
            topic: setup.dead_letter_topic.clone(),
            instance: setup.instance.clone(),
            acknowledgements: setup.acknowledgements.clone(),
        });
        InstanceParts {
            setup,
            dead_letters,
            inlets: HashMap::new(),
            outlets: HashMap::new(),
        }
    }

    /// Connects an inlet of the shape. Its commits name it by its position among the
    /// shape's inlets ([`Event::Commit`]'s `inlet`), in the order of
    /// [`Shape::inlet_names`].
    ///
    /// # Panics
    ///
    /// If the shape has no inlet of that name.
    pub fn connect_inlet(&mut self, inlet: InletConnection) {
        let setup = &self.setup;
        let (index, port) = setup
            .shape
            .ports_in(Direction::Inlet)
            .enumerate()
            .find(|(_, port)| port.name == inlet.port)
            .unwrap_or_else(|| panic!("the shape has no inlet '{}'", inlet.port));
        let metrics = setup.metrics.inlet(port.name);
        metrics.read_by(&inlet.consumer);
        let parts = InletParts {
            index,
            port: port.name,
            topic: inlet.topic,
            consumer: inlet.consumer,
            backend: setup.backend.clone(),
            writer_schemas: inlet.writer_schemas,
            base_schema: inlet.base_schema,
            registry_schemas: inlet.registry_schemas,
            end_of_input: inlet.end_of_input,
            policy: port.bad_data,
            metrics,
            instance_metrics: setup.metrics.clone(),
            acknowledgements: setup.acknowledgements.clone(),
            dead_letters: self.dead_letters.clone(),
            shutdown: setup.shutdown.clone(),
            poll_batch: setup.poll_batch,
            attempts: setup.attempts.clone(),
            resume: inlet.resume,
        };
        self.inlets.insert(port.name, parts);
    }

    /// Connects an outlet of the shape.
    pub fn connect_outlet(&mut self, outlet: OutletConnection) {
        let setup = &self.setup;
        let parts = OutletParts {
            port: outlet.port,
            topic: outlet.topic,
            partitions: outlet.partitions,
            producer: setup.producer.clone(),
            acknowledgements: setup.acknowledgements.clone(),
            clock: setup.clock.clone(),
            metrics: setup.metrics.outlet(outlet.port),
            tag_schema: outlet.tag_schema,
            registry_id: outlet.registry_id,
        };
        self.outlets.insert(outlet.port, parts);
    }

    /// The checkpoints of a checkpointed streamlet: the last checkpoint of its whole
    /// state, if any, and where its partitions' checkpoints and its changelog are read back
    /// from.
    pub fn checkpoints(&self, restored: Option<Restored>, source: CheckpointSource) -> Checkpoints {
        Checkpoints::new(
            self.setup.acknowledgements.clone(),
            restored,
            Arc::new(source),
        )
    }

    /// The context the streamlet runs with: its connected ports, its checked `parameters`,
    /// watermarks set from outside (the test kit's), its `checkpoints`, and, for a
    /// streamlet that [reports readiness](crate::Shape::reports_readiness), the signal it
    /// reports it with.
    pub fn into_context(
        self,
        parameters: HashMap<String, ParameterValue>,
        watermarks: Option<ScriptedWatermarks>,
        checkpoints: Option<Checkpoints>,
        readiness: Option<oneshot::Sender<()>>,
    ) -> Context {
        let setup = self.setup;
        let context = Context::new(
            setup.instance,
            setup.shape,
            self.inlets,
            self.outlets,
            parameters,
            setup.clock,
            setup.shutdown,
        )
        .with_metrics(setup.metrics)
        .with_scripted_watermarks(watermarks)
        .with_checkpoints(checkpoints);
        match readiness {
            Some(ready) => context.with_readiness(Some(ready)),
            None => context,
        }
    }
}

/// Counts records the committer committed, in the instance's metrics.
pub fn count_committed(metrics: &InstanceMetrics, records: u64) {
    metrics.count_committed(records);
}

/// Tells an instance's state queries the partition count of its input (for the partition
/// of a key).
pub fn set_input_partitions(metrics: &InstanceMetrics, partitions: u32) {
    metrics.state_queries().set_input_partitions(partitions);
}

/// Encodes and decodes the values of one port in its format, exactly as inlets and outlets
/// do: for the test kit, which feeds inputs and reads outputs as records.
#[derive(Debug)]
pub struct PortCodec<T>(Codec<T>);

impl<T: Data> PortCodec<T> {
    /// The codec of a port of type `T` in `format`.
    pub fn new(format: Format) -> Self {
        PortCodec(Codec::new(format))
    }

    /// The fingerprint of `T`'s schema, to put in [`SCHEMA_HEADER`](crate::SCHEMA_HEADER),
    /// for Avro values.
    pub fn fingerprint(&self) -> Option<&Bytes> {
        self.0.fingerprint()
    }

    /// Encodes `value`.
    ///
    /// # Errors
    ///
    /// When the value does not fit the format (an Avro schema it breaks, say).
    pub fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        self.0.encode(value)
    }

    /// Decodes a record's value, written with the schema of fingerprint `writer` if given;
    /// a null value is an error.
    ///
    /// # Errors
    ///
    /// When the bytes are not a `T` in the format, or the value is null.
    pub fn decode_value(
        &self,
        value: Option<&[u8]>,
        writer: Option<&[u8]>,
    ) -> Result<T, CodecError> {
        self.0.decode_value(value, writer)
    }
}
