//! Running the app on a test broker (Apache Kafka or tansu) and reading its topics with a
//! plain Kafka consumer.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use runnel_kafka::test_broker::TestBroker;

/// The app binary on `broker`, with plain output and quiet loggers.
pub(crate) fn app_on(broker: &impl TestBroker, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(args)
        .args(broker.app_arguments())
        .args(["--view", "plain", "--status-every", "1s"])
        .args(["--set", "valid-logger.log-every=100000"])
        .args(["--set", "invalid-logger.log-every=100000"])
        .env("RUST_LOG", "info");
    command
}

pub(crate) use runnel_app_test::kafka::{Seen, at_least, read_topic};

/// Counts how often each (sequence, metric name) arrived.
pub(crate) fn arrivals<'a>(
    metrics: impl Iterator<Item = &'a sensor_data::model::Metric>,
) -> BTreeMap<(i64, String), usize> {
    let mut counts = BTreeMap::new();
    for metric in metrics {
        *counts
            .entry((metric.sequence, metric.name.clone()))
            .or_default() += 1;
    }
    counts
}

/// A stop condition for [`read_topic`] on a topic of metrics: every one of `expected` distinct
/// (sequence, name) pairs has arrived. Counting records would stop short when some arrived twice,
/// as they may after an outage or a takeover (delivery is at least once).
pub(crate) fn distinct_metrics(expected: usize) -> impl FnMut(&Seen) -> bool {
    let mut distinct = BTreeSet::new();
    move |seen| {
        let metric: sensor_data::model::Metric = crate::support::decode(&seen.value);
        distinct.insert((metric.sequence, metric.name));
        distinct.len() >= expected
    }
}
