//! [`Trigger`]: when a window's panes fire, in the Dataflow model's early / on-time / late
//! form.

use std::time::Duration;

use super::windows::millis;

/// When a window emits panes.
///
/// Every trigger fires **on time**: once, when the watermark passes the end of the window.
/// Optionally it also fires **early**, before that, and it fires **late** for elements that
/// arrive after it, within the allowed lateness (by default on every late element, as
/// Beam's default trigger does; late elements exist only with an allowed lateness above
/// zero).
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::window::{Firing, Trigger};
///
/// // A speculative pane a minute (processing time) after the first element of each pane,
/// // the on-time pane, then a pane for every late element.
/// const TRIGGER: Trigger = Trigger::on_time()
///     .early(Firing::after_delay(Duration::from_secs(60)))
///     .late(Firing::every(1));
/// # let _ = TRIGGER;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    pub(crate) early: Option<Firing>,
    pub(crate) late: Firing,
}

impl Trigger {
    /// Fires once when the watermark passes the end of the window, and for every late
    /// element.
    pub const fn on_time() -> Self {
        Trigger {
            early: None,
            late: Firing::every(1),
        }
    }

    /// Also fires before the window is complete, whenever `firing` says so.
    pub const fn early(mut self, firing: Firing) -> Self {
        self.early = Some(firing);
        self
    }

    /// Fires for late elements whenever `firing` says so (instead of on every one).
    pub const fn late(mut self, firing: Firing) -> Self {
        self.late = firing;
        self
    }

    /// The early firings, if any.
    pub const fn early_firing(&self) -> Option<Firing> {
        self.early
    }

    /// The late firings.
    pub const fn late_firing(&self) -> Firing {
        self.late
    }
}

impl Default for Trigger {
    fn default() -> Self {
        Trigger::on_time()
    }
}

/// A repeated firing condition for the elements of a pane (the elements a window received
/// since its previous pane): a processing-time delay after the first of them, a count, or
/// whichever comes first.
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::window::Firing;
/// let firing = Firing::after_delay(Duration::from_secs(30)).or_every(100);
/// assert_eq!(firing.delay_millis(), Some(30_000));
/// assert_eq!(firing.count(), Some(100));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Firing {
    delay: Option<i64>,
    count: Option<u32>,
}

impl Firing {
    /// Fires `delay` of processing time after the first element of the pane.
    pub const fn after_delay(delay: Duration) -> Self {
        Firing {
            delay: Some(millis(delay)),
            count: None,
        }
    }

    /// Fires once the pane holds `count` elements (at least 1).
    pub const fn every(count: u32) -> Self {
        Firing {
            delay: None,
            count: Some(if count == 0 { 1 } else { count }),
        }
    }

    /// Also fires once the pane holds `count` elements, if that comes before the delay.
    pub const fn or_every(mut self, count: u32) -> Self {
        self.count = Some(if count == 0 { 1 } else { count });
        self
    }

    /// The delay after the first element of a pane, in milliseconds.
    pub const fn delay_millis(&self) -> Option<i64> {
        self.delay
    }

    /// The element count that fires a pane.
    pub const fn count(&self) -> Option<u32> {
        self.count
    }

    /// Whether a pane of `pending` elements, the first of which arrived at `since`, is due
    /// at processing time `now`.
    pub(crate) fn is_due(&self, pending: u32, since: Option<i64>, now: i64) -> bool {
        pending > 0
            && (self.count.is_some_and(|count| pending >= count)
                || matches!((self.delay, since), (Some(delay), Some(since)) if since.saturating_add(delay) <= now))
    }

    /// When a pane whose first element arrived at `since` is due by delay.
    pub(crate) fn deadline(&self, since: Option<i64>) -> Option<i64> {
        Some(since?.saturating_add(self.delay?))
    }
}
