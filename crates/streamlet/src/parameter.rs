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
//! assert_eq!(RATE.key(), "records-per-second");
//! ```
//!
//! Values come from the local config file and `--set instance.key=value`; a missing or
//! invalid value stops the run before it starts. Inside the streamlet,
//! [`Context::parameter`](crate::Context::parameter) returns the checked, typed value.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use runnel_blueprint::descriptor::ParameterDescriptor;
use runnel_blueprint::parameter::{ParameterKind, ParameterValue};

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
    _type: PhantomData<fn() -> T>,
}

impl<T> Parameter<T> {
    const fn with_kind(key: &'static str, kind: Kind) -> Self {
        Parameter {
            key,
            description: "",
            kind,
            default: None,
            _type: PhantomData,
        }
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
        ParameterDescriptor {
            key: self.key.to_owned(),
            description: self.description.to_owned(),
            kind: match self.kind {
                Kind::Int => ParameterKind::Int,
                Kind::Double => ParameterKind::Double,
                Kind::Bool => ParameterKind::Bool,
                Kind::String => ParameterKind::String,
                Kind::Regex(pattern) => ParameterKind::RegexString {
                    pattern: pattern.to_owned(),
                },
                Kind::Duration => ParameterKind::Duration,
                Kind::MemorySize => ParameterKind::MemorySize,
            },
            default: self.default.map(str::to_owned),
        }
    }
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
}

impl Parameter<Duration> {
    /// A duration parameter (`250ms`, `5s`, `1m 30s`).
    pub const fn duration(key: &'static str) -> Self {
        Self::with_kind(key, Kind::Duration)
    }
}

impl Parameter<MemorySize> {
    /// A memory size parameter (`1024`, `512k`, `64Mi`, `1G`).
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
