//! [`Cx`]: what the operator hands a key's store ([`Sliced`](super::sliced::Sliced),
//! [`Sessions`](super::sessions::Sessions), [`Global`](super::global::Global)) for one call.
//!
//! It lives apart from the operator so that dependencies run one way: the operator uses the
//! stores, the stores use this, and nothing here uses the operator.

use super::WindowSpec;
use super::aggregate::Aggregate;
use super::geometry::Geometry;
use super::pane_state::Fired;
use super::trigger_state::Moment;

/// What a store needs for one call, and what it asks of the operator's timers.
pub(crate) struct Cx<'a, A: Aggregate> {
    pub(crate) aggregate: &'a A,
    pub(crate) spec: &'a WindowSpec,
    pub(crate) geometry: Geometry,
    /// Whether the aggregate subtracts ([`Aggregate::subtract`]).
    pub(crate) subtracts: bool,
    /// Whether the trigger needs no state per window before the window's end.
    pub(crate) lazy: bool,
    /// The watermark the call runs at.
    pub(crate) watermark: i64,
    /// The watermark the operator is moving to. A call for a timer runs at the timer's
    /// time (so panes come out in event-time order), but a window whose allowed lateness
    /// ends by this one expires with the pane it fires now: at the end of a bounded input
    /// (`i64::MAX`) a window's on-time pane is its last, as in Beam.
    pub(crate) target_watermark: i64,
    /// The processing time.
    pub(crate) now: i64,
    pub(crate) fired: &'a mut Vec<Fired<A::Output>>,
    /// The earliest watermark the key asked for in this call ([`Cx::event_at`]); the
    /// operator sets it to `None` and registers the key's timer from it afterwards.
    pub(super) event_hint: Option<i64>,
    /// The earliest processing time the key asked for in this call
    /// ([`Cx::processing_at`]), like `event_hint`.
    pub(super) processing_hint: Option<i64>,
}

impl<A: Aggregate> Cx<'_, A> {
    /// Where a window ending at `end` stands in this call.
    pub(crate) fn moment(&self, end: i64) -> Moment {
        Moment {
            watermark: self.watermark,
            now: self.now,
            end,
        }
    }

    /// The key needs the watermark when it reaches `time`.
    pub(crate) fn event_at(&mut self, time: i64) {
        self.event_hint = Some(self.event_hint.map_or(time, |hint| hint.min(time)));
    }

    /// The key needs processing time when it reaches `time`.
    pub(crate) fn processing_at(&mut self, time: i64) {
        self.processing_hint = Some(self.processing_hint.map_or(time, |hint| hint.min(time)));
    }
}
