//! `generator`: an ingress producing readings of simulated wind turbines at a steady rate.

use runnel::tracing;
use std::time::{Duration, Instant};

use runnel::prelude::*;

use crate::model::{Measurements, SensorData};

/// The readings, keyed by device so each device's readings stay in order.
pub const OUT: Outlet<SensorData> = Outlet::new("out").keyed_by(|data| data.device_id.clone());

/// Readings per second; 0 generates as fast as the log takes them.
pub const RATE: Parameter<i64> = Parameter::int("records-per-second")
    .describe("readings generated per second; 0 means as fast as possible")
    .default("5");
/// How many readings to generate before finishing; negative means endless.
pub const COUNT: Parameter<i64> = Parameter::int("count")
    .describe("readings to generate before finishing; negative means endless")
    .default("-1");
/// How many devices take turns.
pub const DEVICES: Parameter<i64> = Parameter::int("devices")
    .describe("number of simulated devices")
    .default("4");
/// Every n-th reading carries a faulty (negative) rotor speed; 0 never.
pub const INVALID_EVERY: Parameter<i64> = Parameter::int("invalid-every")
    .describe("every n-th reading has a faulty negative rotor speed; 0 means never")
    .default("7");

/// Generates readings.
#[derive(Debug)]
pub struct Generator;

/// The reading with running number `sequence`: deterministic, so tests can predict it.
pub fn reading(sequence: i64, devices: i64, invalid_every: i64, timestamp: i64) -> SensorData {
    let device = device_id(sequence % devices.max(1));
    reading_of(sequence, device, invalid_every, timestamp)
}

/// The id of device number `device`: a UUID, as in Cloudflow's sensor-data example,
/// derived from the number, and chosen so that devices spread over the partitions of a
/// topic keyed by device id: device `n` goes to partition `n % p` of a topic with `p` of 1,
/// 2, 3, 4, 6 or 12 partitions (and so consecutive devices never share one).
pub fn device_id(device: i64) -> String {
    const SPREAD: u64 = 12;
    let want = device.rem_euclid(SPREAD as i64) as u64;
    (0_u64..)
        .map(|attempt| uuid((device as u64).wrapping_mul(1 << 20).wrapping_add(attempt)))
        .find(|id| u64::from(runnel::partition_for_key(id.as_bytes(), SPREAD as u32)) == want)
        .expect("one in twelve candidates fits")
}

/// A version-4-shaped UUID from the bits of `seed` (splitmix64).
fn uuid(seed: u64) -> String {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (high, low) = (
        mix(seed.wrapping_add(0x9e37_79b9_7f4a_7c15)),
        mix(seed ^ 0x5851_f42d_4c95_7f2d),
    );
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0x0fff,
        (low >> 48) & 0x3fff | 0x8000,
        low & 0xffff_ffff_ffff
    )
}

fn reading_of(sequence: i64, device_id: String, invalid_every: i64, timestamp: i64) -> SensorData {
    let wave = (sequence as f64 / 10.0).sin();
    let faulty = invalid_every > 0 && sequence % invalid_every == invalid_every - 1;
    SensorData {
        device_id,
        timestamp,
        sequence,
        measurements: Measurements {
            power: 1_500.0 + 500.0 * wave,
            rotor_speed: if faulty { -1.0 } else { 12.0 + 3.0 * wave },
            wind_speed: 8.0 + 2.0 * wave,
        },
    }
}

impl Streamlet for Generator {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("generates wind-turbine readings at a steady rate")
            .outlet(OUT)
            .parameter(RATE)
            .parameter(COUNT)
            .parameter(DEVICES)
            .parameter(INVALID_EVERY)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let (rate, count) = (ctx.parameter(RATE), ctx.parameter(COUNT));
        let (devices, invalid_every) = (ctx.parameter(DEVICES), ctx.parameter(INVALID_EVERY));
        let ids: Vec<String> = (0..devices.max(1)).map(device_id).collect();
        let started = Instant::now();
        let mut sequence = 0;
        while !ctx.is_stopping() && (count < 0 || sequence < count) {
            // Catch up to where the rate says we should be, then wait a little.
            let due = if rate > 0 {
                (started.elapsed().as_secs_f64() * rate as f64) as i64 + 1
            } else {
                sequence + 1024
            };
            while sequence < due && (count < 0 || sequence < count) {
                let now = ctx.clock().now_millis();
                let device = ids[(sequence % devices.max(1)) as usize].clone();
                out.send(&reading_of(sequence, device, invalid_every, now))
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

#[cfg(test)]
mod tests {
    use super::*;
    use runnel::testkit::TestRun;

    #[test]
    fn devices_spread_over_every_partition() {
        for partitions in [2_u32, 3, 4, 6, 12] {
            let used: std::collections::BTreeSet<u32> = (0..i64::from(partitions))
                .map(|device| runnel::partition_for_key(device_id(device).as_bytes(), partitions))
                .collect();
            assert_eq!(used.len(), partitions as usize, "{partitions} partitions");
        }
        assert_eq!(device_id(3), device_id(3), "ids are deterministic");
        assert_eq!(device_id(3).len(), 36);
    }

    #[runnel::test]
    async fn generates_the_configured_count_with_faulty_readings_at_the_interval()
    -> anyhow::Result<()> {
        let run = TestRun::new(Generator)
            .parameter("count", "14")
            .parameter("records-per-second", "0")
            .run()
            .await?;
        let readings = run.output(OUT);
        assert_eq!(readings.len(), 14);
        let faulty: Vec<i64> = readings
            .iter()
            .filter(|r| r.measurements.rotor_speed < 0.0)
            .map(|r| r.sequence)
            .collect();
        assert_eq!(faulty, [6, 13]);
        Ok(())
    }
}
