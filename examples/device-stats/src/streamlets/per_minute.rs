//! `per-minute`: power statistics per device per minute of event time.
//!
//! A [`WindowedAggregate`] with a user-defined aggregate: one accumulator per device and
//! minute, panes fired once the watermark (readings at most 5 s out of order) passes the
//! end of the minute, late readings to their own outlet. Its state is kept by input
//! partition (the readings are keyed by device) and checkpointed with the input offsets, so
//! it survives `kill -9` and scales out to as many processes as `readings` has partitions.

use std::time::Duration;

use runnel::prelude::*;
use runnel::watermark::Watermarks;
use runnel::window::{Aggregate, Pane, WindowSpec};

use crate::model::{PowerStats, Reading};

/// Readings from any number of generators.
pub const IN: Inlet<Reading> = Inlet::new("in");
/// One pane per device and minute.
pub const STATS: Outlet<Pane<String, PowerStats>> =
    Outlet::new("out").keyed_by(|pane| pane.key.clone());
/// Readings that arrived after their minute was complete.
pub const LATE: Outlet<Reading> = Outlet::new("late");

/// Fixed one-minute windows, fired once, when complete.
pub const MINUTES: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
/// Readings arrive at most 5 s out of order; a silent partition is ignored after 30 s.
pub const WATERMARKS: Watermarks =
    Watermarks::bounded(Duration::from_secs(5)).idle_after(Duration::from_secs(30));

/// Count, sum, minimum and maximum of power: merged by adding counts and sums.
#[derive(Clone, Copy, Debug)]
pub struct PowerSummary;

impl Aggregate for PowerSummary {
    type Input = Reading;
    /// Count, sum, minimum, maximum.
    type Accumulator = (i64, f64, f64, f64);
    type Output = PowerStats;

    fn create(&self) -> Self::Accumulator {
        (0, 0.0, f64::MAX, f64::MIN)
    }

    fn add(&self, acc: &mut Self::Accumulator, reading: &Reading) {
        acc.0 += 1;
        acc.1 += reading.power;
        acc.2 = acc.2.min(reading.power);
        acc.3 = acc.3.max(reading.power);
    }

    fn merge(&self, acc: &mut Self::Accumulator, other: &Self::Accumulator) {
        acc.0 += other.0;
        acc.1 += other.1;
        acc.2 = acc.2.min(other.2);
        acc.3 = acc.3.max(other.3);
    }

    fn result(&self, acc: &Self::Accumulator) -> PowerStats {
        PowerStats {
            readings: acc.0,
            mean: acc.1 / acc.0.max(1) as f64,
            min: acc.2,
            max: acc.3,
        }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, STATS, MINUTES, PowerSummary)
        .key_by(|reading| reading.device.clone())
        .event_time(|reading| reading.time)
        .watermarks(WATERMARKS)
        .late_output(LATE)
        .state_by_partition()
        .describe("power statistics per device per minute of event time")
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel::testkit::{TestRecord, TestRun};
    use runnel::window::Timing;

    fn reading(device: &str, second: i64, power: f64) -> TestRecord<Reading> {
        TestRecord::new(Reading {
            device: device.to_owned(),
            sequence: 0,
            time: second * 1_000,
            power,
        })
    }

    #[runnel::test]
    async fn a_minute_fires_when_the_watermark_passes_its_end_and_late_readings_go_aside()
    -> anyhow::Result<()> {
        let run = TestRun::new(streamlet())
            .at(0)
            .input_records(IN, [reading("a", 10, 4.0), reading("a", 50, 2.0)])
            .at(1_000)
            .input_records(IN, [reading("b", 64, 9.0)]) // watermark 59 s: not yet
            .at(2_000)
            .input_records(IN, [reading("a", 66, 1.0)]) // watermark 61 s: the minute ends
            .at(3_000)
            .input_records(IN, [reading("a", 30, 7.0)]) // too late for its minute
            .run()
            .await?;
        let panes = run.timed_output(STATS)?;
        let (at, first) = &panes[0];
        assert_eq!(*at, 2_000);
        assert_eq!(
            (first.key.as_str(), first.window_start, first.timing),
            ("a", 0, Timing::OnTime)
        );
        assert_eq!(
            first.value,
            PowerStats {
                readings: 2,
                mean: 3.0,
                min: 2.0,
                max: 4.0
            }
        );
        assert_eq!(run.output(LATE).len(), 1);
        assert_eq!(run.metrics().late(), 1);
        // The end of the input completes the second minute for both devices.
        assert_eq!(panes.len(), 3);
        Ok(())
    }
}
