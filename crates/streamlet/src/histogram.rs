//! [`Histogram`]: a fixed-bucket latency histogram that is cheap to update from any thread,
//! in the shape Prometheus expects (cumulative buckets, a sum and a count).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds: from 50 µs to 10 s, roughly 2.5x apart.
pub const BUCKET_BOUNDS: [f64; 16] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 10.0,
];

/// Counts durations into [`BUCKET_BOUNDS`] (plus one bucket for anything longer).
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::Histogram;
/// let histogram = Histogram::default();
/// histogram.observe(Duration::from_micros(300));
/// histogram.observe(Duration::from_secs(30));
/// assert_eq!(histogram.count(), 2);
/// assert_eq!(histogram.cumulative()[3], 1); // at most 0.5 ms
/// assert_eq!(histogram.cumulative().last(), Some(&2)); // +Inf
/// ```
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKET_BOUNDS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Adds one duration.
    pub fn observe(&self, duration: Duration) {
        let seconds = duration.as_secs_f64();
        let bucket = BUCKET_BOUNDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKET_BOUNDS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// How many durations were observed.
    pub fn count(&self) -> u64 {
        self.buckets
            .iter()
            .map(|bucket| bucket.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of every observed duration, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// For each bound of [`BUCKET_BOUNDS`] and then +Inf, how many durations were at most it.
    pub fn cumulative(&self) -> Vec<u64> {
        let mut total = 0;
        self.buckets
            .iter()
            .map(|bucket| {
                total += bucket.load(Ordering::Relaxed);
                total
            })
            .collect()
    }
}
