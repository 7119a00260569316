use std::time::Duration;

use runnel_host::testkit::{TestError, TestRun};
use runnel_streamlet::prelude::*;

use crate::model::{OUT, Reading, reading};

const COUNT: Parameter<i64> = Parameter::int("count").describe("readings to emit");
const EVERY: Parameter<Duration> = Parameter::duration("every").default("1ms");
const SENSOR: Parameter<String> = Parameter::regex("sensor", "sensor-[0-9]+").default("sensor-1");

/// Emits `count` readings, then stops.
struct Counter;

impl Streamlet for Counter {
    fn shape(&self) -> Shape {
        Shape::new()
            .outlet(OUT)
            .parameter(COUNT)
            .parameter(EVERY)
            .parameter(SENSOR)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let sensor = ctx.parameter(SENSOR);
        for i in 0..ctx.parameter(COUNT) {
            tokio::time::sleep(ctx.parameter(EVERY)).await;
            out.send(&reading(&sensor, i as f64)).await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn values_and_defaults_reach_the_streamlet() -> anyhow::Result<()> {
    let run = TestRun::new(Counter)
        .parameter("count", "3")
        .parameter("sensor", "sensor-7")
        .run()
        .await?;
    let out: Vec<Reading> = run.output(OUT);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|r| r.sensor == "sensor-7"));
    Ok(())
}

#[tokio::test]
async fn missing_and_invalid_values_stop_the_run_naming_each_key() {
    let outcome = TestRun::new(Counter)
        .parameter("sensor", "probe-1")
        .parameter("every", "often")
        .run()
        .await;
    let Err(TestError::Parameters(errors)) = outcome else {
        panic!("expected parameter errors")
    };
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "streamlet 'test', parameter 'count': required, but no value was given",
            "streamlet 'test', parameter 'every': 'often' is not a duration (write it like 250ms, 5s or 1m 30s)",
            "streamlet 'test', parameter 'sensor': 'probe-1' does not match the pattern 'sensor-[0-9]+'",
        ]
    );
}
