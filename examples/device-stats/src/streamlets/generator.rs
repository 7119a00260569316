//! `generator`: an ingress producing power readings with event times, some of them out of
//! order, at a steady rate.

use runnel::tracing;
use std::time::{Duration, Instant};

use runnel::prelude::*;

use crate::model::Reading;

/// The readings, keyed by device: a device's readings share a partition, which the
/// per-minute statistics keep their state by.
pub const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|reading| reading.device.clone());

/// Readings per second; 0 generates as fast as the log takes them.
pub const RATE: Parameter<i64> = Parameter::int("records-per-second")
    .describe("readings generated per second; 0 means as fast as possible")
    .default("20");
/// How many readings to generate before finishing; negative means endless.
pub const COUNT: Parameter<i64> = Parameter::int("count")
    .describe("readings to generate before finishing; negative means endless")
    .default("-1");
/// How many devices take turns.
pub const DEVICES: Parameter<i64> = Parameter::int("devices")
    .describe("number of simulated devices")
    .default("4");

/// Event time of the first reading: 2024-01-01T00:00:00Z, so runs are reproducible.
pub const START: i64 = 1_704_067_200_000;
/// Event time between consecutive readings.
pub const STEP_MS: i64 = 100;
/// How far behind its place in the sequence a reading may be measured.
pub const MAX_DISORDER_MS: i64 = 2_000;

/// Generates readings.
#[derive(Debug)]
pub struct Generator;

/// The reading with running number `sequence`: deterministic, so tests can predict it. Its
/// event time advances 100 ms per reading, and one reading in three is up to 2 s late.
pub fn reading(sequence: i64, devices: i64) -> Reading {
    let disorder = if sequence % 3 == 2 {
        (sequence * 7_919) % MAX_DISORDER_MS
    } else {
        0
    };
    Reading {
        device: format!("device-{}", sequence % devices.max(1)),
        sequence,
        time: START + sequence * STEP_MS - disorder,
        power: 1_000.0 + 400.0 * (sequence as f64 / 25.0).sin(),
    }
}

impl Streamlet for Generator {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("generates power readings with event times, some out of order")
            .outlet(OUT)
            .parameter(RATE)
            .parameter(COUNT)
            .parameter(DEVICES)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let (rate, count, devices) = (
            ctx.parameter(RATE),
            ctx.parameter(COUNT),
            ctx.parameter(DEVICES),
        );
        let started = Instant::now();
        let mut sequence = 0;
        while !ctx.is_stopping() && (count < 0 || sequence < count) {
            let due = if rate > 0 {
                (started.elapsed().as_secs_f64() * rate as f64) as i64 + 1
            } else {
                sequence + 1024
            };
            while sequence < due && (count < 0 || sequence < count) {
                let reading = reading(sequence, devices);
                out.send_record(Outgoing::new(&reading).timestamp(reading.time))
                    .await?;
                sequence += 1;
            }
            if rate > 0 {
                runnel::tokio::select! {
                    () = ctx.stopped() => break,
                    () = runnel::tokio::time::sleep(Duration::from_millis(5)) => {}
                }
            }
        }
        tracing::info!(readings = sequence, "generator finished");
        Ok(())
    }
}
