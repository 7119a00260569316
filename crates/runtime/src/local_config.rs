//! [`LocalConfig`]: parameter values for a run, from a config file and `--set`.
//!
//! The file is TOML, one table per streamlet instance:
//!
//! ```toml
//! [streamlets.generator]
//! records-per-second = 100
//! count = 1000
//!
//! [streamlets.validate]
//! max-celsius = 150.0
//! ```
//!
//! Values may be strings, integers, floats or booleans; they are checked against each
//! parameter's kind before anything starts. `--set generator.count=10` overrides the file.
//!
//! A `[kafka]` table holds Kafka client settings for runs with `--kafka` (librdkafka's
//! names; quote dotted keys or not):
//!
//! ```toml
//! [kafka]
//! "security.protocol" = "SASL_SSL"
//! linger.ms = 20
//! "sasl.password" = "${KAFKA_PASSWORD}"
//! ```
//!
//! `${NAME}` in a string value is replaced by the environment variable `NAME`, so secrets
//! need not be written in the file. An error in the file is reported by position, never by
//! quoting the line: it may hold a secret.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a config file or a `--set` could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file is not valid TOML or has an unexpected shape.
    #[error("invalid config file {}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The line, the column and the parser's message, without the text of the line or
        /// any quoted value (either may be a secret).
        message: String,
    },
    /// A value names an environment variable that is not set.
    #[error("invalid config file {}: {key} uses the environment variable {name}, which is not set", path.display())]
    MissingVariable {
        /// The file.
        path: PathBuf,
        /// Where: `instance.key`, or `kafka.setting`.
        key: String,
        /// The variable.
        name: String,
    },
    /// A value is an array or a table.
    #[error("invalid config file {}: {instance}.{key} must be a string, number or boolean", path.display())]
    ValueType {
        /// The file.
        path: PathBuf,
        /// The streamlet instance.
        instance: String,
        /// The key.
        key: String,
    },
    /// A `--set` that is not `instance.key=value`.
    #[error("--set expects instance.key=value, got '{0}'")]
    Assignment(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    streamlets: BTreeMap<String, BTreeMap<String, toml::Value>>,
    #[serde(default)]
    kafka: BTreeMap<String, toml::Value>,
}

/// Parameter values per streamlet instance, as text.
///
/// ```
/// use runnel_runtime::LocalConfig;
/// let mut config = LocalConfig::parse(std::path::Path::new("local.toml"), "[streamlets.gen]\ncount = 5\n")?;
/// config.set("gen.count=7")?;
/// assert_eq!(config.values_for("gen")["count"], "7");
/// # Ok::<(), runnel_runtime::ConfigError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LocalConfig {
    values: BTreeMap<String, BTreeMap<String, String>>,
    kafka: BTreeMap<String, String>,
}

impl std::fmt::Debug for LocalConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be secrets; show the keys only.
        let keys: BTreeMap<&String, Vec<&String>> = self
            .values
            .iter()
            .map(|(instance, values)| (instance, values.keys().collect()))
            .collect();
        f.debug_struct("LocalConfig")
            .field("values", &keys)
            .field("kafka", &self.kafka.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl LocalConfig {
    /// Reads the text of a config file; `path` is for messages.
    ///
    /// # Errors
    ///
    /// When the text is not TOML of the shape above.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|error| ConfigError::File {
            path: path.to_owned(),
            message: without_text(text, &error),
        })?;
        let mut values = BTreeMap::new();
        for (instance, keys) in file.streamlets {
            let mut texts = BTreeMap::new();
            for (key, value) in keys {
                let text = match value {
                    toml::Value::String(text) => {
                        expand(&text, || format!("{instance}.{key}"), path)?
                    }
                    toml::Value::Integer(number) => number.to_string(),
                    toml::Value::Float(number) => number.to_string(),
                    toml::Value::Boolean(flag) => flag.to_string(),
                    toml::Value::Datetime(datetime) => datetime.to_string(),
                    toml::Value::Array(_) | toml::Value::Table(_) => {
                        return Err(ConfigError::ValueType {
                            path: path.to_owned(),
                            instance,
                            key,
                        });
                    }
                };
                texts.insert(key, text);
            }
            values.insert(instance, texts);
        }
        let mut kafka = BTreeMap::new();
        flatten(path, "", file.kafka, &mut kafka)?;
        Ok(LocalConfig { values, kafka })
    }

    /// Puts `later` over this config: its values win key by key, the rest stays. A pod
    /// reads its public and its secret configuration as two files this way.
    ///
    /// ```
    /// use std::path::Path;
    /// use runnel_runtime::LocalConfig;
    /// let mut config = LocalConfig::parse(Path::new("a.toml"), "[streamlets.g]\ncount = 5\nrate = 1\n")?;
    /// config.merge(LocalConfig::parse(Path::new("b.toml"), "[streamlets.g]\ncount = 7\n[kafka]\n\"sasl.password\" = \"pw\"\n")?);
    /// assert_eq!((config.values_for("g")["count"].as_str(), config.values_for("g")["rate"].as_str()), ("7", "1"));
    /// assert_eq!(config.kafka_settings()["sasl.password"], "pw");
    /// # Ok::<(), runnel_runtime::ConfigError>(())
    /// ```
    pub fn merge(&mut self, later: LocalConfig) {
        for (instance, values) in later.values {
            self.values.entry(instance).or_default().extend(values);
        }
        self.kafka.extend(later.kafka);
    }

    /// Kafka client settings from the `[kafka]` table, keys with Kafka's dotted names.
    pub fn kafka_settings(&self) -> &BTreeMap<String, String> {
        &self.kafka
    }

    /// Applies one `instance.key=value` assignment.
    ///
    /// # Errors
    ///
    /// When the assignment does not have that form.
    pub fn set(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let malformed = || ConfigError::Assignment(assignment.to_owned());
        let (path, value) = assignment.split_once('=').ok_or_else(malformed)?;
        let (instance, key) = path.trim().split_once('.').ok_or_else(malformed)?;
        if instance.is_empty() || key.is_empty() {
            return Err(malformed());
        }
        self.values
            .entry(instance.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// The values given for one instance.
    pub fn values_for(&self, instance: &str) -> BTreeMap<String, String> {
        self.values.get(instance).cloned().unwrap_or_default()
    }

    /// The instances that have values.
    pub fn instances(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

/// `text` with every `${NAME}` replaced by the environment variable `NAME`.
fn expand(text: &str, key: impl Fn() -> String, path: &Path) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + length];
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..start]);
        if valid {
            let value = std::env::var(name).map_err(|_| ConfigError::MissingVariable {
                path: path.to_owned(),
                key: key(),
                name: name.to_owned(),
            })?;
            out.push_str(&value);
        } else {
            out.push_str(&rest[start..start + 3 + length]);
        }
        rest = &rest[start + 3 + length..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The parser's complaint about `text`, by line and column, with quoted parts (values that
/// may be secrets) left out and without the line itself.
fn without_text(text: &str, error: &toml::de::Error) -> String {
    let mut message = String::new();
    let mut quoted = false;
    for part in error.message().split(['"', '`']) {
        if !quoted {
            message.push_str(part);
        } else {
            message.push('…');
        }
        quoted = !quoted;
    }
    let message = message.trim().trim_end_matches('.').to_owned();
    match error.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Flattens a TOML table into dotted keys (`[kafka] linger.ms = 5` is a nested table in
/// TOML; it means the setting `linger.ms`).
fn flatten(
    path: &Path,
    prefix: &str,
    table: BTreeMap<String, toml::Value>,
    into: &mut BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    for (key, value) in table {
        let key = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        let text = match value {
            toml::Value::String(text) => expand(&text, || format!("kafka.{key}"), path)?,
            toml::Value::Integer(number) => number.to_string(),
            toml::Value::Float(number) => number.to_string(),
            toml::Value::Boolean(flag) => flag.to_string(),
            toml::Value::Datetime(datetime) => datetime.to_string(),
            toml::Value::Table(nested) => {
                flatten(path, &key, nested.into_iter().collect(), into)?;
                continue;
            }
            toml::Value::Array(_) => {
                return Err(ConfigError::ValueType {
                    path: path.to_owned(),
                    instance: "kafka".to_owned(),
                    key,
                });
            }
        };
        into.insert(key, text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_booleans_become_text() {
        let text = "[streamlets.g]\nrate = 1.5\non = true\nname = \"x\"\n";
        let config = LocalConfig::parse(Path::new("c.toml"), text).unwrap();
        let values = config.values_for("g");
        assert_eq!(
            (
                values["rate"].as_str(),
                values["on"].as_str(),
                values["name"].as_str()
            ),
            ("1.5", "true", "x")
        );
    }

    #[test]
    fn values_name_environment_variables() {
        // Variables set by the test harness for this process: PATH and HOME.
        let text =
            "[kafka]\n\"sasl.password\" = \"${HOME}\"\n[streamlets.g]\nx = \"a${HOME}b$${z\"\n";
        let config = LocalConfig::parse(Path::new("c.toml"), text).unwrap();
        let home = std::env::var("HOME").unwrap();
        assert_eq!(config.kafka_settings()["sasl.password"], home);
        assert_eq!(config.values_for("g")["x"], format!("a{home}b$${{z"));
        let missing = LocalConfig::parse(
            Path::new("c.toml"),
            "[kafka]\n\"sasl.password\" = \"${RUNNEL_SURELY_UNSET_VARIABLE}\"\n",
        )
        .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "invalid config file c.toml: kafka.sasl.password uses the environment variable RUNNEL_SURELY_UNSET_VARIABLE, which is not set"
        );
    }

    #[test]
    fn kafka_settings_take_quoted_and_dotted_keys() {
        let text = "[kafka]\n\"security.protocol\" = \"SASL_SSL\"\nlinger.ms = 20\n";
        let config = LocalConfig::parse(Path::new("c.toml"), text).unwrap();
        let settings = config.kafka_settings();
        assert_eq!(settings["security.protocol"], "SASL_SSL");
        assert_eq!(settings["linger.ms"], "20");
    }

    #[test]
    fn bad_files_and_assignments_say_where() {
        let error = LocalConfig::parse(Path::new("c.toml"), "[streamlet.g]\n").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid config file c.toml: "),
            "{error}"
        );
        let error =
            LocalConfig::parse(Path::new("c.toml"), "[streamlets.g]\nx = [1]\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid config file c.toml: g.x must be a string, number or boolean"
        );
        let error = LocalConfig::parse(
            Path::new("c.toml"),
            "[kafka]\n\"sasl.password\" = \"canary-hunter2\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("invalid config file c.toml: line 2, column "),
            "{error}"
        );
        assert!(!error.contains("canary"), "{error}");
        let error = LocalConfig::parse(
            Path::new("c.toml"),
            "[streamlets.g]\npassword = { nested = \"canary-hunter2\" }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(!error.contains("canary"), "{error}");
        let mut config = LocalConfig::default();
        assert!(config.set("no-dot=1").is_err());
        assert!(config.set("g.x").is_err());
        config.set("g.url=http://h/?a=b").unwrap();
        assert_eq!(config.values_for("g")["url"], "http://h/?a=b");
    }
}
