//! Which configuration values are secrets.

/// What replaces a secret value wherever configuration is shown.
pub const MASK: &str = "[redacted]";

/// Whether the value of the setting, parameter or environment variable `key` is a secret:
/// its name says password, secret, token, credential or private key (`sasl.password`,
/// `ssl.key.pem`, `api-token`, `DB_PASSWORD`). The same rule as the Kafka backplane's
/// (`runnel_kafka::is_secret`), which redacts such settings from its logs; it is repeated
/// here so that app binaries and the CLI need not link librdkafka to apply it.
///
/// ```
/// use runnel_application::is_secret;
/// assert!(is_secret("sasl.password"));
/// assert!(is_secret("DB_PASSWORD"));
/// assert!(is_secret("api-token"));
/// assert!(!is_secret("security.protocol"));
/// ```
pub fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "secret",
        "token",
        "credential",
        "key.pem",
        "oauthbearer.config",
    ]
    .iter()
    .any(|word| key.contains(word))
}
