//! Topic names and settings: what a [`TopicSpec`] asks for, checked, resolved against the
//! [`LogConfig`] defaults, and kept in the topic's `topic.properties` file.
//!
//! Honoured keys (Kafka's names and meanings):
//!
//! | key | value | default |
//! |---|---|---|
//! | `segment.bytes` | `1..=2147483647` | [`LogConfig::segment_bytes`] |
//! | `retention.bytes` | `-1` (unlimited) or `0..` | [`LogConfig::retention_bytes`] |
//! | `retention.ms` | `-1` (unlimited) or `0..` | [`LogConfig::retention`] |
//! | `cleanup.policy` | only `delete`; compaction is not implemented | `delete` |
//!
//! Other keys (replication, Kafka broker tuning) mean nothing on one machine and are ignored.
//! Only the honoured keys a spec sets are stored, so a topic without an override follows the
//! `LogConfig` it is opened with.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use runnel_backend::TopicSpec;

use crate::LogConfig;
use crate::error::{Error, Result};
use crate::files;

/// The name of a topic's metadata file, inside the topic's directory.
pub(crate) const METADATA_FILE: &str = "topic.properties";
const SEGMENT_BYTES: &str = "segment.bytes";
const RETENTION_BYTES: &str = "retention.bytes";
const RETENTION_MS: &str = "retention.ms";
const CLEANUP_POLICY: &str = "cleanup.policy";

/// What a topic was created with: its partition count and the honoured settings it overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicMetadata {
    pub(crate) partitions: u32,
    pub(crate) overrides: BTreeMap<String, String>,
}

/// The settings a topic runs with: its overrides applied to the log's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopicSettings {
    pub(crate) segment_bytes: u64,
    pub(crate) retention_bytes: Option<u64>,
    pub(crate) retention: Option<Duration>,
}

/// Checks a topic name: Kafka's rules (1 to 249 of `[A-Za-z0-9._-]`, not `.` or `..`), which
/// also make it a safe directory name.
pub(crate) fn check_topic_name(name: &str) -> Result<(), runnel_backend::Error> {
    let problem = if name.is_empty() {
        Some("the name is empty".to_owned())
    } else if name.len() > 249 {
        Some(format!(
            "the name is {} bytes long, at most 249 are allowed",
            name.len()
        ))
    } else if name == "." || name == ".." {
        Some("'.' and '..' are not allowed".to_owned())
    } else {
        name.chars()
            .find(|character| !(character.is_ascii_alphanumeric() || matches!(character, '.' | '_' | '-')))
            .map(|character| {
                format!(
                    "the name contains {character:?}; only letters, digits, '.', '_' and '-' are allowed"
                )
            })
    };
    match problem {
        Some(reason) => Err(runnel_backend::Error::InvalidTopic {
            topic: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

impl TopicMetadata {
    /// Checks a spec and keeps its honoured settings.
    pub(crate) fn from_spec(spec: &TopicSpec) -> Result<Self, runnel_backend::Error> {
        check_topic_name(&spec.name)?;
        let invalid = |reason: String| runnel_backend::Error::InvalidTopic {
            topic: spec.name.clone(),
            reason,
        };
        if spec.partitions == 0 {
            return Err(invalid("a topic needs at least one partition".to_owned()));
        }
        let mut overrides = BTreeMap::new();
        for (key, value) in &spec.config {
            match key.as_str() {
                SEGMENT_BYTES | RETENTION_BYTES | RETENTION_MS => {
                    parse_setting(key, value).map_err(invalid)?;
                    overrides.insert(key.clone(), value.trim().to_owned());
                }
                CLEANUP_POLICY if value.trim() == "delete" => {}
                CLEANUP_POLICY => {
                    return Err(invalid(format!(
                        "setting '{key}' has unsupported value '{value}': the embedded log only deletes old segments ('delete')"
                    )));
                }
                _ => {
                    tracing::debug!(topic = %spec.name, key, "ignoring a topic setting the embedded log does not use")
                }
            }
        }
        Ok(TopicMetadata {
            partitions: spec.partitions,
            overrides,
        })
    }

    /// The settings the topic runs with under `defaults`.
    pub(crate) fn settings(&self, defaults: &LogConfig) -> TopicSettings {
        let mut settings = TopicSettings {
            segment_bytes: defaults.segment_bytes,
            retention_bytes: defaults.retention_bytes,
            retention: defaults.retention,
        };
        for (key, value) in &self.overrides {
            // Overrides were checked when the topic was created or its file was read.
            match parse_setting(key, value) {
                Ok(Setting::SegmentBytes(bytes)) => settings.segment_bytes = bytes,
                Ok(Setting::RetentionBytes(bytes)) => settings.retention_bytes = bytes,
                Ok(Setting::Retention(age)) => settings.retention = age,
                Err(_) => {}
            }
        }
        settings
    }

    /// The contents of `topic.properties`.
    pub(crate) fn to_properties(&self) -> String {
        let mut text = String::from("# runnel embedded log topic, format 1\n");
        text.push_str(&format!("partitions={}\n", self.partitions));
        for (key, value) in &self.overrides {
            text.push_str(&format!("{key}={value}\n"));
        }
        text
    }

    /// Reads `topic.properties` from a topic directory.
    pub(crate) fn load(directory: &Path) -> Result<Self> {
        let path = directory.join(METADATA_FILE);
        let corrupt = |problem: String| Error::CorruptMetadata {
            path: path.clone(),
            problem,
        };
        let bytes = files::read_if_exists(&path)?
            .ok_or_else(|| corrupt("the file is missing".to_owned()))?;
        let text =
            String::from_utf8(bytes).map_err(|_| corrupt("the file is not UTF-8".to_owned()))?;
        let mut partitions = None;
        let mut overrides = BTreeMap::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(corrupt(format!("line {} is not 'key=value'", number + 1)));
            };
            if key == "partitions" {
                let count: u32 =
                    value
                        .parse()
                        .ok()
                        .filter(|count| *count > 0)
                        .ok_or_else(|| {
                            corrupt(format!(
                                "line {}: invalid partition count '{value}'",
                                number + 1
                            ))
                        })?;
                partitions = Some(count);
            } else {
                parse_setting(key, value)
                    .map_err(|reason| corrupt(format!("line {}: {reason}", number + 1)))?;
                overrides.insert(key.to_owned(), value.to_owned());
            }
        }
        let partitions =
            partitions.ok_or_else(|| corrupt("the partition count is missing".to_owned()))?;
        Ok(TopicMetadata {
            partitions,
            overrides,
        })
    }

    /// Writes `topic.properties` into a topic directory, crash-safely.
    pub(crate) fn store(&self, directory: &Path) -> Result<()> {
        files::replace_file(
            &directory.join(METADATA_FILE),
            self.to_properties().as_bytes(),
        )
    }
}

/// One honoured setting, parsed.
#[derive(Debug, PartialEq, Eq)]
enum Setting {
    SegmentBytes(u64),
    RetentionBytes(Option<u64>),
    Retention(Option<Duration>),
}

/// Parses a value of one of the honoured keys; the error names key and value.
fn parse_setting(key: &str, value: &str) -> Result<Setting, String> {
    let number: Option<i64> = value.trim().parse().ok();
    let invalid = |expected: &str| {
        format!("setting '{key}' has invalid value '{value}': expected {expected}")
    };
    match key {
        SEGMENT_BYTES => match number {
            Some(bytes) if (1..=LogConfig::MAX_SEGMENT_BYTES as i64).contains(&bytes) => {
                Ok(Setting::SegmentBytes(bytes as u64))
            }
            _ => Err(invalid("a byte count from 1 to 2147483647")),
        },
        RETENTION_BYTES => match number {
            Some(-1) => Ok(Setting::RetentionBytes(None)),
            Some(bytes) if bytes >= 0 => Ok(Setting::RetentionBytes(Some(bytes as u64))),
            _ => Err(invalid("-1 (unlimited) or a byte count")),
        },
        RETENTION_MS => match number {
            Some(-1) => Ok(Setting::Retention(None)),
            Some(millis) if millis >= 0 => Ok(Setting::Retention(Some(Duration::from_millis(
                millis as u64,
            )))),
            _ => Err(invalid("-1 (unlimited) or milliseconds")),
        },
        _ => Err(format!("unknown setting '{key}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_defaults_and_survive_the_file() {
        let spec = TopicSpec::new("t", 2)
            .with_config("segment.bytes", "1024")
            .with_config("retention.ms", "-1")
            .with_config("min.insync.replicas", "2");
        let metadata = TopicMetadata::from_spec(&spec).unwrap();
        let settings = metadata.settings(&LogConfig::default());
        assert_eq!(settings.segment_bytes, 1024);
        assert_eq!(settings.retention, None);
        assert_eq!(settings.retention_bytes, None);

        let directory = tempfile::tempdir().unwrap();
        metadata.store(directory.path()).unwrap();
        assert_eq!(TopicMetadata::load(directory.path()).unwrap(), metadata);
    }

    #[test]
    fn malformed_values_are_refused_naming_key_and_value() {
        for (key, value) in [
            ("segment.bytes", "0"),
            ("segment.bytes", "lots"),
            ("retention.ms", "-2"),
            ("retention.bytes", "1.5"),
            ("cleanup.policy", "compact"),
        ] {
            let spec = TopicSpec::new("t", 1).with_config(key, value);
            let error = TopicMetadata::from_spec(&spec).unwrap_err().to_string();
            assert!(error.contains(key) && error.contains(value), "{error}");
        }
    }

    #[test]
    fn names_follow_kafka_rules() {
        assert!(check_topic_name("sensor-data.v1_2").is_ok());
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(250)] {
            assert!(check_topic_name(bad).is_err(), "{bad:?}");
        }
    }
}
