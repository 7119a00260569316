//! `validation`: splits metrics into valid and invalid ones.

use runnel::prelude::*;

use crate::model::{InvalidMetric, Metric};

/// Metrics to check.
pub const IN: Inlet<Metric> = Inlet::new("in");
/// Metrics that failed the check, with the reason.
pub const INVALID: Outlet<InvalidMetric> = Outlet::new("invalid");
/// Metrics that passed.
pub const VALID: Outlet<Metric> = Outlet::new("valid").keyed_by(|metric| metric.device_id.clone());

/// Why a metric is invalid, if it is: every measurement must be a non-negative number.
pub fn check(metric: &Metric) -> Option<String> {
    if !metric.value.is_finite() {
        Some(format!("{} is not a number", metric.name))
    } else if metric.value < 0.0 {
        Some(format!(
            "{} must not be negative, got {}",
            metric.name, metric.value
        ))
    } else {
        None
    }
}

/// The streamlet: valid metrics go right, invalid ones left with the reason.
pub fn streamlet() -> impl Streamlet {
    Splitter::new(IN, INVALID, VALID, |metric: Metric| match check(&metric) {
        None => Either::Right(metric),
        Some(error) => Either::Left(InvalidMetric { metric, error }),
    })
    .describe("splits metrics into valid ones and invalid ones with the reason")
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel::testkit::TestRun;

    fn metric(value: f64) -> Metric {
        Metric {
            device_id: "d".into(),
            timestamp: 0,
            sequence: 0,
            name: "power".into(),
            value,
        }
    }

    #[runnel::test]
    async fn negative_and_non_numbers_are_invalid() -> anyhow::Result<()> {
        let run = TestRun::new(streamlet())
            .input(IN, [metric(1.0), metric(-2.0), metric(f64::NAN)])
            .run()
            .await?;
        assert_eq!(run.output(VALID), [metric(1.0)]);
        let errors: Vec<String> = run.output(INVALID).into_iter().map(|i| i.error).collect();
        assert_eq!(
            errors,
            [
                "power must not be negative, got -2",
                "power is not a number"
            ]
        );
        Ok(())
    }
}
