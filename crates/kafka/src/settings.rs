//! [`KafkaSettings`]: librdkafka settings by Kafka's names, with secrets kept out of logs.

use std::collections::BTreeMap;
use std::fmt;

/// What replaces a secret value wherever settings or messages are shown.
pub const REDACTED: &str = "[redacted]";

/// Whether the value of setting `key` is a secret: passwords, secrets, tokens and private
/// keys (`sasl.password`, `ssl.key.password`, `sasl.oauthbearer.client.secret`,
/// `ssl.key.pem`, ...).
///
/// ```
/// assert!(runnel_kafka::is_secret("sasl.password"));
/// assert!(runnel_kafka::is_secret("sasl.oauthbearer.client.secret"));
/// assert!(!runnel_kafka::is_secret("security.protocol"));
/// ```
pub fn is_secret(key: &str) -> bool {
    runnel_blueprint::is_secret_setting(key)
}

/// Kafka client settings (`security.protocol`, `linger.ms`, ...), values as text.
///
/// `Debug` and `Display` show secret values (see [`is_secret`]) as `[redacted]`, and
/// [`redact`](KafkaSettings::redact) removes them from any text, such as an error message of
/// librdkafka that quotes a value.
///
/// ```
/// use runnel_kafka::KafkaSettings;
/// let mut settings = KafkaSettings::new();
/// settings.set("sasl.username", "runnel");
/// settings.set("sasl.password", "hunter2");
/// assert_eq!(settings.to_string(), "sasl.password=[redacted] sasl.username=runnel");
/// assert_eq!(settings.redact("bad value hunter2"), "bad value [redacted]");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KafkaSettings(BTreeMap<String, String>);

impl KafkaSettings {
    /// No settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Every setting of `other` set here too, replacing earlier values.
    pub fn extend(&mut self, other: &BTreeMap<String, String>) {
        for (key, value) in other {
            self.set(key.clone(), value.clone());
        }
    }

    /// Every setting, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `text` with the value of every secret setting replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        self.secrets().fold(text.to_owned(), |text, secret| {
            text.replace(secret, REDACTED)
        })
    }

    /// The secret values, longest first (so a secret containing another is replaced whole).
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &str> {
        let mut secrets: Vec<&str> = self
            .0
            .iter()
            .filter(|(key, value)| is_secret(key) && !value.is_empty())
            .map(|(_, value)| value.as_str())
            .collect();
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.into_iter()
    }
}

impl fmt::Display for KafkaSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (key, value) in &self.0 {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            let shown = if is_secret(key) { REDACTED } else { value };
            write!(f, "{key}={shown}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KafkaSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.0
                    .iter()
                    .map(|(k, v)| (k, if is_secret(k) { REDACTED } else { v.as_str() })),
            )
            .finish()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for KafkaSettings {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        KafkaSettings(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_secret_is_hidden_in_debug_output() {
        let settings: KafkaSettings = [
            ("sasl.password", "p1"),
            ("ssl.key.password", "p2"),
            ("sasl.oauthbearer.client.secret", "p3"),
            ("ssl.key.pem", "p4"),
            ("linger.ms", "5"),
        ]
        .into_iter()
        .collect();
        let shown = format!("{settings:?} {settings}");
        for secret in ["p1", "p2", "p3", "p4"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        assert!(shown.contains("linger.ms"));
    }

    #[test]
    fn redaction_replaces_longer_secrets_whole() {
        let settings: KafkaSettings = [("sasl.password", "abc"), ("ssl.key.password", "abcdef")]
            .into_iter()
            .collect();
        assert_eq!(
            settings.redact("x abcdef y abc"),
            "x [redacted] y [redacted]"
        );
    }
}
