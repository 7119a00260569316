//! [`Geometry`]: the window lengths of a tumbling or sliding assignment, which the operator
//! computes once and the sliced store cuts time by.

use super::windows::floor;

/// Window lengths of a tumbling or sliding assignment, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) size: i64,
    pub(crate) slide: i64,
    /// The slice length: the greatest common divisor of size and slide.
    pub(crate) step: i64,
}

impl Geometry {
    /// The start of the earliest window holding `timestamp`.
    pub(super) fn first_start(&self, timestamp: i64) -> i64 {
        floor(timestamp.saturating_sub(self.size), self.slide).saturating_add(self.slide)
    }

    /// The start of the latest window holding `timestamp`.
    pub(super) fn last_start(&self, timestamp: i64) -> i64 {
        floor(timestamp, self.slide)
    }

    /// Whether an element at `timestamp` is too late for every window it belongs to.
    pub(crate) fn is_late(&self, timestamp: i64, lateness: i64, watermark: i64) -> bool {
        let last_end = self.last_start(timestamp).saturating_add(self.size);
        last_end > timestamp && last_end.saturating_add(lateness) <= watermark
    }
}
