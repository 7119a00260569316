//! [`ThrottledWarning`]: a warning about something that can happen thousands of times a
//! second (records too late for their windows), logged at most once an interval with a
//! count of those in between, so a flood cannot drown the log.

/// How often a throttled warning is logged at most, by the helpers that log floods.
pub const WARNING_INTERVAL_MILLIS: i64 = 10_000;

/// Decides which occurrences of one warning are logged: the first, then the first after
/// each interval, each with the number of occurrences that were not logged since the one
/// before.
///
/// ```
/// use runnel_streamlet::ThrottledWarning;
/// let mut late = ThrottledWarning::new(10_000);
/// assert_eq!(late.occurred(0), Some(0)); // logged
/// assert_eq!(late.occurred(5_000), None); // counted
/// assert_eq!(late.occurred(10_000), Some(1)); // logged: one more since the last line
/// ```
#[derive(Debug)]
pub struct ThrottledWarning {
    interval_millis: i64,
    last_logged: Option<i64>,
    suppressed: u64,
}

impl ThrottledWarning {
    /// A warning logged at most once every `interval_millis` milliseconds.
    pub const fn new(interval_millis: i64) -> Self {
        ThrottledWarning {
            interval_millis,
            last_logged: None,
            suppressed: 0,
        }
    }

    /// One occurrence at `now` (milliseconds): whether to log it, with how many occurrences
    /// were not logged since the last line.
    pub fn occurred(&mut self, now: i64) -> Option<u64> {
        let due = self
            .last_logged
            .is_none_or(|last| now.saturating_sub(last) >= self.interval_millis);
        if !due {
            self.suppressed += 1;
            return None;
        }
        self.last_logged = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::ThrottledWarning;

    #[test]
    fn the_first_occurrence_and_one_per_interval_are_logged_with_the_count_between() {
        let mut warning = ThrottledWarning::new(10_000);
        let logged: Vec<(i64, u64)> = [0, 1, 2, 9_999, 10_000, 10_001, 25_000, 25_000]
            .into_iter()
            .filter_map(|now| warning.occurred(now).map(|suppressed| (now, suppressed)))
            .collect();
        assert_eq!(logged, [(0, 0), (10_000, 3), (25_000, 1)]);
    }
}
