//! The stable problem codes a verification reports, with their severity.
//!
//! Codes reuse the names of Cloudflow's blueprint problems so users and tools that know
//! Cloudflow recognise them; the codes Runnel adds beyond Cloudflow are marked below. A code's
//! name never changes once released: scripts match on it (`--format json`).

use serde::Serialize;

/// How serious a problem is.
///
/// ```
/// use runnel_blueprint::Severity;
/// assert_eq!(Severity::Warning.to_string(), "warning");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The blueprint cannot run.
    Error,
    /// The blueprint can run, but probably not as meant.
    Warning,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

macro_rules! codes {
    ($( $(#[doc = $doc:literal])* $name:ident => $severity:ident, )*) => {
        /// What kind of problem a [`Diagnostic`](crate::Diagnostic) reports.
        ///
        /// `Display` prints the name exactly as listed (`PortPathNotFound`), which is also how
        /// it serializes.
        ///
        /// ```
        /// use runnel_blueprint::{Code, Severity};
        /// assert_eq!(Code::PortPathNotFound.to_string(), "PortPathNotFound");
        /// assert_eq!(Code::TopicWithoutConsumers.severity(), Severity::Warning);
        /// assert_eq!("EmptyStreamlets".parse::<Code>(), Ok(Code::EmptyStreamlets));
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[doc = $doc])* $name, )*
        }

        impl Code {
            /// Every code, in the order of the documentation.
            pub const ALL: &'static [Code] = &[$(Code::$name),*];

            /// The code's name, as printed and serialized.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$name => stringify!($name),)*
                }
            }

            /// How serious the problem is: errors stop a blueprint from running, warnings
            /// do not (unless denied).
            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$name => Severity::$severity,)*
                }
            }
        }
    };
}

codes! {
    /// The file is not valid TOML, or a value has the wrong type, or a key is unknown,
    /// duplicated or missing.
    BlueprintFormatError => Error,
    /// The file has no `[streamlets]` table.
    MissingStreamletsSection => Error,
    /// The `[streamlets]` table is empty.
    EmptyStreamlets => Error,
    /// The app descriptor has no streamlet types at all.
    EmptyStreamletDescriptors => Error,
    /// Two streamlet instances have the same name.
    DuplicateStreamletNamesFound => Error,
    /// An instance name is not a DNS-1123 label of at most 63 characters.
    InvalidStreamletName => Error,
    /// A streamlet type reference is not a valid type name.
    InvalidStreamletClassName => Error,
    /// No streamlet type in the descriptor matches a reference.
    StreamletDescriptorNotFound => Error,
    /// Several streamlet types in the descriptor match a reference.
    AmbiguousStreamletRef => Error,
    /// A streamlet type declares an inlet whose name is not a DNS label, or a duplicate one.
    InvalidInletName => Error,
    /// A streamlet type declares an outlet whose name is not a DNS label, or a duplicate one.
    InvalidOutletName => Error,
    /// An inlet of a used streamlet is on no topic.
    UnconnectedInlets => Error,
    /// An outlet of a used streamlet is on no topic.
    UnconnectedOutlets => Error,
    /// A port is on more than one topic.
    PortBoundToManyTopics => Error,
    /// A port path is not of the form `instance.port`.
    InvalidPortPath => Error,
    /// A port path names an instance or a port that does not exist.
    PortPathNotFound => Error,
    /// An inlet is listed as a topic's producer.
    InvalidProducerPortPath => Error,
    /// An outlet is listed as a topic's consumer.
    InvalidConsumerPortPath => Error,
    /// A topic name breaks Kafka's rules (`[a-zA-Z0-9._-]`, at most 249, not `.` or `..`).
    InvalidTopicName => Error,
    /// A Kafka cluster name is not a DNS-1123 label of at most 63 characters.
    InvalidKafkaClusterName => Error,
    /// A consumer cannot read what a producer of the same topic writes.
    IncompatibleSchema => Error,
    /// (`verify --against`) A consumer cannot read a schema records of its topic were
    /// written with, or a producer's schema breaks its topic's compatibility rule against
    /// the schemas the backplane keeps for it.
    IncompatibleSchemaChange => Error,
    /// A SQL streamlet's query does not parse, names a table or column its inputs do not
    /// have, mixes types that do not fit, uses a construct SQL streamlets do not run, or the
    /// app cannot run SQL. Located at the place in the query. (Runnel addition.)
    InvalidSqlQuery => Error,
    /// A Python streamlet could not be described: its interpreter does not run, its module
    /// does not import, or the reference is not a streamlet. Located at its `python`
    /// reference. (Runnel addition.)
    InvalidPythonStreamlet => Error,
    /// A streamlet type declares a parameter key that is not a valid key.
    InvalidConfigParameterKeyName => Error,
    /// A streamlet type declares the same parameter key twice.
    DuplicateConfigParameterKeyFound => Error,
    /// A `regex-string` parameter's pattern does not compile.
    InvalidValidationPatternConfigParameter => Error,
    /// A parameter's default is not a value of its type.
    InvalidDefaultValueInConfigParameter => Error,
    /// A volume mount name is not a DNS-1123 label of at most 63 characters.
    InvalidVolumeMountName => Error,
    /// A streamlet type declares two volume mounts with the same name.
    DuplicateVolumeMountName => Error,
    /// A streamlet type declares two volume mounts at the same path.
    DuplicateVolumeMountPath => Error,
    /// A volume mount has an empty path.
    EmptyVolumeMountPath => Error,
    /// A volume mount path is not absolute.
    NonAbsoluteVolumeMountPath => Error,
    /// A volume mount path contains a `..` component.
    BacktrackingVolumeMountPath => Error,
    /// (Runnel) The app name is not a DNS-1123 label of at most 63 characters.
    InvalidAppName => Error,
    /// (Runnel) A parameter's range or allowed values make no sense: a range on a kind
    /// without order, a bound that is not a value, `min` above `max`, allowed values on a
    /// kind other than `string`.
    InvalidConfigParameterConstraint => Error,
    /// (Runnel) A streamlet that keeps its state by input partition reads topics declared
    /// with different partition counts, so a partition's keys would not be together.
    InletsNotCoPartitioned => Error,
    /// (Runnel) A topic has no producers: only an external system can write it.
    TopicWithoutProducers => Warning,
    /// (Runnel) A topic has no consumers: only an external system can read it.
    TopicWithoutConsumers => Warning,
    /// (Runnel) A partition count that makes no sense (0, above 10,000, or set on an
    /// unmanaged topic, where it is ignored).
    SuspiciousPartitions => Warning,
    /// (Runnel) A replication factor that makes no sense (0, above 7, or set on an unmanaged
    /// topic, where it is ignored).
    SuspiciousReplication => Warning,
    /// (Runnel) Records can flow from a streamlet back to itself through topics.
    CycleInGraph => Warning,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The error of parsing a [`Code`] from a name that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown problem code '{0}'")]
pub struct UnknownCode(pub String);

impl std::str::FromStr for Code {
    type Err = UnknownCode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.name() == name)
            .ok_or_else(|| UnknownCode(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut names: Vec<_> = Code::ALL.iter().map(|code| code.name()).collect();
        for code in Code::ALL {
            assert_eq!(code.name().parse::<Code>(), Ok(*code));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }

    #[test]
    fn beyond_cloudflow_checks_are_warnings_except_the_app_name() {
        assert_eq!(Code::CycleInGraph.severity(), Severity::Warning);
        assert_eq!(Code::InvalidAppName.severity(), Severity::Error);
        assert_eq!(Code::IncompatibleSchema.severity(), Severity::Error);
    }
}
