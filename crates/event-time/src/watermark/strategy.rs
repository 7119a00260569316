//! [`Watermarks`]: how watermarks are generated from an input's event timestamps.

use std::time::Duration;

use crate::watermark::Alignment;
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
///
/// /// A join's inlets read within 30 s of event time of each other over a backlog.
/// pub const ORDERS: Watermarks = Watermarks::bounded(Duration::from_secs(1))
///     .max_drift(Duration::from_secs(30));
/// assert_eq!(ORDERS.max_drift_millis(), Some(30_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    /// `None`: no watermark until the end of the input.
    bound: Option<i64>,
    idle_after: Option<i64>,
    /// How far in event time one inlet may read ahead of another that is still
    /// delivering; `None`: inlets are read as their records come.
    max_drift: Option<i64>,
}

impl Watermarks {
    /// Bounded out-of-orderness: a partition's watermark trails the largest timestamp it
    /// delivered by `bound`, so elements at most `bound` behind the newest are on time.
    /// Partitions go idle after a minute without records; inlets read within 10 s of event
    /// time of each other.
    pub const fn bounded(bound: Duration) -> Self {
        Watermarks {
            bound: Some(windows_millis(bound)),
            idle_after: Some(60_000),
            max_drift: Some(Alignment::DEFAULT_MAX_DRIFT_MILLIS),
        }
    }

    /// No watermark until the input ends, as in a batch job: every window fires once, at
    /// the end, with everything. Only useful for bounded inputs.
    pub const fn at_end_of_input() -> Self {
        Watermarks {
            bound: None,
            idle_after: None,
            max_drift: Some(Alignment::DEFAULT_MAX_DRIFT_MILLIS),
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

    /// A streamlet with several inlets reads them in step: an inlet whose records are more
    /// than `drift` of event time ahead of another inlet still delivering is left unread
    /// until that one catches up (Flink's watermark alignment; see [`Alignment`]). The
    /// default, 10 s, is well beyond the out-of-orderness watermarks usually allow, so
    /// inlets in step are never held; over a backlog it keeps what a join holds from the
    /// inlet that runs ahead to `drift` worth of records.
    pub const fn max_drift(mut self, drift: Duration) -> Self {
        self.max_drift = Some(windows_millis(drift));
        self
    }

    /// Inlets are read as their records come, however far apart in event time: over a
    /// backlog, a join holds everything its faster inlet read ahead.
    pub const fn unaligned(mut self) -> Self {
        self.max_drift = None;
        self
    }

    /// How far in event time, in milliseconds, one inlet may read ahead of another still
    /// delivering; `None` when inlets are not read in step.
    pub const fn max_drift_millis(&self) -> Option<i64> {
        self.max_drift
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
    /// Bounded by 5 seconds, idle after a minute, inlets read within 10 s of each other.
    fn default() -> Self {
        Watermarks::bounded(Duration::from_secs(5))
    }
}
