//! Running the app on a tansu broker and reading its topics with a plain Kafka consumer.

use std::collections::BTreeMap;
use std::process::Command;

use runnel_kafka::test_broker::Tansu;

/// The app binary on `broker`, with plain output and quiet loggers.
pub(crate) fn app_on(broker: &Tansu, args: &[&str]) -> Command {
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

pub(crate) use runnel_app_test::kafka::{at_least, read_topic};

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
