//! The librdkafka client context: its log lines and errors go to `tracing`, redacted.

use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;

use crate::error::Redactor;

/// Routes librdkafka's logs and errors to `tracing`, with secret values redacted.
#[derive(Clone, Debug)]
pub(crate) struct LogContext {
    pub(crate) redactor: Redactor,
}

impl ClientContext for LogContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        log(&self.redactor, level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        report_error(&self.redactor, &error, reason);
    }
}

/// Metadata and offset readers never join a group; the default hooks do.
impl ConsumerContext for LogContext {}

pub(crate) fn log(redactor: &Redactor, level: RDKafkaLogLevel, facility: &str, message: &str) {
    let message = redactor.text(message);
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => tracing::error!(facility, "librdkafka: {message}"),
        RDKafkaLogLevel::Warning => tracing::warn!(facility, "librdkafka: {message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            tracing::debug!(facility, "librdkafka: {message}");
        }
        RDKafkaLogLevel::Debug => tracing::trace!(facility, "librdkafka: {message}"),
    }
}

pub(crate) fn report_error(redactor: &Redactor, error: &KafkaError, reason: &str) {
    // librdkafka retries by itself; these are worth a warning, not a failure.
    tracing::warn!(
        "kafka client error: {}: {}",
        redactor.error(error),
        redactor.text(reason)
    );
}
