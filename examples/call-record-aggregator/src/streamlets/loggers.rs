//! `console-egress` and `error-egress`: log the statistics, and the invalid and late
//! records.

use runnel::prelude::*;
use runnel::tracing;
use runnel::window::Pane;

use crate::model::{CallRecord, CallStats, InvalidRecord, LongCall};

/// Statistics per window.
pub const STATS: Inlet<Pane<String, CallStats>> = Inlet::new("in");
/// Invalid records.
pub const INVALID: Inlet<InvalidRecord> = Inlet::new("in");
/// Records too late for their window.
pub const LATE: Inlet<CallRecord> = Inlet::new("late");

/// Long calls, from the `long-calls` SQL streamlet.
pub const LONG_CALLS: Inlet<LongCall> = Inlet::new("in");

/// Logs each long call.
pub fn long_calls() -> impl Streamlet {
    Egress::new(LONG_CALLS, |call: LongCall| async move {
        tracing::info!(
            "long call: {} ({}), {} minutes",
            call.user,
            call.direction,
            call.minutes
        );
        Ok(())
    })
    .describe("logs the long calls the SQL streamlet selects")
}

/// Logs the statistics of each window.
pub fn console() -> impl Streamlet {
    Egress::new(STATS, |pane: Pane<String, CallStats>| async move {
        tracing::info!(
            "calls in [{}, {}): {}, {} s in all, {:.1} s on average",
            pane.window_start,
            pane.window_end,
            pane.value.calls,
            pane.value.total_duration,
            pane.value.average_duration
        );
        Ok(())
    })
    .describe("logs the call statistics of each window")
}

/// Logs invalid records and records too late for their window.
#[derive(Debug)]
pub struct Errors;

impl Streamlet for Errors {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("logs invalid call records and those too late for their window")
            .inlet(INVALID)
            .inlet(LATE)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let (mut invalid, mut late) = (ctx.inlet(INVALID), ctx.inlet(LATE));
        let (mut invalid_open, mut late_open) = (true, true);
        while invalid_open || late_open {
            runnel::tokio::select! {
                message = invalid.next(), if invalid_open => match message? {
                    Some(message) => {
                        let record = message.value();
                        tracing::warn!("invalid call record {}: {}", record.record, record.error);
                        message.commit();
                    }
                    None => invalid_open = false,
                },
                message = late.next(), if late_open => match message? {
                    Some(message) => {
                        let record = message.value();
                        tracing::warn!("call of {} at {} came too late for its window", record.user, record.timestamp);
                        message.commit();
                    }
                    None => late_open = false,
                },
            }
        }
        Ok(())
    }
}
