//! [`Shape`]: the ports, parameters and volume mounts of a streamlet.

use runnel_blueprint::descriptor::{
    AccessMode, Delivery, InletDescriptor, OutletDescriptor, ParameterDescriptor, SchemaDescriptor,
    StateScope, StreamletDescriptor, VolumeMountDescriptor,
};

use crate::port::{Direction, PortSpec};
use crate::{Data, Inlet, Outlet, Parameter};

/// What a streamlet exposes: inlets, outlets, configuration parameters, volume mounts and a
/// description. The runtime connects exactly these ports, and `describe` prints them.
///
/// ```
/// use runnel_streamlet::prelude::*;
/// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
/// const IN: Inlet<Reading> = Inlet::new("in");
/// const OUT: Outlet<Reading> = Outlet::new("out");
/// const LIMIT: Parameter<f64> = Parameter::double("limit").default("100.0");
///
/// let shape = Shape::new()
///     .describe("drops readings above a limit")
///     .inlet(IN)
///     .outlet(OUT)
///     .parameter(LIMIT);
/// assert_eq!(shape.descriptor("filter").inlets[0].name, "in");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Shape {
    description: &'static str,
    ports: Vec<PortSpec>,
    parameters: Vec<ParameterDescriptor>,
    volume_mounts: Vec<VolumeMountDescriptor>,
    checkpointed: bool,
    by_partition: bool,
    keyed: bool,
    /// Whether a whole state is checkpointed incrementally, with a changelog.
    whole_changelog: bool,
    delivery: Delivery,
    reports_readiness: bool,
}

impl Shape {
    /// A shape with no ports.
    pub fn new() -> Self {
        Self::default()
    }

    /// Says what the streamlet does.
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// Adds an inlet.
    pub fn inlet<T: Data>(mut self, inlet: Inlet<T>) -> Self {
        self.ports.push(PortSpec::of_inlet(inlet));
        self
    }

    /// Adds an outlet.
    pub fn outlet<T: Data>(mut self, outlet: Outlet<T>) -> Self {
        self.ports.push(PortSpec::of_outlet(outlet));
        self
    }

    /// Adds an inlet whose records' Avro schema is known only at run time: its records
    /// reach the streamlet still encoded, as [`AvroDatum`](runnel_codec::AvroDatum)s
    /// ([`Context::datum_inlet`](crate::Context::datum_inlet)). A SQL streamlet's inputs
    /// are such inlets.
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// let definition = serde_json::json!({"type": "record", "name": "N", "fields": [{"name": "n", "type": "long"}]});
    /// let schema = runnel_streamlet::avro_schema_descriptor(&definition).unwrap();
    /// let shape = Shape::new().datum_inlet("numbers", schema.clone()).datum_outlet("out", schema);
    /// assert_eq!(shape.inlet_schema("numbers").unwrap().name, "N");
    /// ```
    pub fn datum_inlet(mut self, name: &str, schema: SchemaDescriptor) -> Self {
        self.ports
            .push(PortSpec::of_datums(name, Direction::Inlet, schema));
        self
    }

    /// Adds an outlet whose records' Avro schema is known only at run time: the streamlet
    /// sends them encoded ([`Context::datum_outlet`](crate::Context::datum_outlet)).
    pub fn datum_outlet(mut self, name: &str, schema: SchemaDescriptor) -> Self {
        self.ports
            .push(PortSpec::of_datums(name, Direction::Outlet, schema));
        self
    }

    /// Says the streamlet keeps state in checkpoints
    /// ([`Context::checkpoints`](crate::Context::checkpoints)): the runtime creates its
    /// checkpoint topic, resumes it from the last checkpoint, and commits its input offsets
    /// only together with a checkpoint.
    pub fn checkpointed(mut self) -> Self {
        self.checkpointed = true;
        self
    }

    /// Whether the streamlet keeps state in checkpoints.
    pub fn is_checkpointed(&self) -> bool {
        self.checkpointed
    }

    /// Says the streamlet keeps its state whole in checkpoints, as
    /// [`checkpointed`](Shape::checkpointed) does, but writes it incrementally: each
    /// checkpoint ([`Checkpoints::save_with_changes`](crate::Checkpoints::save_with_changes))
    /// writes the entries changed since the last to the one partition of the changelog topic
    /// `<app>.<instance>.changelog` (which the runtime creates, compacted where the backplane
    /// compacts), and its record names the changelog's records that make up the state. A
    /// restart reads them back with
    /// [`Checkpoints::replay_changelog`](crate::Checkpoints::replay_changelog). For a large
    /// state of many keys that a streamlet reading several inlets keeps together (a join's
    /// rows, a SQL query's groups): a checkpoint costs what changed, not the whole state,
    /// and no record holds the whole state.
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// let shape = Shape::new().checkpointed_with_changelog();
    /// assert!(shape.is_checkpointed() && shape.has_changelog());
    /// assert!(!shape.is_checkpointed_by_partition() && !shape.has_keyed_state());
    /// ```
    pub fn checkpointed_with_changelog(mut self) -> Self {
        self.checkpointed = true;
        self.whole_changelog = true;
        self
    }

    /// Whether the streamlet's checkpoints name records of a changelog: it keeps keyed state
    /// or is [`checkpointed_with_changelog`](Shape::checkpointed_with_changelog).
    pub fn has_changelog(&self) -> bool {
        self.keyed || self.whole_changelog
    }

    /// Says the streamlet keeps its state in checkpoints split by input partition: the state
    /// of the keys arriving on partition `p` of its inlets is checkpointed in partition `p`
    /// of its checkpoint topic, with the offsets of partition `p`, so each member of its
    /// consumer group holds and restores only the partitions assigned to it, and the
    /// streamlet scales out to as many processes as its input has partitions. Its inlets'
    /// topics must have the same number of partitions, and each key must arrive on one
    /// partition (the input keyed by the key the state is kept by).
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// let shape = Shape::new().checkpointed_by_partition();
    /// assert!(shape.is_checkpointed() && shape.is_checkpointed_by_partition());
    /// ```
    pub fn checkpointed_by_partition(mut self) -> Self {
        self.checkpointed = true;
        self.by_partition = true;
        self
    }

    /// Whether the streamlet's checkpoints are split by input partition.
    pub fn is_checkpointed_by_partition(&self) -> bool {
        self.by_partition
    }

    /// Says the streamlet keeps keyed state ([`Context::keyed_state`](crate::Context::keyed_state),
    /// [`state`](crate::state)): values, lists, maps and timers per key, split by input
    /// partition as with [`checkpointed_by_partition`](Shape::checkpointed_by_partition),
    /// and checkpointed incrementally: each checkpoint writes only the entries changed
    /// since the last to the changelog topic `<app>.<instance>.changelog`, which the
    /// runtime creates with as many partitions as the input (compacted where the backplane
    /// compacts).
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// let shape = Shape::new().keyed_state();
    /// assert!(shape.has_keyed_state() && shape.is_checkpointed_by_partition());
    /// ```
    pub fn keyed_state(mut self) -> Self {
        self.checkpointed = true;
        self.by_partition = true;
        self.keyed = true;
        self
    }

    /// Whether the streamlet keeps keyed state with a changelog.
    pub fn has_keyed_state(&self) -> bool {
        self.keyed
    }

    /// Says the streamlet tells the runtime itself when it is ready, with
    /// [`Context::report_ready`](crate::Context::report_ready): for example once a server has
    /// bound its port. Until then the instance counts as starting and its process as not
    /// ready. Without this, an instance is ready once its ports are connected.
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// let shape = Shape::new().reports_readiness();
    /// assert!(shape.is_reporting_readiness());
    /// ```
    pub fn reports_readiness(mut self) -> Self {
        self.reports_readiness = true;
        self
    }

    /// Whether the streamlet reports its own readiness.
    pub fn is_reporting_readiness(&self) -> bool {
        self.reports_readiness
    }

    /// Adds a configuration parameter.
    pub fn parameter<T>(mut self, parameter: Parameter<T>) -> Self {
        self.parameters.push(parameter.descriptor());
        self
    }

    /// Adds a configuration parameter known only at run time (a streamlet defined outside
    /// Rust, such as in Python), by its descriptor; read its value with
    /// [`Context::parameter_value`](crate::Context::parameter_value).
    ///
    /// ```
    /// use runnel_streamlet::prelude::*;
    /// use runnel_blueprint::descriptor::ParameterDescriptor;
    /// use runnel_blueprint::parameter::ParameterKind;
    /// let limit = ParameterDescriptor {
    ///     default: Some("30.0".into()),
    ///     ..ParameterDescriptor::new("limit", ParameterKind::Double)
    /// };
    /// let shape = Shape::new().parameter_descriptor(limit);
    /// assert_eq!(shape.descriptor("t").parameters[0].key, "limit");
    /// ```
    pub fn parameter_descriptor(mut self, parameter: ParameterDescriptor) -> Self {
        self.parameters.push(parameter);
        self
    }

    /// Asks for a volume mounted at an absolute `path` (bound by the Kubernetes deployment).
    pub fn volume_mount(mut self, name: &str, path: &str, access_mode: AccessMode) -> Self {
        self.volume_mounts.push(VolumeMountDescriptor {
            name: name.to_owned(),
            path: path.to_owned(),
            access_mode,
        });
        self
    }

    /// Asks for exactly-once delivery: outputs and input offsets commit together in
    /// transactions (on Kafka), so downstream readers of committed data see the outputs of
    /// every input once. The streamlet must commit (or drop) every message it takes without
    /// waiting for further input, as the helpers do.
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// use runnel_blueprint::descriptor::Delivery;
    /// let shape = Shape::new().exactly_once();
    /// assert_eq!(shape.delivery(), Delivery::ExactlyOnce);
    /// ```
    pub fn exactly_once(mut self) -> Self {
        self.delivery = Delivery::ExactlyOnce;
        self
    }

    /// Asks for at-most-once delivery: inputs are committed without waiting for outputs to
    /// be acknowledged, so a crash may lose what was in flight but never repeats it.
    pub fn at_most_once(mut self) -> Self {
        self.delivery = Delivery::AtMostOnce;
        self
    }

    /// Sets the delivery guarantee.
    pub fn with_delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// The delivery guarantee asked for (at-least-once unless set).
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// The inlet names, in declaration order.
    pub fn inlet_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.ports_in(Direction::Inlet).map(|port| port.name)
    }

    /// The outlet names, in declaration order.
    pub fn outlet_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.ports_in(Direction::Outlet).map(|port| port.name)
    }

    /// The schema of inlet `name`, as the descriptor shows it.
    pub fn inlet_schema(
        &self,
        name: &str,
    ) -> Option<runnel_blueprint::descriptor::SchemaDescriptor> {
        self.ports_in(Direction::Inlet)
            .find(|port| port.name == name)
            .map(PortSpec::schema)
    }

    /// The schema of outlet `name`, as the descriptor shows it.
    pub fn outlet_schema(
        &self,
        name: &str,
    ) -> Option<runnel_blueprint::descriptor::SchemaDescriptor> {
        self.ports_in(Direction::Outlet)
            .find(|port| port.name == name)
            .map(PortSpec::schema)
    }

    /// The declared parameters.
    pub fn parameters(&self) -> &[ParameterDescriptor] {
        &self.parameters
    }

    /// The descriptor entry for this shape registered as `type_name`.
    pub fn descriptor(&self, type_name: &str) -> StreamletDescriptor {
        StreamletDescriptor {
            type_name: type_name.to_owned(),
            description: self.description.to_owned(),
            inlets: self
                .ports_in(Direction::Inlet)
                .map(|port| InletDescriptor {
                    name: port.name.to_owned(),
                    schema: port.schema(),
                    bad_data: port.bad_data,
                })
                .collect(),
            outlets: self
                .ports_in(Direction::Outlet)
                .map(|port| OutletDescriptor {
                    name: port.name.to_owned(),
                    schema: port.schema(),
                    keyed: port.keyed,
                })
                .collect(),
            parameters: self.parameters.clone(),
            volume_mounts: self.volume_mounts.clone(),
            delivery: self.delivery,
            state: match (self.checkpointed, self.by_partition, self.keyed) {
                (false, _, _) => StateScope::None,
                (true, false, _) => StateScope::Instance,
                (true, true, false) => StateScope::Partition,
                (true, true, true) => StateScope::Keyed,
            },
        }
    }

    pub(crate) fn ports_in(&self, direction: Direction) -> impl Iterator<Item = &PortSpec> + '_ {
        self.ports
            .iter()
            .filter(move |port| port.direction == direction)
    }

    /// The declared port called `name` in `direction`.
    ///
    /// # Panics
    ///
    /// If there is none, or it carries another type than `T`: asking for a port that is not
    /// in the shape is a bug in the streamlet, and the test kit hits it on the first run.
    pub(crate) fn expect_port<T: Data>(&self, direction: Direction, name: &str) -> &PortSpec {
        let kind = match direction {
            Direction::Inlet => "inlet",
            Direction::Outlet => "outlet",
        };
        let port = self
            .ports_in(direction)
            .find(|port| port.name == name)
            .unwrap_or_else(|| {
                panic!("the streamlet asked for {kind} '{name}', which is not in its shape()")
            });
        assert!(
            port.type_id == std::any::TypeId::of::<T>(),
            "the streamlet asked for {kind} '{name}' as {}, but its shape() declares {}",
            std::any::type_name::<T>(),
            port.type_name
        );
        port
    }
}
