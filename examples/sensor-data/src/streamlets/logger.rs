//! `valid-logger` and `invalid-logger`: egresses that log what arrives.

use runnel::tracing;
use std::time::Duration;

use runnel::prelude::*;

use crate::model::{InvalidMetric, Metric};

/// Valid metrics.
pub const VALID: Inlet<Metric> = Inlet::new("in");
/// Invalid metrics.
pub const INVALID: Inlet<InvalidMetric> = Inlet::new("in");

/// The level to log at.
pub const LOG_LEVEL: Parameter<String> = Parameter::regex("log-level", "(?i)debug|info|warn|error")
    .describe("the level to log at: debug, info, warn or error")
    .default("info");
/// The text before each logged record.
pub const PREFIX: Parameter<String> = Parameter::string("msg-prefix")
    .describe("the text before each logged record")
    .default("metric");
/// Log one of every n records.
pub const EVERY: Parameter<i64> = Parameter::int("log-every")
    .describe("log one of every n records")
    .default("1");

/// Simulated work per record, to watch lag build up in the live view and the metrics.
pub const DELAY: Parameter<Duration> = Parameter::duration("processing-delay")
    .describe("simulated work per record; raise it to watch lag build up")
    .default("0ms");

/// Logs valid or invalid metrics.
#[derive(Debug)]
pub struct Logger<T: Data> {
    inlet: Inlet<T>,
}

/// Logs valid metrics.
pub fn valid() -> Logger<Metric> {
    Logger { inlet: VALID }
}

/// Logs invalid metrics.
pub fn invalid() -> Logger<InvalidMetric> {
    Logger { inlet: INVALID }
}

impl<T: Data + std::fmt::Debug> Streamlet for Logger<T> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("logs every n-th record it receives")
            .inlet(self.inlet)
            .parameter(LOG_LEVEL)
            .parameter(PREFIX)
            .parameter(EVERY)
            .parameter(DELAY)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(self.inlet);
        let (level, prefix) = (
            ctx.parameter(LOG_LEVEL).to_lowercase(),
            ctx.parameter(PREFIX),
        );
        let every = ctx.parameter(EVERY).max(1) as u64;
        let delay = ctx.parameter(DELAY);
        let mut seen: u64 = 0;
        while let Some(message) = input.next().await? {
            if seen.is_multiple_of(every) {
                let value = message.value();
                match level.as_str() {
                    "debug" => tracing::debug!("{prefix} {value:?}"),
                    "warn" => tracing::warn!("{prefix} {value:?}"),
                    "error" => tracing::error!("{prefix} {value:?}"),
                    _ => tracing::info!("{prefix} {value:?}"),
                }
            }
            seen += 1;
            if !delay.is_zero() {
                runnel::tokio::time::sleep(delay).await;
            }
            message.commit();
        }
        Ok(())
    }
}
