//! Lag-based autoscaling: how many replicas a streamlet should have, from its consumer
//! lag, its bounds, the partitions of its inlets and a cool-down. Pure: the clock and the
//! lag come in as arguments.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use runnel_application::{Autoscaling, AutoscalingStatus};

use crate::observed::LagSample;

/// What the autoscaler decided for one streamlet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The replicas to run.
    pub(crate) replicas: i32,
    /// For the status.
    pub(crate) status: AutoscalingStatus,
    /// The note of an `Autoscaled` Event when the replicas change.
    pub(crate) change: Option<String>,
}

/// Decides the replicas of `instance`, now running `current`.
///
/// The wanted count is the larger of `ceil(lag / target-lag)` and, when the input rate is
/// known, `ceil(current × lag-seconds / target-lag-seconds)`; it is bounded by min and max
/// replicas and never exceeds the most partitions of the streamlet's inlets (more consumers
/// than partitions would idle). A change waits until the cool-down since the last change
/// has passed.
pub(crate) fn decide(
    instance: &str,
    settings: &Autoscaling,
    current: i32,
    sample: Option<&LagSample>,
    previous: Option<&AutoscalingStatus>,
    now: Timestamp,
) -> Decision {
    let last_scale_time = previous.and_then(|p| p.last_scale_time.clone());
    let Some(sample) = sample else {
        let replicas = current.clamp(
            settings.min_replicas,
            settings.max_replicas.max(settings.min_replicas),
        );
        return Decision {
            replicas,
            status: AutoscalingStatus {
                lag: previous.map_or(0, |p| p.lag),
                replicas,
                last_scale_time,
                reason: "no lag sample yet".to_owned(),
            },
            change: None,
        };
    };
    let upper = settings.max_replicas.min(sample.partitions.max(1));
    let lower = settings.min_replicas.min(upper);
    let mut wanted = lower;
    let mut why = Vec::new();
    if let Some(target) = settings.target_lag {
        let by_records = ceil_div(sample.lag, target);
        wanted = wanted.max(by_records);
        why.push(format!(
            "lag {} records, target {target} per replica",
            sample.lag
        ));
    }
    if let (Some(target), Some(rate)) = (settings.target_lag_seconds, sample.rate)
        && rate > 0.0
    {
        let seconds = sample.lag as f64 / rate;
        let by_seconds = (f64::from(current.max(1)) * seconds / target as f64).ceil() as i32;
        wanted = wanted.max(by_seconds);
        why.push(format!(
            "{seconds:.1} s of lag at {rate:.0} records/s, target {target} s"
        ));
    }
    if wanted > upper {
        why.push(if upper < settings.max_replicas {
            format!("capped at {upper}, the partitions of its inlets")
        } else {
            format!("capped at max-replicas {upper}")
        });
    }
    let wanted = wanted.clamp(lower, upper);
    let reason = why.join("; ");
    let cooling = last_scale_time
        .as_deref()
        .and_then(|text| text.parse::<Timestamp>().ok())
        .map(|last| elapsed(last, now))
        .is_some_and(|since| since < settings.cooldown);
    let (replicas, change, last_scale_time, reason) = if wanted == current {
        (current, None, last_scale_time, reason)
    } else if cooling {
        (
            current,
            None,
            last_scale_time,
            format!("{reason}; wants {wanted}, cooling down"),
        )
    } else {
        let note = format!("{instance}: {current} -> {wanted} replicas ({reason})");
        (wanted, Some(note), Some(now.to_string()), reason)
    };
    Decision {
        replicas,
        status: AutoscalingStatus {
            lag: sample.lag,
            replicas,
            last_scale_time,
            reason,
        },
        change,
    }
}

fn ceil_div(value: i64, by: i64) -> i32 {
    if by <= 0 {
        return 0;
    }
    i32::try_from((value.max(0) + by - 1) / by).unwrap_or(i32::MAX)
}

fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    let nanos = to.as_nanosecond() - from.as_nanosecond();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Autoscaling {
        Autoscaling {
            min_replicas: 1,
            max_replicas: 4,
            target_lag: Some(1000),
            target_lag_seconds: None,
            cooldown: Duration::from_secs(60),
        }
    }

    fn sample(lag: i64, partitions: i32) -> LagSample {
        LagSample {
            lag,
            rate: None,
            partitions,
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    #[test]
    fn scales_up_with_lag_within_bounds_and_partitions() {
        let decision = decide("m", &settings(), 1, Some(&sample(2500, 8)), None, at(0));
        assert_eq!(decision.replicas, 3);
        assert_eq!(
            decision.change.as_deref(),
            Some("m: 1 -> 3 replicas (lag 2500 records, target 1000 per replica)")
        );
        let capped = decide("m", &settings(), 1, Some(&sample(9000, 2)), None, at(0));
        assert_eq!(capped.replicas, 2, "never above the inlet's partitions");
        assert!(
            capped
                .status
                .reason
                .contains("the partitions of its inlets")
        );
        let max = decide("m", &settings(), 1, Some(&sample(9000, 8)), None, at(0));
        assert_eq!(max.replicas, 4);
    }

    #[test]
    fn scales_down_to_the_minimum_when_caught_up() {
        let decision = decide("m", &settings(), 3, Some(&sample(0, 8)), None, at(0));
        assert_eq!(decision.replicas, 1);
    }

    #[test]
    fn waits_for_the_cool_down() {
        let first = decide("m", &settings(), 1, Some(&sample(2500, 8)), None, at(0));
        let soon = decide(
            "m",
            &settings(),
            3,
            Some(&sample(0, 8)),
            Some(&first.status),
            at(30),
        );
        assert_eq!(soon.replicas, 3);
        assert!(soon.change.is_none());
        assert!(
            soon.status.reason.ends_with("wants 1, cooling down"),
            "{}",
            soon.status.reason
        );
        let later = decide(
            "m",
            &settings(),
            3,
            Some(&sample(0, 8)),
            Some(&soon.status),
            at(61),
        );
        assert_eq!(later.replicas, 1);
    }

    #[test]
    fn lag_in_seconds_scales_with_the_input_rate() {
        let settings = Autoscaling {
            target_lag: None,
            target_lag_seconds: Some(10),
            ..settings()
        };
        let busy = LagSample {
            lag: 3000,
            rate: Some(100.0),
            partitions: 8,
        };
        // 30 s of lag with 1 replica against a 10 s target: 3 replicas.
        assert_eq!(
            decide("m", &settings, 1, Some(&busy), None, at(0)).replicas,
            3
        );
    }
}
