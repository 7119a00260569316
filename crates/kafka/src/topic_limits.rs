//! [`TopicLimits`]: each topic's `max.message.bytes`, so a record too large for its topic is
//! refused when it is sent (and its input handled as bad data) instead of failing later in
//! the broker, where the delivery report cannot tell which input it came from.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Changes whenever a topic's limit is forgotten, so the producers' own caches
    /// ([`Targets`](crate::targets::Targets)) know to look again.
    generation: AtomicU64,
}

/// What is known of a topic's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// The largest record batch the topic accepts.
    Limit(usize),
    /// The broker did not say; ask again after this moment.
    Unknown {
        /// When to ask again.
        until: Instant,
    },
}

impl TopicLimits {
    pub(crate) fn new(admin: Arc<AdminClient<LogContext>>, timeout: Duration) -> Self {
        TopicLimits {
            admin,
            timeout,
            known: Mutex::default(),
            generation: AtomicU64::new(0),
        }
    }

    /// The largest record batch `topic` accepts, when the broker says; else until when it
    /// goes unchecked. When that time comes, the topic is forgotten (and the generation
    /// changes), so producers that cached the answer ask again without reading the clock
    /// for every record.
    pub(crate) async fn max_record_bytes(self: &Arc<Self>, topic: &str) -> Known {
        let cached = self.lock().get(topic).copied();
        match cached {
            Some(Known::Unknown { until }) if Instant::now() >= until => {}
            Some(known) => return known,
            None => {}
        }
        let known = match self.describe(topic).await {
            Some(limit) => Known::Limit(limit),
            None => {
                let limits = Arc::downgrade(self);
                let name = topic.to_owned();
                let due = tokio::time::Instant::now() + RETRY_AFTER;
                tokio::spawn(async move {
                    tokio::time::sleep_until(due).await;
                    if let Some(limits) = limits.upgrade() {
                        limits.forget_unknown(&name);
                    }
                });
                Known::Unknown {
                    until: Instant::now() + RETRY_AFTER,
                }
            }
        };
        self.lock().insert(topic.to_owned(), known);
        known
    }

    /// Forgets `topic` if its limit is still unknown, so it is asked for again.
    fn forget_unknown(&self, topic: &str) {
        let mut known = self.lock();
        if let Some(Known::Unknown { .. }) = known.get(topic) {
            known.remove(topic);
            drop(known);
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Forgets what is known of `topic` (it was created again, perhaps with other settings).
    pub(crate) fn forget(&self, topic: &str) {
        self.lock().remove(topic);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Changes whenever a topic's limit is forgotten.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
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
