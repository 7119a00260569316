//! `to-metrics`: splits each reading into one metric per measurement.

use runnel::prelude::*;

use crate::model::{Metric, SensorData};

/// Readings.
pub const IN: Inlet<SensorData> = Inlet::new("in");
/// Metrics, keyed by device.
pub const OUT: Outlet<Metric> = Outlet::new("out").keyed_by(|metric| metric.device_id.clone());

/// The three metrics of a reading.
pub fn metrics(data: SensorData) -> [Metric; 3] {
    let metric = |name: &str, value: f64| Metric {
        device_id: data.device_id.clone(),
        timestamp: data.timestamp,
        sequence: data.sequence,
        name: name.to_owned(),
        value,
    };
    let m = &data.measurements;
    [
        metric("power", m.power),
        metric("rotor-speed", m.rotor_speed),
        metric("wind-speed", m.wind_speed),
    ]
}

/// The streamlet: a flat-map from readings to metrics.
pub fn streamlet() -> impl Streamlet {
    Processor::new(IN, OUT, metrics).describe("splits each reading into one metric per measurement")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::generator::reading;
    use runnel::testkit::TestRun;

    #[runnel::test]
    async fn every_reading_becomes_three_metrics() -> anyhow::Result<()> {
        let run = TestRun::new(streamlet())
            .input(IN, [reading(0, 4, 0, 1_000)])
            .run()
            .await?;
        let names: Vec<String> = run.output(OUT).into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["power", "rotor-speed", "wind-speed"]);
        Ok(())
    }
}
