//! Configuration parameter types and how their values are written.
//!
//! Values are text in every source (descriptor defaults, config files, `--set`), parsed
//! according to the parameter's [`ParameterKind`]:
//!
//! | kind | examples |
//! |---|---|
//! | `int` | `10`, `-3` |
//! | `double` | `0.5`, `1e3` |
//! | `bool` | `true`, `false` |
//! | `string` | anything |
//! | `regex-string` | anything the whole pattern matches |
//! | `duration` | `250ms`, `5s`, `42 m`, `2 minutes`, `3 days`, `1m 30s`; a bare number is milliseconds |
//! | `memory-size` | `1024`, `512k`, `64MiB`, `1G`, `2 GB`; a bare number is bytes |
//!
//! Durations and memory sizes are read as HOCON (Lightbend Config, which Cloudflow used)
//! reads them, with HOCON's units and meanings: a single-letter size unit (`k`, `M`, `G`,
//! `T`) is a power of 1024, as in `java -Xmx2G`; `kB`, `MB`, `GB`, `TB` are powers of 1000;
//! `KiB`, `MiB`... powers of 1024. The full lists are in `docs/descriptor.md`.
//!
//! A parameter may also declare a range (`min`, `max`) or allowed values; see
//! [`ParameterDescriptor::parse_value`](crate::descriptor::ParameterDescriptor::parse_value).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::{format_duration, format_memory_size, parse_duration, parse_memory_size};

/// The type of a parameter, with its validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ParameterKind {
    /// A 64-bit signed integer.
    Int,
    /// A 64-bit float.
    Double,
    /// `true` or `false`.
    Bool,
    /// Any text.
    String,
    /// Text that the whole of `pattern` matches.
    RegexString {
        /// The regular expression (Rust `regex` syntax), anchored at both ends when checked.
        pattern: String,
    },
    /// A span of time.
    Duration,
    /// A number of bytes.
    MemorySize,
}

impl ParameterKind {
    /// The name used in the descriptor and in messages.
    pub fn name(&self) -> &'static str {
        match self {
            ParameterKind::Int => "int",
            ParameterKind::Double => "double",
            ParameterKind::Bool => "bool",
            ParameterKind::String => "string",
            ParameterKind::RegexString { .. } => "regex-string",
            ParameterKind::Duration => "duration",
            ParameterKind::MemorySize => "memory-size",
        }
    }

    /// Parses a value written as text.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_blueprint::parameter::{ParameterKind, ParameterValue};
    /// assert_eq!(ParameterKind::MemorySize.parse("64Mi"), Ok(ParameterValue::MemorySize(64 << 20)));
    /// assert_eq!(ParameterKind::Duration.parse("42 m"), Ok(ParameterValue::Duration(Duration::from_secs(42 * 60))));
    /// assert!(ParameterKind::Int.parse("ten").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A lowercase reason when the text is not a value of this kind (or the pattern of a
    /// regex string does not compile).
    pub fn parse(&self, text: &str) -> Result<ParameterValue, String> {
        let trimmed = text.trim();
        match self {
            ParameterKind::Int => trimmed
                .parse()
                .map(ParameterValue::Int)
                .map_err(|_| format!("'{text}' is not an integer")),
            ParameterKind::Double => trimmed
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite())
                .map(ParameterValue::Double)
                .ok_or_else(|| format!("'{text}' is not a finite number")),
            ParameterKind::Bool => match trimmed {
                "true" => Ok(ParameterValue::Bool(true)),
                "false" => Ok(ParameterValue::Bool(false)),
                _ => Err(format!("'{text}' is not true or false")),
            },
            ParameterKind::String => Ok(ParameterValue::String(text.to_owned())),
            ParameterKind::RegexString { pattern } => {
                let anchored = compile_pattern(pattern)?;
                if anchored.is_match(text) {
                    Ok(ParameterValue::String(text.to_owned()))
                } else {
                    Err(format!("'{text}' does not match the pattern '{pattern}'"))
                }
            }
            ParameterKind::Duration => parse_duration(text).map(ParameterValue::Duration),
            ParameterKind::MemorySize => parse_memory_size(text).map(ParameterValue::MemorySize),
        }
    }

    /// Whether values of this kind are ordered, so a range (`min`, `max`) applies.
    pub fn is_ordered(&self) -> bool {
        matches!(
            self,
            ParameterKind::Int
                | ParameterKind::Double
                | ParameterKind::Duration
                | ParameterKind::MemorySize
        )
    }
}

/// A parsed parameter value.
///
/// `Display` writes it in the parameter syntax, so that it parses back to the same value
/// (`90s`, `64MiB`).
///
/// ```
/// use std::time::Duration;
/// use runnel_blueprint::parameter::ParameterValue;
/// assert_eq!(ParameterValue::Duration(Duration::from_secs(90)).to_string(), "90s");
/// assert_eq!(ParameterValue::MemorySize(64 << 20).to_string(), "64MiB");
/// assert!(ParameterValue::Int(3) < ParameterValue::Int(4));
/// assert_eq!(ParameterValue::Int(3).partial_cmp(&ParameterValue::Double(4.0)), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum ParameterValue {
    /// An `int`.
    Int(i64),
    /// A `double`.
    Double(f64),
    /// A `bool`.
    Bool(bool),
    /// A `string` or `regex-string`.
    String(String),
    /// A `duration`.
    Duration(Duration),
    /// A `memory-size`, in bytes.
    MemorySize(u64),
}

impl std::fmt::Display for ParameterValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParameterValue::Int(value) => write!(f, "{value}"),
            ParameterValue::Double(value) => write!(f, "{value}"),
            ParameterValue::Bool(value) => write!(f, "{value}"),
            ParameterValue::String(value) => f.write_str(value),
            ParameterValue::Duration(value) => f.write_str(&format_duration(*value)),
            ParameterValue::MemorySize(value) => f.write_str(&format_memory_size(*value)),
        }
    }
}

/// Values of one ordered kind compare; values of different kinds, booleans and strings do
/// not.
impl PartialOrd for ParameterValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (ParameterValue::Int(a), ParameterValue::Int(b)) => a.partial_cmp(b),
            (ParameterValue::Double(a), ParameterValue::Double(b)) => a.partial_cmp(b),
            (ParameterValue::Duration(a), ParameterValue::Duration(b)) => a.partial_cmp(b),
            (ParameterValue::MemorySize(a), ParameterValue::MemorySize(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

/// The most memory a compiled validation pattern may take. Generous on purpose: patterns such
/// as `^.{1,65535}$` are valid and common, and the `regex` crate's default limit (10 MiB)
/// refuses them.
const PATTERN_SIZE_LIMIT: usize = 1 << 30;

/// Compiles a validation pattern, anchored at both ends.
///
/// Compiled patterns are remembered for the life of the process (up to
/// [`PATTERN_CACHE_CAPACITY`] of them): a large bounded repetition takes a noticeable time to
/// compile, and a descriptor's pattern is checked once for itself and again for every value.
///
/// # Errors
///
/// A lowercase reason naming the pattern when it does not compile.
pub fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Result<regex::Regex, String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(compiled) = cache
        .lock()
        .ok()
        .and_then(|cache| cache.get(pattern).cloned())
    {
        return compiled;
    }
    // Compiled outside the lock, so other patterns are not held up behind a slow one.
    let compiled = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|error| {
            // A syntax error's text spans several lines (the pattern with a caret under the
            // problem); the last one says what is wrong.
            let text = error.to_string();
            let reason = text.lines().last().unwrap_or_default().trim();
            let reason = reason.strip_prefix("error: ").unwrap_or(reason);
            format!("the pattern '{pattern}' does not compile: {reason}")
        });
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= PATTERN_CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), compiled.clone());
    }
    compiled
}

/// How many compiled patterns [`compile_pattern`] keeps.
pub const PATTERN_CACHE_CAPACITY: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_use_hocon_units() {
        let parse = |text| ParameterKind::MemorySize.parse(text);
        assert_eq!(parse("1024"), Ok(ParameterValue::MemorySize(1024)));
        assert_eq!(parse("512k"), Ok(ParameterValue::MemorySize(512 << 10)));
        assert_eq!(parse("2GiB"), Ok(ParameterValue::MemorySize(2 << 30)));
        assert_eq!(parse("1 G"), Ok(ParameterValue::MemorySize(1 << 30)));
        assert_eq!(parse("1 GB"), Ok(ParameterValue::MemorySize(1_000_000_000)));
        assert!(parse("12 parsecs").is_err());
        assert!(
            parse("99999999999999Ti").is_err(),
            "overflow is an error, not a wrap"
        );
    }

    #[test]
    fn regex_strings_must_match_whole() {
        let kind = ParameterKind::RegexString {
            pattern: "[a-z]+".into(),
        };
        assert!(kind.parse("abc").is_ok());
        assert!(kind.parse("abc1").is_err());
        let large = ParameterKind::RegexString {
            pattern: ".{1,65535}".into(),
        };
        assert!(
            large.parse("x").is_ok(),
            "large bounded repetitions are valid patterns"
        );
    }

    #[test]
    fn durations_accept_human_forms() {
        let parse = |text| ParameterKind::Duration.parse(text);
        assert_eq!(
            parse("1m 30s"),
            Ok(ParameterValue::Duration(Duration::from_secs(90)))
        );
        assert_eq!(
            parse("250ms"),
            Ok(ParameterValue::Duration(Duration::from_millis(250)))
        );
        assert_eq!(
            parse("2 minutes"),
            Ok(ParameterValue::Duration(Duration::from_secs(120)))
        );
        assert_eq!(
            parse("soon"),
            Err("'soon' is not a duration (write it like 250ms, 5s or 1m 30s)".into())
        );
    }

    #[test]
    fn doubles_and_bools() {
        assert_eq!(
            ParameterKind::Double.parse("0.5"),
            Ok(ParameterValue::Double(0.5))
        );
        assert!(ParameterKind::Double.parse("NaN").is_err());
        assert_eq!(
            ParameterKind::Bool.parse("true"),
            Ok(ParameterValue::Bool(true))
        );
        assert!(ParameterKind::Bool.parse("yes").is_err());
    }
}
