//! When the committer's next write is due: writes begin every commit interval, measured
//! from when the last one began, not from when it ended.
//!
//! A write takes time of its own: under exactly-once the gate is closed while the
//! transaction commits (15 ms to over 100 ms on Apache Kafka), and nothing the streamlet
//! reads then is in the transaction. Counting the interval from the end of a write would
//! stretch every period by that time, and a record that came in while the gate was
//! closed would wait for the whole next interval on top of it. Counting from the beginning
//! keeps one write per interval, as Kafka Streams' `commit.interval.ms` and Flink's
//! checkpoint interval do. A write that took more than half the interval still leaves the
//! streamlet half an interval before the next one, so slow commits cannot follow each
//! other back to back while the gate keeps the streamlet waiting.

use tokio::time::{Duration, Instant};

/// The schedule of one committer's writes.
#[derive(Debug)]
pub(crate) struct Cadence {
    interval: Duration,
    /// When the last write began and ended.
    last: Option<(Instant, Instant)>,
}

impl Cadence {
    pub(crate) fn new(interval: Duration) -> Self {
        Cadence {
            interval,
            last: None,
        }
    }

    /// When a write is due for something that became pending at `now`: an interval after
    /// the last write began, at least half an interval after it ended, and not before `now`
    /// (a first write waits one interval).
    pub(crate) fn due(&self, now: Instant) -> Instant {
        match self.last {
            None => now + self.interval,
            Some((began, ended)) => (began + self.interval)
                .max(ended + self.interval / 2)
                .max(now),
        }
    }

    /// Notes a write that began at `began` and ended at `ended`.
    pub(crate) fn wrote(&mut self, began: Instant, ended: Instant) {
        self.last = Some((began, ended));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: Duration = Duration::from_millis(100);

    fn at(start: Instant, millis: u64) -> Instant {
        start + Duration::from_millis(millis)
    }

    #[test]
    fn the_first_write_waits_an_interval() {
        let start = Instant::now();
        assert_eq!(Cadence::new(INTERVAL).due(start), at(start, 100));
    }

    #[test]
    fn the_next_write_is_an_interval_after_the_last_began_not_after_it_ended() {
        let start = Instant::now();
        let mut cadence = Cadence::new(INTERVAL);
        cadence.wrote(start, at(start, 30));
        assert_eq!(cadence.due(at(start, 31)), at(start, 100));
    }

    #[test]
    fn after_a_quiet_spell_a_write_is_due_at_once() {
        let start = Instant::now();
        let mut cadence = Cadence::new(INTERVAL);
        cadence.wrote(start, at(start, 10));
        assert_eq!(cadence.due(at(start, 500)), at(start, 500));
    }

    #[test]
    fn a_slow_write_leaves_half_an_interval_before_the_next() {
        let start = Instant::now();
        let mut cadence = Cadence::new(INTERVAL);
        cadence.wrote(start, at(start, 120));
        assert_eq!(cadence.due(at(start, 121)), at(start, 170));
    }
}
