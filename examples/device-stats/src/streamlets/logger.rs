//! `stats-logger` and `late-logger`: egresses that log what arrives.

use runnel::prelude::*;
use runnel::tracing;
use runnel::window::Pane;

use crate::model::{PowerStats, Reading};

/// Statistics per device and minute.
pub const STATS: Inlet<Pane<String, PowerStats>> = Inlet::new("in");
/// Readings that came too late.
pub const LATE: Inlet<Reading> = Inlet::new("in");

/// Log one of every n records.
pub const EVERY: Parameter<i64> = Parameter::int("log-every")
    .describe("log one of every n records")
    .default("1");

/// Logs each device's statistics for a minute.
pub fn stats() -> impl Streamlet {
    logger(STATS, |pane| {
        format!(
            "{} [{}, {}) {:?}: {} readings, mean {:.1} kW, min {:.1}, max {:.1}",
            pane.key,
            pane.window_start,
            pane.window_end,
            pane.timing,
            pane.value.readings,
            pane.value.mean,
            pane.value.min,
            pane.value.max
        )
    })
}

/// Logs readings that came too late for their minute.
pub fn late() -> impl Streamlet {
    logger(LATE, |reading| {
        format!(
            "late: {} #{} measured at {}",
            reading.device, reading.sequence, reading.time
        )
    })
}

fn logger<T: Data>(inlet: Inlet<T>, line: fn(&T) -> String) -> Logger<T> {
    Logger { inlet, line }
}

/// Logs every n-th record with a line of its own.
#[derive(Debug)]
pub struct Logger<T> {
    inlet: Inlet<T>,
    line: fn(&T) -> String,
}

impl<T: Data> Streamlet for Logger<T> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("logs every n-th record it receives")
            .inlet(self.inlet)
            .parameter(EVERY)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(self.inlet);
        let every = ctx.parameter(EVERY).max(1) as u64;
        let mut seen: u64 = 0;
        while let Some(message) = input.next().await? {
            if seen.is_multiple_of(every) {
                tracing::info!("{}", (self.line)(message.value()));
            }
            seen += 1;
            message.commit();
        }
        Ok(())
    }
}
