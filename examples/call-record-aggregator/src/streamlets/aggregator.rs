//! `cdr-aggregator`: the number, total and average duration of calls per window of event
//! time, with the window size and the watermark delay as parameters (Cloudflow's
//! `group-by-window` and `watermark`).
//!
//! A [`WindowedAggregate`] takes its window when it is built; this streamlet declares the
//! two parameters, and builds it from their values when it starts. Its window state is
//! checkpointed; change `group-by-window` only together with a fresh checkpoint topic
//! (windows of the old size would be restored).

use runnel::tracing;
use std::time::Duration;

use runnel::prelude::*;
use runnel::watermark::Watermarks;
use runnel::window::{Aggregate, Pane, WindowSpec};

use crate::model::{CallRecord, CallStats};

/// Valid call records.
pub const IN: Inlet<CallRecord> = Inlet::new("in");
/// One pane per window (the key is empty: all calls count together).
pub const OUT: Outlet<Pane<String, CallStats>> = Outlet::new("out");
/// Records that arrived after their window was complete.
pub const LATE: Outlet<CallRecord> = Outlet::new("late");

/// The window size.
pub const GROUP_BY_WINDOW: Parameter<Duration> = Parameter::duration("group-by-window")
    .describe("the size of the tumbling windows of event time calls are aggregated in")
    .default("1m");
/// How long to wait for out-of-order records.
pub const WATERMARK: Parameter<Duration> = Parameter::duration("watermark")
    .describe("how far out of order records may arrive: the watermark trails the latest event time by this much")
    .default("1m");

/// Counts calls and sums their durations.
#[derive(Debug)]
pub struct CallSummary;

impl Aggregate for CallSummary {
    type Input = CallRecord;
    /// Calls and total duration.
    type Accumulator = (i64, i64);
    type Output = CallStats;

    fn create(&self) -> Self::Accumulator {
        (0, 0)
    }

    fn add(&self, acc: &mut Self::Accumulator, record: &CallRecord) {
        acc.0 += 1;
        acc.1 += record.duration;
    }

    fn merge(&self, acc: &mut Self::Accumulator, other: &Self::Accumulator) {
        acc.0 += other.0;
        acc.1 += other.1;
    }

    fn result(&self, acc: &Self::Accumulator) -> CallStats {
        CallStats {
            calls: acc.0,
            total_duration: acc.1,
            average_duration: acc.1 as f64 / acc.0.max(1) as f64,
        }
    }
}

fn windowed(window: Duration, watermark: Duration) -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, WindowSpec::tumbling(window), CallSummary)
        .event_time(|record| record.timestamp)
        .watermarks(Watermarks::bounded(watermark).idle_after(Duration::from_secs(30)))
        .late_output(LATE)
        .describe("calls, total and average duration per window of event time")
}

/// The aggregator, its window built from its parameters.
#[derive(Debug)]
pub struct Aggregator;

impl Streamlet for Aggregator {
    fn shape(&self) -> Shape {
        // The ports of the windowed aggregate do not depend on its window.
        windowed(Duration::from_secs(60), Duration::from_secs(60))
            .shape()
            .parameter(GROUP_BY_WINDOW)
            .parameter(WATERMARK)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let (window, watermark) = (ctx.parameter(GROUP_BY_WINDOW), ctx.parameter(WATERMARK));
        if window.is_zero() {
            return Err(Error::msg(format!(
                "streamlet '{}': group-by-window must be longer than 0",
                ctx.instance()
            )));
        }
        tracing::info!(
            "aggregating calls in windows of {window:?}, records at most {watermark:?} out of order"
        );
        windowed(window, watermark).run(ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::generator::record;
    use runnel::testkit::TestRun;

    #[runnel::test]
    async fn the_window_size_comes_from_its_parameter() -> anyhow::Result<()> {
        let calls = [
            record(0, "u", 5, 0, 1_000),
            record(1, "u", 5, 0, 4_000),
            record(2, "u", 5, 0, 12_000),
        ];
        let run = TestRun::new(Aggregator)
            .parameter("group-by-window", "10s")
            .parameter("watermark", "1s")
            .input(IN, calls.clone())
            .run()
            .await?;
        let panes = run.output(OUT);
        let windows: Vec<(i64, i64, i64)> = panes
            .iter()
            .map(|pane| (pane.window_start, pane.window_end, pane.value.calls))
            .collect();
        assert_eq!(windows, [(0, 10_000, 2), (10_000, 20_000, 1)]);
        assert_eq!(
            panes[0].value.total_duration,
            calls[0].duration + calls[1].duration
        );
        Ok(())
    }
}
