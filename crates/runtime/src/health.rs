//! Judging from status samples whether each instance can make progress: the rules behind
//! [`Problem`]s, and what they remember from one sample to the next.
//!
//! The rules (also in `docs/running.md`, "Health"):
//!
//! - **backplane unreachable**: the sample's requests to the backplane (topic offsets)
//!   failed or took longer than [`REQUEST_TIMEOUT`]; every instance has the problem until a
//!   sample succeeds again;
//! - **topic missing**: a topic the instance reads or writes does not exist;
//! - **no partitions assigned**: an inlet's consumer has held no partition for
//!   [`UNASSIGNED_GRACE`] while a partition of its topic has records its group has not
//!   committed and has not committed anything on for as long: nobody reads it (a surplus
//!   replica, with every partition read by others, has no problem);
//! - **restart loop**: [`LOOP_FAILURES`] or more failures within [`LOOP_WINDOW`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use runnel_status::Problem;

/// How long one backplane request of a sample may take before the backplane counts as
/// unreachable.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an inlet may hold no partition while one of its topic's partitions waits.
pub(crate) const UNASSIGNED_GRACE: Duration = Duration::from_secs(30);
/// Failures within [`LOOP_WINDOW`] that make a restart loop.
pub(crate) const LOOP_FAILURES: u32 = 3;
/// The window of [`LOOP_FAILURES`].
pub(crate) const LOOP_WINDOW: Duration = Duration::from_secs(60);

/// What the board remembers between samples to judge health.
#[derive(Debug, Default)]
pub(crate) struct HealthWatch {
    unreachable_since: Option<Instant>,
    /// Per inlet (instance, port): since when its consumer has held no partitions.
    unassigned_since: HashMap<(String, String), Instant>,
    /// Per (group, topic, partition): the committed offset last seen and since when.
    committed: HashMap<(String, String, u32), (Option<u64>, Instant)>,
}

impl HealthWatch {
    /// Notes the outcome of a sample's backplane requests; returns the problem while the
    /// backplane does not answer.
    pub(crate) fn backplane(&mut self, failure: Option<String>, now: Instant) -> Option<Problem> {
        match failure {
            None => {
                self.unreachable_since = None;
                None
            }
            Some(error) => {
                let since = *self.unreachable_since.get_or_insert(now);
                Some(Problem::BackplaneUnreachable {
                    error,
                    for_seconds: now.duration_since(since).as_secs(),
                })
            }
        }
    }

    /// Notes the committed offsets of `group` on `topic` and returns since when each
    /// partition has waited: it has records past its committed offset, and that offset has
    /// not moved since then. `None` for partitions that do not wait.
    pub(crate) fn waiting(
        &mut self,
        group: &str,
        topic: &str,
        committed: &[Option<u64>],
        ends: &[u64],
        now: Instant,
    ) -> Vec<Option<Instant>> {
        committed
            .iter()
            .zip(ends)
            .enumerate()
            .map(|(partition, (committed, end))| {
                let key = (group.to_owned(), topic.to_owned(), partition as u32);
                let entry = self.committed.entry(key).or_insert((*committed, now));
                if entry.0 != *committed {
                    *entry = (*committed, now);
                }
                let behind = committed.unwrap_or(0) < *end;
                behind.then_some(entry.1)
            })
            .collect()
    }

    /// The problem of an inlet that holds `assigned` partitions of a topic with
    /// `partitions`, whose partitions have waited since `waiting` (from
    /// [`waiting`](HealthWatch::waiting)).
    #[allow(clippy::too_many_arguments)] // one inlet's facts, named
    pub(crate) fn assignment(
        &mut self,
        instance: &str,
        inlet: &str,
        topic: &str,
        assigned: Option<usize>,
        partitions: u32,
        waiting: &[Option<Instant>],
        now: Instant,
    ) -> Option<Problem> {
        let key = (instance.to_owned(), inlet.to_owned());
        if assigned != Some(0) || partitions == 0 {
            self.unassigned_since.remove(&key);
            return None;
        }
        let since = *self.unassigned_since.entry(key).or_insert(now);
        let abandoned = waiting
            .iter()
            .flatten()
            .any(|waited| now.duration_since(*waited) >= UNASSIGNED_GRACE);
        (now.duration_since(since) >= UNASSIGNED_GRACE && abandoned).then(|| {
            Problem::NoPartitionsAssigned {
                inlet: inlet.to_owned(),
                topic: topic.to_owned(),
                partitions,
                for_seconds: now.duration_since(since).as_secs(),
            }
        })
    }
}

/// The problem of an instance that failed `failures` times within [`LOOP_WINDOW`].
pub(crate) fn restart_loop(failures: u32) -> Option<Problem> {
    (failures >= LOOP_FAILURES).then(|| Problem::RestartLoop {
        restarts: failures,
        window_seconds: LOOP_WINDOW.as_secs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backplane_is_unreachable_from_the_first_failed_sample_until_one_succeeds() {
        let mut watch = HealthWatch::default();
        let start = Instant::now();
        let failed = || Some("timed out".to_owned());
        assert_eq!(
            watch.backplane(failed(), start),
            Some(Problem::BackplaneUnreachable {
                error: "timed out".into(),
                for_seconds: 0
            })
        );
        let later = watch.backplane(failed(), start + Duration::from_secs(5));
        assert!(matches!(
            later,
            Some(Problem::BackplaneUnreachable { for_seconds: 5, .. })
        ));
        assert_eq!(watch.backplane(None, start + Duration::from_secs(6)), None);
    }

    #[test]
    fn an_unassigned_inlet_is_a_problem_only_while_a_partition_is_abandoned() {
        let mut watch = HealthWatch::default();
        let start = Instant::now();
        let grace = UNASSIGNED_GRACE;
        // Partition 0 is read by someone (its offset moves); partition 1 waits.
        let w0 = watch.waiting("g", "t", &[Some(5), Some(0)], &[10, 10], start);
        assert_eq!(w0, [Some(start), Some(start)]);
        let none = watch.assignment("i", "in", "t", Some(0), 2, &w0, start);
        assert_eq!(none, None, "not within the grace period");
        let later = start + grace;
        let waiting = watch.waiting("g", "t", &[Some(8), Some(0)], &[10, 10], later);
        assert_eq!(waiting, [Some(later), Some(start)]);
        let problem = watch.assignment("i", "in", "t", Some(0), 2, &waiting, later);
        assert!(matches!(
            problem,
            Some(Problem::NoPartitionsAssigned { partitions: 2, .. })
        ));
        // Caught up everywhere: a surplus member, no problem.
        let done = watch.waiting("g", "t", &[Some(10), Some(10)], &[10, 10], later);
        assert_eq!(done, [None, None]);
        assert_eq!(
            watch.assignment("i", "in", "t", Some(0), 2, &done, later),
            None
        );
        // Holding partitions again clears the clock.
        assert_eq!(
            watch.assignment("i", "in", "t", Some(1), 2, &waiting, later),
            None
        );
        assert_eq!(
            watch.assignment("i", "in", "t", Some(0), 2, &waiting, later),
            None
        );
    }

    #[test]
    fn three_failures_in_a_minute_are_a_restart_loop() {
        assert_eq!(restart_loop(2), None);
        assert_eq!(
            restart_loop(3),
            Some(Problem::RestartLoop {
                restarts: 3,
                window_seconds: 60
            })
        );
    }
}
