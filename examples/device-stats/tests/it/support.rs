use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use device_stats::model::{PowerStats, Reading};
use runnel::window::{Pane, Timing};
pub(crate) use runnel_app_test::{Running, open, read_topic, read_values, run_to_end, stderr_of};

pub(crate) const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// The app binary with `args`, its data in `data_dir`, plain output and quiet loggers.
pub(crate) fn app(args: &[&str], data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_device-stats"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--view", "plain", "--status-every", "1s"])
        .args(["--set", "stats-logger.log-every=100"])
        .env("RUST_LOG", "info");
    command
}

/// A device and the start of its minute.
pub(crate) type Minute = (String, i64);

/// The statistics of `readings` per device and minute, computed directly.
pub(crate) fn batch(readings: &[Reading]) -> BTreeMap<Minute, PowerStats> {
    let mut sums: BTreeMap<Minute, (i64, f64, f64, f64)> = BTreeMap::new();
    for reading in readings {
        let start = reading.time - reading.time.rem_euclid(60_000);
        let entry =
            sums.entry((reading.device.clone(), start))
                .or_insert((0, 0.0, f64::MAX, f64::MIN));
        entry.0 += 1;
        entry.1 += reading.power;
        entry.2 = entry.2.min(reading.power);
        entry.3 = entry.3.max(reading.power);
    }
    sums.into_iter()
        .map(|(minute, (readings, sum, min, max))| {
            let mean = sum / readings as f64;
            (
                minute,
                PowerStats {
                    readings,
                    mean,
                    min,
                    max,
                },
            )
        })
        .collect()
}

/// The panes per device and minute; fails if one (device, minute, index) was sent twice
/// with different contents. Returns them and how many were sent in all.
pub(crate) fn by_minute(
    panes: &[Pane<String, PowerStats>],
) -> (BTreeMap<Minute, PowerStats>, usize) {
    let mut seen: BTreeMap<(String, i64, u32), &Pane<String, PowerStats>> = BTreeMap::new();
    for pane in panes {
        assert_eq!(pane.timing, Timing::OnTime, "{pane:?}");
        assert_eq!(pane.window_end - pane.window_start, 60_000);
        let identity = (pane.key.clone(), pane.window_start, pane.index);
        if let Some(earlier) = seen.insert(identity.clone(), pane) {
            assert_eq!(
                earlier.value.readings, pane.value.readings,
                "{identity:?} sent twice, differently"
            );
            assert_eq!(earlier.value.min, pane.value.min);
            assert_eq!(earlier.value.max, pane.value.max);
            assert!((earlier.value.mean - pane.value.mean).abs() < 1e-9);
        }
    }
    let results = seen
        .into_iter()
        .map(|((device, start, _), pane)| ((device, start), pane.value.clone()))
        .collect();
    (results, panes.len())
}

/// Asserts that the streamed statistics are the batch ones (means up to rounding: the
/// order of additions may differ across partitions).
pub(crate) fn assert_same(
    streamed: &BTreeMap<Minute, PowerStats>,
    batch: &BTreeMap<Minute, PowerStats>,
) {
    assert_eq!(
        streamed.keys().collect::<Vec<_>>(),
        batch.keys().collect::<Vec<_>>(),
        "every device-minute has exactly one result"
    );
    for (minute, expected) in batch {
        let got = &streamed[minute];
        assert_eq!(got.readings, expected.readings, "readings of {minute:?}");
        assert_eq!(
            (got.min, got.max),
            (expected.min, expected.max),
            "{minute:?}"
        );
        assert!(
            (got.mean - expected.mean).abs() < 1e-6,
            "mean of {minute:?}"
        );
    }
}
