//! [`KafkaConfig`]: where the cluster is and how to talk to it, and the client settings
//! Runnel derives from it for each role.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::ClientConfig;
use runnel_backend::{Isolation, StartFrom};

use crate::KafkaSettings;

/// How to reach a Kafka cluster.
///
/// `settings` apply to every client (admin, producers, consumers): security
/// (`security.protocol`, `sasl.*`, `ssl.*`), timeouts, batching. Per-topic producer and
/// consumer settings from the blueprint come on top for the clients of those topics.
/// Runnel always sets, and never lets settings override, `group.id`,
/// `enable.auto.commit=false`, `enable.auto.offset.store=false` and `transactional.id`.
///
/// ```
/// use runnel_kafka::KafkaConfig;
/// let config = KafkaConfig::new("localhost:9092")
///     .with("security.protocol", "SASL_SSL")
///     .with("sasl.password", "hunter2");
/// assert!(!format!("{config:?}").contains("hunter2"));
/// ```
#[derive(Clone, Debug)]
pub struct KafkaConfig {
    /// The bootstrap servers, `host:port[,host:port...]`.
    pub bootstrap_servers: String,
    /// Settings for every client.
    pub settings: KafkaSettings,
    /// How long admin and metadata requests may take.
    pub request_timeout: Duration,
}

impl KafkaConfig {
    /// The cluster at `bootstrap_servers`, with Runnel's default settings.
    pub fn new(bootstrap_servers: impl Into<String>) -> Self {
        KafkaConfig {
            bootstrap_servers: bootstrap_servers.into(),
            settings: KafkaSettings::new(),
            request_timeout: Duration::from_secs(30),
        }
    }

    /// Adds a setting for every client.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.set(key, value);
        self
    }

    /// The settings of every client of `role`, secrets included (to hand to librdkafka
    /// only). Settings that only apply to the other role are left out, so one `[kafka]`
    /// table can hold both without librdkafka warning about each.
    fn base(&self, role: Role) -> BTreeMap<String, String> {
        let mut settings = BTreeMap::from([
            (
                "bootstrap.servers".to_owned(),
                self.bootstrap_servers.clone(),
            ),
            ("client.id".to_owned(), "runnel".to_owned()),
        ]);
        settings.extend(
            self.settings
                .iter()
                .filter(|(key, _)| role.accepts(key))
                .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        settings
    }

    /// An admin or metadata client.
    pub(crate) fn admin(&self) -> ClientConfig {
        client_config(self.base(Role::Admin), &BTreeMap::new(), &[])
    }

    /// A metadata client that can read the committed offsets of `group`.
    pub(crate) fn group_reader(&self, group: &str) -> ClientConfig {
        let forced = [
            ("group.id", group.to_owned()),
            ("enable.auto.commit", "false".to_owned()),
        ];
        client_config(self.base(Role::Admin), &BTreeMap::new(), &forced)
    }

    /// An idempotent producer (acks=all), or a transactional one with `transactional_id`.
    pub(crate) fn producer(
        &self,
        settings: &BTreeMap<String, String>,
        transactional_id: Option<&str>,
    ) -> ClientConfig {
        let mut base = self.base(Role::Producer);
        base.insert("enable.idempotence".into(), "true".into());
        base.insert("acks".into(), "all".into());
        let forced: Vec<(&str, String)> = transactional_id
            .map(|id| ("transactional.id", id.to_owned()))
            .into_iter()
            .collect();
        client_config(base, settings, &forced)
    }

    /// A member of `group`, static under `static_member` if given; offsets are committed by
    /// Runnel only.
    ///
    /// Unless told otherwise, a member is given up on after 10 s without a heartbeat
    /// (`session.timeout.ms`) instead of librdkafka's 45 s, and heartbeats every second, so
    /// the partitions of a killed process move within seconds. Under KIP-848's
    /// `group.protocol=consumer` the broker owns both settings, and none is set.
    pub(crate) fn consumer(
        &self,
        group: &str,
        start_from: StartFrom,
        settings: &BTreeMap<String, String>,
        static_member: Option<&str>,
    ) -> ClientConfig {
        let mut base = BTreeMap::from([
            ("isolation.level".to_owned(), "read_committed".to_owned()),
            // librdkafka stops fetching a partition for this long once its prefetch queue is
            // full (default 1 s). Runnel's polling thread drains that queue in bursts, as the
            // streamlet makes room, so a second-long stall after every burst would halve
            // throughput; with 10 ms the fetcher is back as soon as there is room.
            ("fetch.queue.backoff.ms".to_owned(), "10".to_owned()),
            // librdkafka's statistics carry each partition's lag as the client sees it,
            // exported as `runnel_client_consumer_lag_records`.
            ("statistics.interval.ms".to_owned(), "1000".to_owned()),
            // A topic deleted and created again (by an administrator, or by Runnel after a
            // broker came back empty) is only assigned again once the consumer refreshes its
            // metadata: every 10 s instead of librdkafka's 5 minutes.
            (
                "topic.metadata.refresh.interval.ms".to_owned(),
                "10000".to_owned(),
            ),
        ]);
        base.extend(self.base(Role::Consumer));
        let broker_run_group = [&base, settings]
            .iter()
            .any(|values| values.get("group.protocol").map(String::as_str) == Some("consumer"));
        if !broker_run_group {
            for (key, value) in GROUP_TIMEOUTS {
                base.entry(key.to_owned())
                    .or_insert_with(|| value.to_owned());
            }
        }
        base.insert(
            "auto.offset.reset".into(),
            match start_from {
                StartFrom::Earliest => "earliest",
                StartFrom::Latest => "latest",
            }
            .into(),
        );
        let mut forced = vec![
            ("group.id", group.to_owned()),
            ("enable.auto.commit", "false".to_owned()),
            ("enable.auto.offset.store", "false".to_owned()),
        ];
        if let Some(name) = static_member {
            forced.push(("group.instance.id", name.to_owned()));
        }
        client_config(base, settings, &forced)
    }

    /// A reader of partitions it assigns itself: it never subscribes, joins or commits.
    /// librdkafka wants a `group.id` to assign partitions, so it gets one that no member
    /// ever joins ([`READER_GROUP`]).
    pub(crate) fn reader(&self, isolation: Isolation) -> ClientConfig {
        let mut base = BTreeMap::from([
            // As for consumers: back to fetching as soon as the reader took what it fetched.
            ("fetch.queue.backoff.ms".to_owned(), "10".to_owned()),
        ]);
        base.extend(self.base(Role::Consumer));
        // Its own settings: a reader reports no lag, and its start is always explicit
        // (records deleted under it move it to the earliest kept one).
        base.remove("statistics.interval.ms");
        for (key, value) in [
            ("isolation.level", isolation.as_str()),
            ("auto.offset.reset", "earliest"),
            ("enable.partition.eof", "false"),
        ] {
            base.insert(key.to_owned(), value.to_owned());
        }
        let forced = [
            ("group.id", READER_GROUP.to_owned()),
            ("enable.auto.commit", "false".to_owned()),
            ("enable.auto.offset.store", "false".to_owned()),
        ];
        client_config(base, &BTreeMap::new(), &forced)
    }
}

/// Runnel's group timeouts, where neither the cluster's nor the topic's settings give them:
/// Kafka's classic-protocol defaults before 3.0 (KIP-735 raised the session timeout to 45 s
/// to ride out network blips in the cloud), with heartbeats at a tenth of the session.
/// A killed member's partitions then move after 10 s instead of 45, and a rebalance is
/// noticed by the other members within a second.
const GROUP_TIMEOUTS: [(&str, &str); 2] = [
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
];

/// The `group.id` of every partition reader: librdkafka needs one to assign partitions;
/// no reader subscribes, joins or commits, so the group never has members or offsets.
pub(crate) const READER_GROUP: &str = "runnel-partition-reader";

/// Which kind of client settings are for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Admin,
    Producer,
    Consumer,
}

/// Settings only consumers understand (librdkafka's CONFIGURATION.md, "C" properties).
const CONSUMER_ONLY: &[&str] = &[
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "auto.offset.reset",
    "isolation.level",
    "partition.assignment.strategy",
    "group.",
    "fetch.",
    "queued.",
    "enable.partition.eof",
    "check.crcs",
    "auto.commit.interval.ms",
    "allow.auto.create.topics",
    "coordinator.query.interval.ms",
    "group.protocol",
    "consume.callback.max.messages",
    // A global property, but only consumers read their statistics (for lag); other clients
    // would log them.
    "statistics.interval.ms",
];

/// Settings only producers understand ("P" properties).
const PRODUCER_ONLY: &[&str] = &[
    "acks",
    "request.required.acks",
    "linger.ms",
    "queue.buffering.",
    "batch.",
    "compression.",
    "enable.idempotence",
    "transaction.timeout.ms",
    "message.timeout.ms",
    "delivery.timeout.ms",
    "retries",
    "message.send.max.retries",
    "retry.backoff",
    "sticky.partitioning.linger.ms",
    "partitioner",
    "enable.gapless.guarantee",
    "request.timeout.ms",
    "queuing.strategy",
];

impl Role {
    fn accepts(self, key: &str) -> bool {
        let matches = |list: &[&str]| {
            list.iter().any(|entry| {
                if entry.ends_with('.') {
                    key.starts_with(entry)
                } else {
                    key == *entry
                }
            })
        };
        match self {
            // The schema registry's settings are Runnel's own, not librdkafka's.
            _ if crate::registry::is_registry_setting(key) => false,
            Role::Admin => !matches(CONSUMER_ONLY) && !matches(PRODUCER_ONLY),
            Role::Producer => !matches(CONSUMER_ONLY),
            Role::Consumer => !matches(PRODUCER_ONLY),
        }
    }
}

/// Defaults, then `settings`, then `forced` (with a warning when `settings` disagreed).
fn client_config(
    mut values: BTreeMap<String, String>,
    settings: &BTreeMap<String, String>,
    forced: &[(&str, String)],
) -> ClientConfig {
    values.extend(settings.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (key, value) in forced {
        if let Some(previous) = values.insert((*key).to_owned(), value.clone())
            && previous != *value
        {
            tracing::warn!(
                "kafka setting '{key}' is managed by runnel; the configured value is ignored"
            );
        }
    }
    let mut config = ClientConfig::new();
    for (key, value) in values {
        config.set(key, value);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnel_owns_the_group_and_offset_settings() {
        let config = KafkaConfig::new("b:9092").with("enable.auto.commit", "true");
        let blueprint = BTreeMap::from([("group.id".to_owned(), "other".to_owned())]);
        let client = config.consumer("app.x.in", StartFrom::Latest, &blueprint, None);
        assert_eq!(client.get("group.id"), Some("app.x.in"));
        assert_eq!(client.get("enable.auto.commit"), Some("false"));
        assert_eq!(client.get("auto.offset.reset"), Some("latest"));
        assert_eq!(client.get("bootstrap.servers"), Some("b:9092"));
    }

    #[test]
    fn members_are_given_up_on_after_ten_seconds_unless_configured_otherwise() {
        let default = KafkaConfig::new("b:9092");
        let client = default.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("session.timeout.ms"), Some("10000"));
        assert_eq!(client.get("heartbeat.interval.ms"), Some("1000"));
        let cluster = default.clone().with("session.timeout.ms", "45000");
        let client = cluster.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("session.timeout.ms"), Some("45000"));
        let topic = BTreeMap::from([("session.timeout.ms".to_owned(), "30000".to_owned())]);
        let client = default.consumer("g", StartFrom::Earliest, &topic, None);
        assert_eq!(client.get("session.timeout.ms"), Some("30000"));
        // The broker runs KIP-848 groups, and librdkafka refuses a member that sets either.
        let broker_run = default.with("group.protocol", "consumer");
        let client = broker_run.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("session.timeout.ms"), None);
        assert_eq!(client.get("heartbeat.interval.ms"), None);
    }

    #[test]
    fn a_static_member_is_named_by_runnel_alone() {
        let config = KafkaConfig::new("b:9092").with("group.instance.id", "mine");
        let client = config.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("group.instance.id"), Some("mine"));
        let client = config.consumer("g", StartFrom::Earliest, &BTreeMap::new(), Some("app.x.0"));
        assert_eq!(client.get("group.instance.id"), Some("app.x.0"));
    }

    #[test]
    fn consumers_refetch_quickly_unless_configured_otherwise() {
        let default = KafkaConfig::new("b:9092");
        let client = default.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("fetch.queue.backoff.ms"), Some("10"));
        assert_eq!(client.get("isolation.level"), Some("read_committed"));
        let configured = default.with("fetch.queue.backoff.ms", "250");
        let client = configured.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        assert_eq!(client.get("fetch.queue.backoff.ms"), Some("250"));
    }

    #[test]
    fn readers_never_commit_and_read_as_told() {
        let config = KafkaConfig::new("b:9092")
            .with("enable.auto.commit", "true")
            .with("isolation.level", "read_committed")
            .with("statistics.interval.ms", "1000");
        let client = config.reader(Isolation::ReadUncommitted);
        assert_eq!(client.get("group.id"), Some(READER_GROUP));
        assert_eq!(client.get("enable.auto.commit"), Some("false"));
        assert_eq!(client.get("isolation.level"), Some("read_uncommitted"));
        assert_eq!(client.get("statistics.interval.ms"), None);
        let client = config.reader(Isolation::ReadCommitted);
        assert_eq!(client.get("isolation.level"), Some("read_committed"));
    }

    #[test]
    fn each_role_gets_only_its_own_settings() {
        let config = KafkaConfig::new("b:9092")
            .with("session.timeout.ms", "6000")
            .with("linger.ms", "20")
            .with("security.protocol", "SASL_SSL");
        let consumer = config.consumer("g", StartFrom::Earliest, &BTreeMap::new(), None);
        let producer = config.producer(&BTreeMap::new(), None);
        let admin = config.admin();
        assert_eq!(consumer.get("session.timeout.ms"), Some("6000"));
        assert_eq!(consumer.get("linger.ms"), None);
        assert_eq!(producer.get("linger.ms"), Some("20"));
        assert_eq!(producer.get("session.timeout.ms"), None);
        assert_eq!(admin.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(admin.get("linger.ms"), None);
    }

    #[test]
    fn blueprint_settings_win_over_cluster_settings() {
        let config = KafkaConfig::new("b:9092").with("linger.ms", "5");
        let topic = BTreeMap::from([("linger.ms".to_owned(), "50".to_owned())]);
        let client = config.producer(&topic, Some("t"));
        assert_eq!(client.get("linger.ms"), Some("50"));
        assert_eq!(client.get("transactional.id"), Some("t"));
        assert_eq!(client.get("enable.idempotence"), Some("true"));
    }
}
