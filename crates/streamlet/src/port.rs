//! Typed ports: [`Inlet`] and [`Outlet`] constants, declared once and used by the logic, the
//! tests and the blueprint check.

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;

use runnel_blueprint::descriptor::{BadDataPolicy, Format, SchemaDescriptor};

use runnel_codec::Codec;

use crate::Data;

/// An input port receiving values of `T`.
///
/// Ports are constants: a name, a format and, for inlets, what to do with records that do
/// not decode.
///
/// ```
/// use runnel_streamlet::prelude::*;
/// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
/// /// Readings from any ingress, Avro encoded.
/// pub const IN: Inlet<Reading> = Inlet::new("in");
/// /// The same, as JSON, failing the streamlet on a record that does not parse.
/// pub const RAW: Inlet<Reading> = Inlet::new("raw").json().on_bad_data(BadDataPolicy::Fail);
/// assert_eq!(RAW.name(), "raw");
/// ```
pub struct Inlet<T> {
    name: &'static str,
    format: Format,
    bad_data: BadDataPolicy,
    _type: PhantomData<fn() -> T>,
}

impl<T> Inlet<T> {
    /// An Avro inlet that sends undecodable records to the dead-letter topic.
    pub const fn new(name: &'static str) -> Self {
        Inlet {
            name,
            format: Format::Avro,
            bad_data: BadDataPolicy::DeadLetter,
            _type: PhantomData,
        }
    }

    /// Reads JSON instead of Avro.
    pub const fn json(mut self) -> Self {
        self.format = Format::Json;
        self
    }

    /// Sets what happens to records that do not decode.
    pub const fn on_bad_data(mut self, policy: BadDataPolicy) -> Self {
        self.bad_data = policy;
        self
    }

    /// The port name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The wire format.
    pub const fn format(&self) -> Format {
        self.format
    }

    /// What happens to records that do not decode.
    pub const fn bad_data(&self) -> BadDataPolicy {
        self.bad_data
    }
}

/// A function giving a value's key; the key picks the partition.
pub type KeyFunction<T> = fn(&T) -> String;

/// An output port sending values of `T`.
///
/// Without a key function, values go round robin over the topic's partitions; with one, the
/// key (UTF-8) is set on every record and picks the partition as Kafka's default partitioner
/// does, so all values with one key stay in order on one partition.
///
/// Values derived from an input (everything the helpers send, and
/// [`OutletSender::send_derived`](crate::OutletSender::send_derived)) carry the input's
/// headers, trace ids for example, except Runnel's own (`runnel.*`);
/// [`without_input_headers`](Outlet::without_input_headers) turns that off for one outlet.
///
/// ```
/// use runnel_streamlet::prelude::*;
/// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { sensor: String, celsius: f64 }
/// /// Readings, partitioned by sensor.
/// pub const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|reading| reading.sensor.clone());
/// assert!(OUT.is_keyed());
/// assert!(OUT.forwards_input_headers());
/// ```
pub struct Outlet<T> {
    name: &'static str,
    format: Format,
    key: Option<KeyFunction<T>>,
    forward_headers: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T> Outlet<T> {
    /// An Avro outlet without a key function.
    pub const fn new(name: &'static str) -> Self {
        Outlet {
            name,
            format: Format::Avro,
            key: None,
            forward_headers: true,
            _type: PhantomData,
        }
    }

    /// Sends values derived from an input without the input's headers (only the ones set
    /// explicitly with [`Outgoing::header`](crate::Outgoing::header)).
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// # #[derive(Serialize, Deserialize, AvroSchema)] struct Alert { text: String }
    /// pub const ALERTS: Outlet<Alert> = Outlet::new("alerts").without_input_headers();
    /// assert!(!ALERTS.forwards_input_headers());
    /// ```
    pub const fn without_input_headers(mut self) -> Self {
        self.forward_headers = false;
        self
    }

    /// Whether values derived from an input carry its headers (the default).
    pub const fn forwards_input_headers(&self) -> bool {
        self.forward_headers
    }

    /// Writes JSON instead of Avro.
    pub const fn json(mut self) -> Self {
        self.format = Format::Json;
        self
    }

    /// Keys every value with `key`.
    pub const fn keyed_by(mut self, key: KeyFunction<T>) -> Self {
        self.key = Some(key);
        self
    }

    /// The port name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The wire format.
    pub const fn format(&self) -> Format {
        self.format
    }

    /// Whether values get a key.
    pub const fn is_keyed(&self) -> bool {
        self.key.is_some()
    }

    /// An inlet with the same name, type and format, for a streamlet reading what this
    /// outlet writes.
    pub const fn as_inlet(&self) -> Inlet<T> {
        Inlet {
            name: self.name,
            format: self.format,
            bad_data: BadDataPolicy::DeadLetter,
            _type: PhantomData,
        }
    }

    pub(crate) fn key_function(&self) -> Option<KeyFunction<T>> {
        self.key
    }
}

// Manual impls: ports are copyable whatever `T` is.
impl<T> Clone for Inlet<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Inlet<T> {}
impl<T> Clone for Outlet<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Outlet<T> {}

impl<T> fmt::Debug for Inlet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inlet")
            .field("name", &self.name)
            .field("type", &std::any::type_name::<T>())
            .field("format", &self.format)
            .finish()
    }
}

impl<T> fmt::Debug for Outlet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outlet")
            .field("name", &self.name)
            .field("type", &std::any::type_name::<T>())
            .field("format", &self.format)
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

/// Whether a port is an inlet or an outlet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Inlet,
    Outlet,
}

/// A port with its type erased, as a [`Shape`](crate::Shape) keeps it.
#[derive(Clone, Debug)]
pub(crate) struct PortSpec {
    pub(crate) name: &'static str,
    pub(crate) direction: Direction,
    pub(crate) format: Format,
    pub(crate) bad_data: BadDataPolicy,
    pub(crate) keyed: bool,
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) schema: PortSchema,
}

/// Where a port's schema comes from.
#[derive(Clone, Debug)]
pub(crate) enum PortSchema {
    /// Derived from the port's Rust type.
    Derived(fn(Format) -> SchemaDescriptor),
    /// Given at run time, for a port of [`AvroDatum`](runnel_codec::AvroDatum)s.
    Given(std::sync::Arc<SchemaDescriptor>),
}

impl PortSpec {
    /// The port's schema, as the descriptor shows it.
    pub(crate) fn schema(&self) -> SchemaDescriptor {
        match &self.schema {
            PortSchema::Derived(derive) => derive(self.format),
            PortSchema::Given(schema) => (**schema).clone(),
        }
    }

    /// The schema definition a port's codec is built with, where it is given at run time.
    pub(crate) fn given_schema(&self) -> Option<&serde_json::Value> {
        match &self.schema {
            PortSchema::Derived(_) => None,
            PortSchema::Given(schema) => Some(&schema.definition),
        }
    }

    /// A port of [`AvroDatum`](runnel_codec::AvroDatum)s whose records have `schema`.
    pub(crate) fn of_datums(name: &str, direction: Direction, schema: SchemaDescriptor) -> Self {
        PortSpec {
            name: intern(name),
            direction,
            format: Format::Avro,
            bad_data: BadDataPolicy::DeadLetter,
            keyed: false,
            type_id: TypeId::of::<runnel_codec::AvroDatum>(),
            type_name: std::any::type_name::<runnel_codec::AvroDatum>(),
            schema: PortSchema::Given(std::sync::Arc::new(schema)),
        }
    }
}

/// The codec of a port in `format`: of `T`'s own schema, or of `schema` where it is given
/// at run time (a port of [`AvroDatum`](runnel_codec::AvroDatum)s).
pub(crate) fn codec<T: Data>(format: Format, schema: Option<&serde_json::Value>) -> Codec<T> {
    match schema {
        Some(definition) => Codec::with_schema(format, definition)
            .expect("a datum port has an Avro schema (`avro_schema_descriptor`)"),
        None => Codec::new(format),
    }
}

/// `name` as a `&'static str`, as port names are: each distinct name is kept once for the
/// life of the process (ports named at run time are few: a SQL streamlet's tables).
fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = names.get(name) {
        return known;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(kept);
    kept
}

impl PortSpec {
    pub(crate) fn of_inlet<T: Data>(inlet: Inlet<T>) -> Self {
        PortSpec {
            name: inlet.name,
            direction: Direction::Inlet,
            format: inlet.format,
            bad_data: inlet.bad_data,
            keyed: false,
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            schema: PortSchema::Derived(runnel_codec::schema_descriptor::<T>),
        }
    }

    pub(crate) fn of_outlet<T: Data>(outlet: Outlet<T>) -> Self {
        PortSpec {
            name: outlet.name,
            direction: Direction::Outlet,
            format: outlet.format,
            bad_data: BadDataPolicy::default(),
            keyed: outlet.key.is_some(),
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            schema: PortSchema::Derived(runnel_codec::schema_descriptor::<T>),
        }
    }
}
