//! [`TopicLimits`]: each topic's `max.message.bytes`, so a record too large for its topic is
//! refused when it is sent (and its input handled as bad data) instead of failing later in
//! the broker, where the delivery report cannot tell which input it came from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};

use crate::context::LogContext;

/// How long a topic whose settings could not be read goes unchecked before they are asked
/// for again.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// The record batch header every Kafka record is written in (v2 format), which
/// `max.message.bytes` counts too.
pub(crate) const BATCH_OVERHEAD: usize = 61;

/// The `max.message.bytes` of each topic written, read once with DescribeConfigs.
pub(crate) struct TopicLimits {
    admin: Arc<AdminClient<LogContext>>,
    timeout: Duration,
    known: Mutex<HashMap<String, Known>>,
}

#[derive(Clone, Copy)]
enum Known {
    Limit(usize),
    /// The broker did not say; ask again after this moment.
    Unknown {
        until: Instant,
    },
}

impl TopicLimits {
    pub(crate) fn new(admin: Arc<AdminClient<LogContext>>, timeout: Duration) -> Self {
        TopicLimits {
            admin,
            timeout,
            known: Mutex::default(),
        }
    }

    /// The largest record batch `topic` accepts, when the broker says.
    pub(crate) async fn max_record_bytes(&self, topic: &str) -> Option<usize> {
        let cached = self.lock().get(topic).copied();
        match cached {
            Some(Known::Limit(limit)) => return Some(limit),
            Some(Known::Unknown { until }) if Instant::now() < until => return None,
            _ => {}
        }
        let found = self.describe(topic).await;
        let known = match found {
            Some(limit) => Known::Limit(limit),
            None => Known::Unknown {
                until: Instant::now() + RETRY_AFTER,
            },
        };
        self.lock().insert(topic.to_owned(), known);
        found
    }

    /// Forgets what is known of `topic` (it was created again, perhaps with other settings).
    pub(crate) fn forget(&self, topic: &str) {
        self.lock().remove(topic);
    }

    async fn describe(&self, topic: &str) -> Option<usize> {
        let options = AdminOptions::new().request_timeout(Some(self.timeout));
        let results = self
            .admin
            .describe_configs([&ResourceSpecifier::Topic(topic)], &options)
            .await
            .ok()?;
        let resource = results.into_iter().next()?.ok()?;
        resource
            .get("max.message.bytes")?
            .value
            .as_deref()?
            .parse()
            .ok()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
