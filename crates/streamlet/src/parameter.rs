//! Typed configuration parameters, declared as constants next to the ports.
//!
//! ```
//! use runnel_streamlet::prelude::*;
//! use std::time::Duration;
//!
//! /// How many readings to generate per second.
//! pub const RATE: Parameter<i64> = Parameter::int("records-per-second")
//!     .describe("readings generated per second")
//!     .default("10");
//! /// How long to wait between flushes.
//! pub const LINGER: Parameter<Duration> = Parameter::duration("linger").default("250ms");
//! /// Sensor ids must look like `sensor-42`.
//! pub const PREFIX: Parameter<String> = Parameter::regex("sensor-id", "sensor-[0-9]+");
//! /// A batch of 1 to 1000 records.
//! pub const BATCH: Parameter<i64> = Parameter::int("batch-size").range(1, 1000).default("100");
//! /// How much to log.
//! pub const LEVEL: Parameter<String> =
//!     Parameter::string("log-level").one_of(&["debug", "info", "warn"]).default("info");
//! assert_eq!(RATE.key(), "records-per-second");
//! ```
//!
//! Values come from the local config file and `--set instance.key=value`; a missing or
//! invalid value, or one outside the parameter's range or allowed values, stops the run
//! before it starts. Inside the streamlet, [`Context::parameter`](crate::Context::parameter)
//! returns the checked, typed value.
//!
//! Durations and memory sizes are written as in HOCON (`500 ms`, `42 m`, `2 minutes`;
//! `512k`, `64MiB`, `1G`, where a single-letter size unit is a power of 1024): see
//! `docs/descriptor.md`.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use runnel_blueprint::descriptor::ParameterDescriptor;
use runnel_blueprint::parameter::{ParameterKind, ParameterValue};

/// A bound of a range, in a form usable in constants.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bound {
    Int(i64),
    Double(f64),
    Duration(Duration),
    MemorySize(u64),
}

impl Bound {
    /// The bound as text in the parameter syntax, as the descriptor carries it.
    fn text(self) -> String {
        match self {
            Bound::Int(value) => ParameterValue::Int(value),
            Bound::Double(value) => ParameterValue::Double(value),
            Bound::Duration(value) => ParameterValue::Duration(value),
            Bound::MemorySize(value) => ParameterValue::MemorySize(value),
        }
        .to_string()
    }
}

/// A number of bytes, the value of a `memory-size` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemorySize(pub u64);

/// The kind of a parameter, in a form usable in constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Double,
    Bool,
    String,
    Regex(&'static str),
    Duration,
    MemorySize,
}

/// A configuration parameter whose value has type `T`.
pub struct Parameter<T> {
    key: &'static str,
    description: &'static str,
    kind: Kind,
    default: Option<&'static str>,
    min: Option<Bound>,
    max: Option<Bound>,
    allowed: &'static [&'static str],
    secret: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T> Parameter<T> {
    const fn with_kind(key: &'static str, kind: Kind) -> Self {
        Parameter {
            key,
            description: "",
            kind,
            default: None,
            min: None,
            max: None,
            allowed: &[],
            secret: false,
            _type: PhantomData,
        }
    }

    /// Marks the value as a secret (a password, a token): it is never shown in errors,
    /// logs or status output, wherever it comes from (the config file, `--set`, or an
    /// environment variable the config file names). A default is part of the code, not a
    /// secret, and is shown by `describe`.
    ///
    /// ```
    /// use runnel_streamlet::Parameter;
    /// const PASSWORD: Parameter<String> = Parameter::string("db-password").secret();
    /// # let _ = PASSWORD;
    /// ```
    pub const fn secret(mut self) -> Self {
        self.secret = true;
        self
    }

    /// Describes what the parameter controls (shown by `describe`).
    pub const fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// The value used when none is set, written as in a config file (`"10"`, `"5s"`,
    /// `"64Mi"`). Without a default the parameter is required.
    pub const fn default(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }

    /// The key users set it by.
    pub const fn key(&self) -> &'static str {
        self.key
    }

    pub(crate) fn descriptor(&self) -> ParameterDescriptor {
        let kind = match self.kind {
            Kind::Int => ParameterKind::Int,
            Kind::Double => ParameterKind::Double,
            Kind::Bool => ParameterKind::Bool,
            Kind::String => ParameterKind::String,
            Kind::Regex(pattern) => ParameterKind::RegexString {
                pattern: pattern.to_owned(),
            },
            Kind::Duration => ParameterKind::Duration,
            Kind::MemorySize => ParameterKind::MemorySize,
        };
        let mut descriptor = ParameterDescriptor::new(self.key, kind);
        descriptor.description = self.description.to_owned();
        descriptor.default = self.default.map(str::to_owned);
        descriptor.min = self.min.map(Bound::text);
        descriptor.max = self.max.map(Bound::text);
        descriptor.allowed_values = self.allowed.iter().map(|v| (*v).to_owned()).collect();
        descriptor.secret = self.secret;
        descriptor
    }
}

/// Ranges for the ordered kinds: `range(min, max)` (inclusive), `at_least`, `at_most`. A
/// value outside stops the run before it starts, naming the streamlet, the key, the value
/// and the range; a default outside is reported by the verifier.
macro_rules! ranges {
    ($($type:ty => |$value:ident| $bound:expr;)*) => {$(
        impl Parameter<$type> {
            /// Allows only values from `min` to `max`, both included.
            pub const fn range(self, min: $type, max: $type) -> Self {
                self.at_least(min).at_most(max)
            }

            /// Allows only values of at least `min`.
            pub const fn at_least(mut self, min: $type) -> Self {
                let $value = min;
                self.min = Some($bound);
                self
            }

            /// Allows only values of at most `max`.
            pub const fn at_most(mut self, max: $type) -> Self {
                let $value = max;
                self.max = Some($bound);
                self
            }
        }
    )*};
}

ranges! {
    i64 => |value| Bound::Int(value);
    f64 => |value| Bound::Double(value);
    Duration => |value| Bound::Duration(value);
    MemorySize => |value| Bound::MemorySize(value.0);
}

impl Parameter<i64> {
    /// An integer parameter.
    pub const fn int(key: &'static str) -> Self {
        Self::with_kind(key, Kind::Int)
    }
}

impl Parameter<f64> {
    /// A floating-point parameter.
    pub const fn double(key: &'static str) -> Self {
        Self::with_kind(key, Kind::Double)
    }
}

impl Parameter<bool> {
    /// A `true`/`false` parameter.
    pub const fn bool(key: &'static str) -> Self {
        Self::with_kind(key, Kind::Bool)
    }
}

impl Parameter<String> {
    /// A text parameter.
    pub const fn string(key: &'static str) -> Self {
        Self::with_kind(key, Kind::String)
    }

    /// A text parameter that the whole of `pattern` must match.
    pub const fn regex(key: &'static str, pattern: &'static str) -> Self {
        Self::with_kind(key, Kind::Regex(pattern))
    }

    /// Allows only these values (for a [`string`](Self::string) parameter; the verifier
    /// refuses allowed values on a regex parameter).
    pub const fn one_of(mut self, allowed: &'static [&'static str]) -> Self {
        self.allowed = allowed;
        self
    }
}

impl Parameter<Duration> {
    /// A duration parameter (`250ms`, `5s`, `42 m`, `2 minutes`, `1m 30s`).
    pub const fn duration(key: &'static str) -> Self {
        Self::with_kind(key, Kind::Duration)
    }
}

impl Parameter<MemorySize> {
    /// A memory size parameter (`1024`, `512k`, `64MiB`, `1G`, `2 GB`; `k`, `M`, `G` are
    /// powers of 1024, `kB`, `MB`, `GB` powers of 1000, as in HOCON).
    pub const fn memory_size(key: &'static str) -> Self {
        Self::with_kind(key, Kind::MemorySize)
    }
}

impl<T> Clone for Parameter<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Parameter<T> {}

impl<T> fmt::Debug for Parameter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parameter")
            .field("key", &self.key)
            .field("kind", &self.kind)
            .field("default", &self.default)
            .field("min", &self.min)
            .field("max", &self.max)
            .field("allowed", &self.allowed)
            .finish()
    }
}

/// Types a parameter value can be read as.
pub trait ParameterType: Sized {
    /// Extracts the value, if it has this type.
    fn from_value(value: &ParameterValue) -> Option<Self>;
}

impl ParameterType for i64 {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::Int(value) => Some(*value),
            _ => None,
        }
    }
}

impl ParameterType for f64 {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::Double(value) => Some(*value),
            _ => None,
        }
    }
}

impl ParameterType for bool {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::Bool(value) => Some(*value),
            _ => None,
        }
    }
}

impl ParameterType for String {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::String(value) => Some(value.clone()),
            _ => None,
        }
    }
}

impl ParameterType for Duration {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::Duration(value) => Some(*value),
            _ => None,
        }
    }
}

impl ParameterType for MemorySize {
    fn from_value(value: &ParameterValue) -> Option<Self> {
        match value {
            ParameterValue::MemorySize(value) => Some(MemorySize(*value)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BATCH: Parameter<i64> = Parameter::int("batch").range(1, 1000).default("100");
    const RATIO: Parameter<f64> = Parameter::double("ratio").at_least(0.0);
    const LINGER: Parameter<Duration> =
        Parameter::duration("linger").at_most(Duration::from_secs(90));
    const BUFFER: Parameter<MemorySize> =
        Parameter::memory_size("buffer").range(MemorySize(1 << 10), MemorySize(64 << 20));
    const LEVEL: Parameter<String> = Parameter::string("level").one_of(&["debug", "info"]);

    #[test]
    fn constraints_reach_the_descriptor_as_text_in_the_parameter_syntax() {
        let batch = BATCH.descriptor();
        assert_eq!(
            (batch.min.as_deref(), batch.max.as_deref()),
            (Some("1"), Some("1000"))
        );
        assert_eq!(RATIO.descriptor().min.as_deref(), Some("0"));
        assert_eq!(RATIO.descriptor().max, None);
        assert_eq!(LINGER.descriptor().max.as_deref(), Some("90s"));
        let buffer = BUFFER.descriptor();
        assert_eq!(
            (buffer.min.as_deref(), buffer.max.as_deref()),
            (Some("1KiB"), Some("64MiB"))
        );
        assert_eq!(LEVEL.descriptor().allowed_values, ["debug", "info"]);
        assert_eq!(batch.constraint_problem(), None);
        assert_eq!(buffer.constraint_problem(), None);
    }

    #[test]
    fn the_descriptor_checks_values_against_the_constraints() {
        assert!(BATCH.descriptor().parse_value("1000").is_ok());
        assert_eq!(
            BATCH.descriptor().parse_value("0"),
            Err("'0' is outside the allowed range 1 to 1000".into())
        );
        assert_eq!(
            LINGER.descriptor().parse_value("2 minutes"),
            Err("'2 minutes' is above the allowed maximum 90s".into())
        );
    }
}
