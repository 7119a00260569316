//! The checked blueprint: what the runner starts and which topics it provisions.

use std::collections::BTreeMap;

use serde::Serialize;

/// A blueprint that passed verification: every instance resolved to a streamlet type of the
/// app, every port path valid and bound to exactly one topic.
///
/// Build it with [`verify`](crate::verify) (or [`parse`](crate::parse) when no descriptor is
/// at hand, e.g. to draw the graph).
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::parse;
/// let text = r#"
/// name = "demo"
/// [streamlets]
/// gen = "generator"
/// log = "logger"
/// [topics.numbers]
/// producers = ["gen.out"]
/// consumers = ["log.in"]
/// "#;
/// let blueprint = parse(Path::new("blueprint.toml"), text).blueprint.unwrap();
/// assert_eq!(blueprint.streamlet("gen").unwrap().type_name, "generator");
/// assert_eq!(blueprint.topic_of("log", "in").unwrap().name, "numbers");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blueprint {
    /// The app name.
    pub name: String,
    /// The streamlet instances, in file order.
    pub streamlets: Vec<StreamletInstance>,
    /// The topics, in file order.
    pub topics: Vec<Topic>,
}

impl Blueprint {
    /// The instance called `name`.
    pub fn streamlet(&self, name: &str) -> Option<&StreamletInstance> {
        self.streamlets
            .iter()
            .find(|streamlet| streamlet.name == name)
    }

    /// The topic with id `id`.
    pub fn topic(&self, id: &str) -> Option<&Topic> {
        self.topics.iter().find(|topic| topic.id == id)
    }

    /// The topic an instance's port is bound to (as producer or consumer).
    pub fn topic_of(&self, streamlet: &str, port: &str) -> Option<&Topic> {
        self.topics.iter().find(|topic| {
            topic
                .producers
                .iter()
                .chain(&topic.consumers)
                .any(|path| path.streamlet == streamlet && path.port == port)
        })
    }
}

/// A streamlet instance: a name and the streamlet type it runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct StreamletInstance {
    /// The instance name, a DNS-1123 label.
    pub name: String,
    /// The streamlet type: after [`verify`](crate::verify), the type's full name as
    /// registered in the app (a suffix reference such as `Validate` is resolved to
    /// `sensors::Validate`); after [`parse`](crate::parse), the reference as written. A
    /// SQL streamlet's is [`sql_type_name`](crate::sql_type_name), a Python streamlet's
    /// [`python_type_name`](crate::python_type_name).
    pub type_name: String,
    /// A SQL streamlet's query; `None` for a streamlet of a type the app registers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<SqlQuery>,
    /// A Python streamlet's reference and interpreter; `None` for a streamlet of a type
    /// the app registers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonSource>,
}

/// The declaration of a Python streamlet (`[streamlets.<name>]` with `python`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PythonSource {
    /// The streamlet, `module:attribute` (`python`).
    pub reference: String,
    /// The interpreter to run it with (`interpreter`), as written: a path (relative to the
    /// blueprint's directory) or a command on the `PATH`; `python3` unless set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// The guarantee it runs with (`delivery`; at-least-once unless set).
    #[serde(skip_serializing_if = "crate::descriptor::Delivery::is_default")]
    pub delivery: crate::descriptor::Delivery,
}

/// The declaration of a SQL streamlet (`[streamlets.<name>]` with `sql`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SqlQuery {
    /// The query.
    pub query: String,
    /// The Avro name of its output records (`record-name`), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_name: Option<String>,
    /// The guarantee it runs with (`delivery`; at-least-once unless set).
    #[serde(skip_serializing_if = "crate::descriptor::Delivery::is_default")]
    pub delivery: crate::descriptor::Delivery,
    /// How long its group windows are kept past their end for late rows
    /// (`allowed-lateness`); `None` when they close as the watermark passes it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::units::serialize_optional_duration"
    )]
    pub allowed_lateness: Option<std::time::Duration>,
    /// How far behind the newest event time a row may come and still be on time: the
    /// watermark of each input partition trails its newest event time by this much
    /// (`out-of-orderness`); 5 seconds when `None`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::units::serialize_optional_duration"
    )]
    pub out_of_orderness: Option<std::time::Duration>,
    /// How long an input partition may deliver nothing before it no longer holds the
    /// watermark back (`idle-after`); a minute when `None`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::units::serialize_optional_duration"
    )]
    pub idle_after: Option<std::time::Duration>,
    /// How far in event time one inlet may read ahead of another that is still delivering,
    /// over a backlog (`max-drift`); 10 seconds when `None`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::units::serialize_optional_duration"
    )]
    pub max_drift: Option<std::time::Duration>,
}

/// A topic and the ports bound to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Topic {
    /// The id: the key in `[topics.<id>]`.
    pub id: String,
    /// The real topic name on the log; the id unless `name` is set.
    pub name: String,
    /// The partition count to create it with, if set.
    pub partitions: Option<u32>,
    /// The replication factor to create it with, if set.
    pub replication: Option<u16>,
    /// Whether Runnel creates the topic (`true`, the default) or expects it to exist.
    pub managed: bool,
    /// The named Kafka cluster the topic lives on, if not the default one.
    pub cluster: Option<String>,
    /// Explicit bootstrap servers for the topic's cluster.
    pub bootstrap_servers: Option<String>,
    /// Topic settings, with Kafka's names (`retention.ms`), values as text.
    pub config: BTreeMap<String, String>,
    /// Producer settings, with Kafka's names, values as text.
    pub producer_config: BTreeMap<String, String>,
    /// Consumer settings, with Kafka's names, values as text.
    pub consumer_config: BTreeMap<String, String>,
    /// The rule the topic's schemas keep as they change (BACKWARD unless set).
    pub compatibility: crate::Compatibility,
    /// The Avro schema clients outside the blueprint write it with (`schema`), if declared:
    /// a writer schema like a producer's, and the schema a SQL table over it reads.
    pub schema: Option<serde_json::Value>,
    /// The outlets that write it.
    pub producers: Vec<PortPath>,
    /// The inlets that read it.
    pub consumers: Vec<PortPath>,
}

/// A port of a streamlet instance: `instance.port`.
///
/// ```
/// use runnel_blueprint::PortPath;
/// let path = PortPath::parse("metrics.in").unwrap();
/// assert_eq!((path.streamlet.as_str(), path.port.as_str()), ("metrics", "in"));
/// assert_eq!(path.to_string(), "metrics.in");
/// assert_eq!(PortPath::parse("metrics"), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct PortPath {
    /// The instance name.
    pub streamlet: String,
    /// The port name.
    pub port: String,
}

impl PortPath {
    /// Splits `instance.port`; `None` unless there is exactly one `.` with text on both sides
    /// and no whitespace.
    pub fn parse(path: &str) -> Option<PortPath> {
        let (streamlet, port) = split_port_path(path)?;
        Some(PortPath {
            streamlet: streamlet.to_owned(),
            port: port.to_owned(),
        })
    }
}

/// The instance and port of `instance.port`, borrowed; `None` unless there is exactly one
/// `.` with text on both sides and no whitespace.
pub(crate) fn split_port_path(path: &str) -> Option<(&str, &str)> {
    let (streamlet, port) = path.split_once('.')?;
    let well_formed = |part: &str| {
        !part.is_empty() && !part.contains('.') && !part.chars().any(char::is_whitespace)
    };
    (well_formed(streamlet) && well_formed(port)).then_some((streamlet, port))
}

impl std::fmt::Display for PortPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.streamlet, self.port)
    }
}
