//! Windows over event time: the Dataflow (Beam) model of *what* is computed (windows and
//! aggregates), *where* in event time (tumbling, sliding and session windows), *when* in
//! processing time results are emitted (triggers, composed from Beam's: the watermark with
//! early and late firings, processing-time delays, element counts, repetition, sequences)
//! and *how* later results relate to earlier ones (accumulation: discarding, accumulating,
//! accumulating-and-retracting). Each pane says what it is among its window's panes
//! ([`PaneInfo`]: timing, index, first, last), as Beam's `PaneInfo` does.
//!
//! The engine is pure: [`WindowOperator`] is driven by explicit calls (an element with its
//! event time, a new watermark, the current processing time) and returns the [`Pane`]s that
//! fire. It knows nothing of inlets, logs or clocks, so every rule is unit-testable. The
//! `WindowedAggregate` helper of `runnel-streamlet` runs it inside a streamlet, with
//! watermarks from [`watermark`](crate::watermark), checkpoints and a late-data output.
//!
//! ```
//! use std::time::Duration;
//! use runnel_event_time::window::{Added, Sum, WindowOperator, WindowSpec};
//!
//! // Sum per key in fixed 2-minute windows, fired once when the watermark passes the end.
//! const SPEC: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120));
//! let mut sums = WindowOperator::new(SPEC, Sum::of(|points: &i64| *points));
//! let mut panes = Vec::new();
//! let now = 0; // processing time, only used by processing-time triggers
//! sums.add("TeamX".to_owned(), 26_000, &5, now, &mut panes);
//! sums.add("TeamX".to_owned(), 85_000, &9, now, &mut panes);
//! sums.advance_watermark(120_000, now, &mut panes);
//! assert_eq!(panes.len(), 1);
//! assert_eq!((panes[0].window_start, panes[0].window_end, panes[0].value), (0, 120_000, 14));
//! // The window is gone: with no allowed lateness, an element for it is late.
//! assert_eq!(sums.add("TeamX".to_owned(), 1_000, &3, now, &mut panes), Added::Late);
//! ```
//!
//! Times are milliseconds since the Unix epoch (event time and processing time alike), as
//! in a message's timestamp. Windows are half-open,
//! `[start, end)`, and aligned to the epoch. A watermark `w` says that no more elements with
//! a timestamp below `w` are expected, so a window is complete once the watermark reaches
//! its end.

mod accumulation;
mod aggregate;
mod aggregates;
mod behavior;
mod changes;
mod cx;
mod geometry;
mod global;
mod operator;
mod pane;
mod pane_state;
mod sessions;
mod sliced;
mod snapshot;
mod spec;
mod timers;
mod trigger;
mod trigger_check;
mod trigger_state;
mod windows;

use serde::{Deserialize, Serialize};

pub use accumulation::Accumulation;
pub use aggregate::Aggregate;
pub use aggregates::{Average, Count, Max, Min, Number, ProcessWindow, Sum};
pub use behavior::{ClosingBehavior, OnTimeBehavior};
pub use operator::{Added, Key, WindowOperator};
#[doc(hidden)] // for the streamlet helper that runs the engine
pub use operator::{KeyState, State};
pub use pane::{Pane, PaneHeaderError, PaneInfo, Timing};
pub use snapshot::RestoreError;
pub use spec::{SpecError, WindowSpec};
pub use trigger::{Firing, Trigger};
pub use windows::Windows;
pub(crate) use windows::millis as windows_millis;

/// A half-open interval of event time, `[start, end)`, in milliseconds.
///
/// ```
/// use runnel_event_time::window::Window;
/// let window = Window::new(0, 120_000);
/// assert!(window.contains(0) && window.contains(119_999) && !window.contains(120_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Window {
    /// The first millisecond in the window.
    pub start: i64,
    /// The first millisecond after the window.
    pub end: i64,
}

impl Window {
    /// The global window, `[i64::MIN, i64::MAX)`: every element of a key, for all time
    /// ([`Windows::Global`]).
    pub const GLOBAL: Window = Window::new(i64::MIN, i64::MAX);

    /// The window `[start, end)`.
    pub const fn new(start: i64, end: i64) -> Self {
        Window { start, end }
    }

    /// Whether `timestamp` falls in the window.
    pub const fn contains(&self, timestamp: i64) -> bool {
        self.start <= timestamp && timestamp < self.end
    }

    /// Whether the two windows share at least one millisecond (touching is not enough).
    pub const fn overlaps(&self, other: &Window) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// The smallest window holding both.
    pub fn span(&self, other: &Window) -> Window {
        Window::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}
