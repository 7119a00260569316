//! The app descriptor: what an app binary says about the streamlet types it contains.
//!
//! `app describe` prints it as JSON (the format is documented in `docs/descriptor.md`); the
//! verifier checks a blueprint against it, in the app or standalone
//! (`runnel verify --descriptor app.json`), so nothing needs compiling to check wiring.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::parameter::ParameterKind;

/// The version of the descriptor format this crate writes and reads.
pub const DESCRIPTOR_VERSION: u32 = 1;

/// Every streamlet type an app binary contains.
///
/// ```
/// use runnel_blueprint::descriptor::AppDescriptor;
/// let json = r#"{"descriptor-version": 1, "app": "demo", "streamlets": []}"#;
/// let descriptor: AppDescriptor = serde_json::from_str(json).unwrap();
/// assert_eq!(descriptor.app, "demo");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AppDescriptor {
    /// The format version, [`DESCRIPTOR_VERSION`].
    pub descriptor_version: u32,
    /// The app name given to `runnel::App::new`.
    pub app: String,
    /// The Runnel version that wrote the descriptor.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub runnel_version: String,
    /// The registered streamlet types, in registration order.
    pub streamlets: Vec<StreamletDescriptor>,
}

impl AppDescriptor {
    /// Reads a descriptor from its JSON text (what `app describe` prints).
    ///
    /// ```
    /// use runnel_blueprint::descriptor::AppDescriptor;
    /// let descriptor = AppDescriptor::from_json(r#"{"descriptor-version": 1, "app": "demo", "streamlets": []}"#).unwrap();
    /// assert_eq!(descriptor.app, "demo");
    /// let error = AppDescriptor::from_json("{\n  \"app\": 1}").unwrap_err();
    /// assert!(error.to_string().starts_with("invalid app descriptor at line 2, column"), "{error}");
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::DescriptorJson`] when the text is not a descriptor, with where it went wrong;
    /// [`Error::DescriptorVersion`] when it was written in another format version.
    pub fn from_json(text: &str) -> Result<AppDescriptor, Error> {
        let descriptor: AppDescriptor = serde_json::from_str(text).map_err(|error| {
            let position = format!(" at line {} column {}", error.line(), error.column());
            let message = error.to_string();
            Error::DescriptorJson {
                line: error.line(),
                column: error.column(),
                message: message
                    .strip_suffix(&position)
                    .unwrap_or(&message)
                    .to_owned(),
            }
        })?;
        if descriptor.descriptor_version != DESCRIPTOR_VERSION {
            return Err(Error::DescriptorVersion {
                found: descriptor.descriptor_version,
                supported: DESCRIPTOR_VERSION,
            });
        }
        Ok(descriptor)
    }

    /// The streamlet type registered under `type_name`.
    pub fn streamlet(&self, type_name: &str) -> Option<&StreamletDescriptor> {
        self.streamlets
            .iter()
            .find(|streamlet| streamlet.type_name == type_name)
    }
}

/// One streamlet type: its ports, parameters and volume mounts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StreamletDescriptor {
    /// The name the type is registered under; blueprints refer to it.
    #[serde(rename = "type")]
    pub type_name: String,
    /// What the streamlet does, from its documentation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Input ports.
    #[serde(default)]
    pub inlets: Vec<InletDescriptor>,
    /// Output ports.
    #[serde(default)]
    pub outlets: Vec<OutletDescriptor>,
    /// Configuration parameters.
    #[serde(default)]
    pub parameters: Vec<ParameterDescriptor>,
    /// Volumes the streamlet expects mounted (bound by the Kubernetes deployment).
    #[serde(default)]
    pub volume_mounts: Vec<VolumeMountDescriptor>,
    /// The delivery guarantee the streamlet asks for; omitted when at-least-once.
    #[serde(default, skip_serializing_if = "Delivery::is_default")]
    pub delivery: Delivery,
    /// How the streamlet's checkpointed state is scoped; omitted when it keeps none.
    #[serde(default, skip_serializing_if = "StateScope::is_none")]
    pub state: StateScope,
}

impl StreamletDescriptor {
    /// The inlet called `name`.
    pub fn inlet(&self, name: &str) -> Option<&InletDescriptor> {
        self.inlets.iter().find(|inlet| inlet.name == name)
    }

    /// The outlet called `name`.
    pub fn outlet(&self, name: &str) -> Option<&OutletDescriptor> {
        self.outlets.iter().find(|outlet| outlet.name == name)
    }
}

/// An input port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct InletDescriptor {
    /// The port name, unique within the streamlet.
    pub name: String,
    /// How records on this port are encoded.
    pub schema: SchemaDescriptor,
    /// What happens to a record that fails to decode.
    #[serde(default)]
    pub bad_data: BadDataPolicy,
}

/// An output port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OutletDescriptor {
    /// The port name, unique within the streamlet.
    pub name: String,
    /// How records on this port are encoded.
    pub schema: SchemaDescriptor,
    /// Whether records get a key from a key function (and so a partition by key).
    #[serde(default)]
    pub keyed: bool,
}

/// The encoding of a port: format and, for Avro, the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SchemaDescriptor {
    /// The wire format.
    pub format: Format,
    /// The name of the record type (the Avro full name, or the Rust type for JSON).
    pub name: String,
    /// The Avro schema as JSON (for JSON ports, the Avro schema describing the same shape).
    pub definition: serde_json::Value,
    /// A fingerprint of the canonical schema (hex), to compare schemas quickly.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
}

impl SchemaDescriptor {
    /// Whether a port with this schema reads what a port with `writer` writes: the same
    /// format and, by Avro schema resolution (promotions, defaults for missing fields,
    /// aliases, unions), a schema that resolves the writer's data.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::{Format, SchemaDescriptor};
    /// let schema = |fields: serde_json::Value| SchemaDescriptor {
    ///     format: Format::Avro,
    ///     name: "Reading".into(),
    ///     definition: serde_json::json!({"type": "record", "name": "Reading", "fields": fields}),
    ///     fingerprint: String::new(),
    /// };
    /// let old = schema(serde_json::json!([{"name": "celsius", "type": "double"}]));
    /// let new = schema(serde_json::json!([
    ///     {"name": "celsius", "type": "double"},
    ///     {"name": "sensor", "type": "string"}
    /// ]));
    /// assert_eq!(
    ///     new.can_read(&old).unwrap_err(),
    ///     "field 'Reading.sensor' is missing from the writer's record 'Reading' and has no default in the reader's"
    /// );
    /// assert!(old.can_read(&new).is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// What breaks compatibility, naming the field (`field 'Reading.sensor' is missing from
    /// the writer's record ...`), or the formats when they differ.
    pub fn can_read(&self, writer: &SchemaDescriptor) -> Result<(), String> {
        if writer.format != self.format {
            return Err(format!(
                "it reads {} ('{}') but the producer writes {} ('{}')",
                self.format, self.name, writer.format, writer.name
            ));
        }
        if writer.definition == self.definition {
            return Ok(());
        }
        let parse = |schema: &SchemaDescriptor, side: &str| {
            apache_avro::Schema::parse(&schema.definition).map_err(|error| {
                format!(
                    "the {side}'s schema '{}' is not a valid avro schema: {error}",
                    schema.name
                )
            })
        };
        let writer_schema = parse(writer, "writer")?;
        let reader_schema = parse(self, "reader")?;
        crate::avro::can_read(&writer_schema, &reader_schema)
    }
}

/// A wire format for record values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Avro binary encoding of the value alone (no container, no schema id).
    #[default]
    Avro,
    /// UTF-8 JSON.
    Json,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Avro => "avro",
            Format::Json => "json",
        })
    }
}

/// The delivery guarantee a streamlet asks for.
///
/// ```
/// use runnel_blueprint::descriptor::Delivery;
/// let parsed: Delivery = serde_json::from_str("\"exactly-once\"").unwrap();
/// assert_eq!(parsed, Delivery::ExactlyOnce);
/// assert!(Delivery::default().is_default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// An input is committed once every output sent before its commit is acknowledged;
    /// after a crash some inputs are processed again.
    #[default]
    AtLeastOnce,
    /// Outputs and input offsets commit together in transactions; downstream readers of
    /// committed data see the outputs of every input once.
    ExactlyOnce,
    /// Inputs are committed without waiting for outputs to be acknowledged; a crash may
    /// lose what was in flight, never repeat it.
    AtMostOnce,
}

impl Delivery {
    /// Whether this is the default, at-least-once.
    pub fn is_default(&self) -> bool {
        *self == Delivery::AtLeastOnce
    }

    /// The name used in descriptors: `at-least-once`, `exactly-once`, `at-most-once`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::AtLeastOnce => "at-least-once",
            Delivery::ExactlyOnce => "exactly-once",
            Delivery::AtMostOnce => "at-most-once",
        }
    }
}

/// How a streamlet's checkpointed state is scoped: what one checkpoint holds and how far
/// the streamlet scales out.
///
/// ```
/// use runnel_blueprint::descriptor::StateScope;
/// let parsed: StateScope = serde_json::from_str("\"partition\"").unwrap();
/// assert_eq!(parsed, StateScope::Partition);
/// assert!(StateScope::default().is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateScope {
    /// No checkpointed state.
    #[default]
    None,
    /// One state for the instance: it runs as one consumer-group member.
    Instance,
    /// A state per input partition: its inlets' topics must have the same partition count,
    /// and it scales out to that many processes.
    Partition,
    /// Keyed state per input partition, checkpointed incrementally: as
    /// [`Partition`](StateScope::Partition), and the changes go to the changelog topic
    /// `<app>.<instance>.changelog`, with as many partitions as the inlets' topics.
    Keyed,
}

impl StateScope {
    /// Whether the streamlet keeps no checkpointed state (the default).
    pub fn is_none(&self) -> bool {
        *self == StateScope::None
    }

    /// Whether the state is split by input partition, so the inlets must be
    /// co-partitioned.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::StateScope;
    /// assert!(StateScope::Keyed.is_by_partition() && !StateScope::Instance.is_by_partition());
    /// ```
    pub fn is_by_partition(&self) -> bool {
        matches!(self, StateScope::Partition | StateScope::Keyed)
    }
}

/// What an inlet does with a record whose bytes do not decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BadDataPolicy {
    /// Write it to the app's dead-letter topic with the error and its origin in headers,
    /// count it, and go on.
    #[default]
    DeadLetter,
    /// Log it, count it, and go on.
    Skip,
    /// Fail the streamlet (it is restarted with backoff and meets the record again).
    Fail,
}

/// A configuration parameter a streamlet declares.
///
/// ```
/// use runnel_blueprint::descriptor::ParameterDescriptor;
/// use runnel_blueprint::parameter::ParameterKind;
/// let json = r#"{"key": "name", "type": "regex-string", "pattern": "[a-z]+", "default": "x"}"#;
/// let parameter: ParameterDescriptor = serde_json::from_str(json).unwrap();
/// assert_eq!(parameter.kind, ParameterKind::RegexString { pattern: "[a-z]+".into() });
///
/// let json = r#"{"key": "rate", "type": "int", "min": "1", "max": "1000", "default": "10"}"#;
/// let parameter: ParameterDescriptor = serde_json::from_str(json).unwrap();
/// assert_eq!(parameter.max.as_deref(), Some("1000"));
/// ```
// No `deny_unknown_fields` here: serde does not support it together with `flatten` (every
// parameter was refused), so unknown fields of a parameter are ignored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ParameterDescriptor {
    /// The key users set it by (`--set instance.key=value`).
    pub key: String,
    /// What it controls.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its type and validation.
    #[serde(flatten)]
    pub kind: ParameterKind,
    /// The value used when none is set, as text in the parameter's syntax; no default makes
    /// the parameter required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The lowest value allowed, inclusive, in the parameter's syntax (`int`, `double`,
    /// `duration` and `memory-size` parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    /// The highest value allowed, inclusive, in the parameter's syntax (`int`, `double`,
    /// `duration` and `memory-size` parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    /// The only values allowed (`string` parameters); empty allows any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_values: Vec<String>,
    /// Whether values are secrets (passwords, tokens): never shown in errors, logs or
    /// status output, whichever source they come from.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

impl ParameterDescriptor {
    /// A parameter without description, default or constraints.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::ParameterDescriptor;
    /// use runnel_blueprint::parameter::ParameterKind;
    /// let parameter = ParameterDescriptor::new("rate", ParameterKind::Int);
    /// assert_eq!((parameter.key.as_str(), parameter.default), ("rate", None));
    /// ```
    pub fn new(key: impl Into<String>, kind: ParameterKind) -> Self {
        ParameterDescriptor {
            key: key.into(),
            description: String::new(),
            kind,
            default: None,
            min: None,
            max: None,
            allowed_values: Vec::new(),
            secret: false,
        }
    }
}

/// A volume a streamlet expects to be mounted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct VolumeMountDescriptor {
    /// The mount name, a DNS label.
    pub name: String,
    /// The absolute path inside the container.
    pub path: String,
    /// How the volume is accessed.
    pub access_mode: AccessMode,
}

/// Kubernetes' volume access modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessMode {
    /// Mounted read-write by one node.
    ReadWriteOnce,
    /// Mounted read-only by many nodes.
    ReadOnlyMany,
    /// Mounted read-write by many nodes.
    ReadWriteMany,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_round_trip_through_json() {
        let json = serde_json::json!({
            "descriptor-version": 1, "app": "demo",
            "streamlets": [{"type": "t", "parameters": [
                {"key": "window", "description": "how long", "type": "duration", "default": "5s"},
                {"key": "name", "type": "regex-string", "pattern": "^.{1,65535}$"},
            ]}]
        });
        let descriptor: AppDescriptor = serde_json::from_value(json.clone()).unwrap();
        let parameters = &descriptor.streamlets[0].parameters;
        assert_eq!(parameters[0].kind, ParameterKind::Duration);
        assert_eq!(parameters[0].default.as_deref(), Some("5s"));
        let written = serde_json::to_string(&descriptor).unwrap();
        assert_eq!(AppDescriptor::from_json(&written).unwrap(), descriptor);
        assert!(
            !written.contains("min") && !written.contains("allowed-values"),
            "constraints are left out when absent, so older readers see the same descriptor: {written}"
        );
    }

    #[test]
    fn constraints_round_trip_through_json() {
        let json = serde_json::json!({
            "descriptor-version": 1, "app": "demo",
            "streamlets": [{"type": "t", "parameters": [
                {"key": "rate", "type": "int", "min": "1", "max": "100"},
                {"key": "level", "type": "string", "allowed-values": ["debug", "info"]},
            ]}]
        });
        let descriptor: AppDescriptor = serde_json::from_value(json.clone()).unwrap();
        let parameters = &descriptor.streamlets[0].parameters;
        assert_eq!(parameters[0].min.as_deref(), Some("1"));
        assert_eq!(parameters[1].allowed_values, ["debug", "info"]);
        assert_eq!(
            serde_json::to_value(parameters).unwrap(),
            json["streamlets"][0]["parameters"]
        );
    }
}
