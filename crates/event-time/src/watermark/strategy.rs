//! [`Watermarks`]: how watermarks are generated from an input's event timestamps.

use std::time::Duration;

use crate::window::windows_millis;

/// How an input's watermarks are generated, per partition.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::watermark::Watermarks;
///
/// /// Readings arrive at most 4 s out of order; a quiet partition is ignored after a minute.
/// pub const READINGS: Watermarks =
///     Watermarks::bounded(Duration::from_secs(4)).idle_after(Duration::from_secs(60));
/// assert_eq!(READINGS.bound_millis(), Some(4_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    /// `None`: no watermark until the end of the input.
    bound: Option<i64>,
    idle_after: Option<i64>,
}

impl Watermarks {
    /// Bounded out-of-orderness: a partition's watermark trails the largest timestamp it
    /// delivered by `bound`, so elements at most `bound` behind the newest are on time.
    /// Partitions go idle after a minute without records.
    pub const fn bounded(bound: Duration) -> Self {
        Watermarks {
            bound: Some(windows_millis(bound)),
            idle_after: Some(60_000),
        }
    }

    /// No watermark until the input ends, as in a batch job: every window fires once, at
    /// the end, with everything. Only useful for bounded inputs.
    pub const fn at_end_of_input() -> Self {
        Watermarks {
            bound: None,
            idle_after: None,
        }
    }

    /// A partition that delivers nothing for `timeout` of processing time is idle: it no
    /// longer holds the watermark back until it delivers again.
    pub const fn idle_after(mut self, timeout: Duration) -> Self {
        self.idle_after = Some(windows_millis(timeout));
        self
    }

    /// Partitions never count as idle: an empty partition holds the watermark forever.
    pub const fn never_idle(mut self) -> Self {
        self.idle_after = None;
        self
    }

    /// The out-of-orderness bound in milliseconds, if watermarks advance with the data.
    pub const fn bound_millis(&self) -> Option<i64> {
        self.bound
    }

    /// The idle timeout in milliseconds.
    pub const fn idle_after_millis(&self) -> Option<i64> {
        self.idle_after
    }
}

impl Default for Watermarks {
    /// Bounded by 5 seconds, idle after a minute.
    fn default() -> Self {
        Watermarks::bounded(Duration::from_secs(5))
    }
}
