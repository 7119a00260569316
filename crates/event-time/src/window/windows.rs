//! [`Windows`]: which windows an element belongs to.

use std::time::Duration;

use super::Window;

/// How event time is cut into windows.
///
/// - **Tumbling** (fixed): back-to-back windows of one size; each element is in one.
/// - **Sliding** (hopping): windows of one size starting every `slide`; each element is in
///   `size / slide` of them (rounded up).
/// - **Session**: per key, a window around each burst of activity, ending after a gap of
///   `gap` without elements. Sessions grow and merge as elements arrive, so an element that
///   bridges two sessions turns them into one.
/// - **Global**: one window per key for all time, `[i64::MIN, i64::MAX)`, which ends only
///   with the input: the batch case, or per-key state emitted by a trigger.
///
/// Tumbling and sliding windows are aligned to the Unix epoch.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{Window, Windows};
///
/// let minutes = Windows::sliding(Duration::from_secs(120), Duration::from_secs(60));
/// assert_eq!(
///     minutes.windows_of(90_000),
///     [Window::new(0, 120_000), Window::new(60_000, 180_000)]
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Windows {
    /// Back-to-back windows of `size` milliseconds.
    Tumbling {
        /// The window length in milliseconds.
        size: i64,
    },
    /// Windows of `size` milliseconds starting every `slide` milliseconds.
    Sliding {
        /// The window length in milliseconds.
        size: i64,
        /// The distance between window starts in milliseconds.
        slide: i64,
    },
    /// Sessions that close after `gap` milliseconds without an element of their key.
    Session {
        /// The inactivity gap in milliseconds.
        gap: i64,
    },
    /// One window per key holding every element: [`Window::GLOBAL`].
    Global,
}

impl Windows {
    /// Back-to-back windows of `size`.
    pub const fn tumbling(size: Duration) -> Self {
        Windows::Tumbling { size: millis(size) }
    }

    /// Windows of `size` starting every `slide`.
    pub const fn sliding(size: Duration, slide: Duration) -> Self {
        Windows::Sliding {
            size: millis(size),
            slide: millis(slide),
        }
    }

    /// Sessions closing after `gap` of inactivity.
    pub const fn session(gap: Duration) -> Self {
        Windows::Session { gap: millis(gap) }
    }

    /// The windows holding an element at `timestamp`, by start. For sessions, the
    /// element's own session before merging: `[timestamp, timestamp + gap)`.
    pub fn windows_of(&self, timestamp: i64) -> Vec<Window> {
        match *self {
            Windows::Session { gap } => vec![Window::new(timestamp, timestamp.saturating_add(gap))],
            Windows::Global => vec![Window::GLOBAL],
            _ => {
                let (size, slide) = self.size_and_slide();
                let mut windows = Vec::new();
                let mut start = floor(timestamp, slide);
                while start.saturating_add(size) > timestamp {
                    windows.push(Window::new(start, start.saturating_add(size)));
                    start -= slide;
                }
                windows.reverse();
                windows
            }
        }
    }

    /// Size and slide of a tumbling or sliding assignment (tumbling: slide = size).
    pub(crate) fn size_and_slide(&self) -> (i64, i64) {
        match *self {
            Windows::Tumbling { size } => (size, size),
            Windows::Sliding { size, slide } => (size, slide),
            Windows::Session { gap } => (gap, gap),
            Windows::Global => (i64::MAX, i64::MAX),
        }
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) const fn millis(duration: Duration) -> i64 {
    let millis = duration.as_millis();
    if millis > i64::MAX as u128 {
        i64::MAX
    } else {
        millis as i64
    }
}

/// The largest multiple of `step` that is at most `value` (also for negative values).
pub(crate) fn floor(value: i64, step: i64) -> i64 {
    value.saturating_sub(value.rem_euclid(step))
}

/// The greatest common divisor, for slicing sliding windows.
pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tumbling_windows_are_aligned_half_open_and_handle_negative_times() {
        let windows = Windows::tumbling(Duration::from_secs(10));
        assert_eq!(windows.windows_of(0), [Window::new(0, 10_000)]);
        assert_eq!(windows.windows_of(9_999), [Window::new(0, 10_000)]);
        assert_eq!(windows.windows_of(10_000), [Window::new(10_000, 20_000)]);
        assert_eq!(windows.windows_of(-1), [Window::new(-10_000, 0)]);
    }

    #[test]
    fn sliding_windows_cover_each_element_size_over_slide_times() {
        let windows = Windows::sliding(Duration::from_secs(10), Duration::from_secs(2));
        let of = windows.windows_of(11_000);
        assert_eq!(of.len(), 5);
        assert_eq!(of[0], Window::new(2_000, 12_000));
        assert_eq!(of[4], Window::new(10_000, 20_000));
        assert!(of.iter().all(|window| window.contains(11_000)));
        // A slide that does not divide the size.
        let uneven = Windows::sliding(Duration::from_millis(10), Duration::from_millis(4));
        assert_eq!(
            uneven.windows_of(9),
            [Window::new(0, 10), Window::new(4, 14), Window::new(8, 18)]
        );
    }

    #[test]
    fn the_global_window_holds_every_element() {
        assert_eq!(Windows::Global.windows_of(i64::MIN), [Window::GLOBAL]);
        assert_eq!(
            Windows::Global.windows_of(1_700_000_000_000),
            [Window::GLOBAL]
        );
    }

    #[test]
    fn a_session_starts_as_the_gap_after_its_element() {
        let sessions = Windows::session(Duration::from_secs(60));
        assert_eq!(sessions.windows_of(5), [Window::new(5, 60_005)]);
    }
}
