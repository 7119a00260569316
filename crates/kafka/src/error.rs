//! The errors of this crate, and how librdkafka's errors become backplane errors without
//! leaking secrets.

use std::sync::Arc;

use crate::KafkaSettings;

/// Why a [`KafkaBackend`](crate::KafkaBackend) could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// librdkafka refused the settings of a client.
    #[error("creating the kafka {client} for {bootstrap} failed")]
    Client {
        /// `admin client`, `producer`, ...
        client: &'static str,
        /// The bootstrap servers.
        bootstrap: String,
        /// librdkafka's reason, with secret values redacted.
        #[source]
        source: LibrdkafkaError,
    },
    /// The schema registry settings say something Runnel cannot do.
    #[error("the schema registry settings are not valid")]
    RegistrySettings {
        /// What is wrong.
        #[source]
        source: runnel_backend::Error,
    },
    /// The brokers did not answer a metadata request.
    #[error("connecting to the kafka cluster at {bootstrap} failed")]
    Connect {
        /// The bootstrap servers.
        bootstrap: String,
        /// librdkafka's reason, with secret values redacted.
        #[source]
        source: LibrdkafkaError,
    },
}

/// A librdkafka error as text, with the values of secret settings replaced by
/// `[redacted]`, so it can be logged and shown anywhere.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct LibrdkafkaError {
    message: String,
    /// The librdkafka error code, when there is one.
    code: Option<rdkafka::types::RDKafkaErrorCode>,
}

impl LibrdkafkaError {
    /// The librdkafka error code, when there is one.
    pub fn code(&self) -> Option<rdkafka::types::RDKafkaErrorCode> {
        self.code
    }
}

/// Turns librdkafka errors into redacted [`LibrdkafkaError`]s.
#[derive(Clone, Debug)]
pub(crate) struct Redactor {
    settings: Arc<KafkaSettings>,
}

impl Redactor {
    pub(crate) fn new(settings: Arc<KafkaSettings>) -> Self {
        Redactor { settings }
    }

    /// A redactor that also hides the secrets among `extra` (a client's own settings).
    pub(crate) fn with(&self, extra: &std::collections::BTreeMap<String, String>) -> Redactor {
        if !extra.keys().any(|key| crate::is_secret(key)) {
            return self.clone();
        }
        let mut settings = (*self.settings).clone();
        settings.extend(extra);
        Redactor::new(Arc::new(settings))
    }

    pub(crate) fn error(&self, error: &rdkafka::error::KafkaError) -> LibrdkafkaError {
        LibrdkafkaError {
            message: self.settings.redact(&error.to_string()),
            code: error.rdkafka_error_code(),
        }
    }

    pub(crate) fn boxed(&self, error: &rdkafka::error::KafkaError) -> runnel_backend::BoxError {
        Box::new(self.error(error))
    }

    pub(crate) fn text(&self, text: &str) -> String {
        self.settings.redact(text)
    }
}

/// A cause that is plain text (no librdkafka error behind it).
pub(crate) fn message(text: impl Into<String>) -> runnel_backend::BoxError {
    Box::new(LibrdkafkaError {
        message: text.into(),
        code: None,
    })
}
