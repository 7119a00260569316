//! The global window of one key: every element, one accumulator, panes as the trigger
//! says, and a last pane when the input ends (the only time the watermark reaches the end
//! of the global window).

use serde::{Deserialize, Serialize};

use super::cx::Cx;
use super::pane_state::{OnTime, PaneState};
use super::{Aggregate, Trigger, Window};

/// A key's global window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Global<Acc, Out> {
    accumulator: Acc,
    /// The latest event time among the elements: the panes' event time (the end of the
    /// global window would move any later watermark to the end of time).
    latest: i64,
    pane: PaneState<Acc, Out>,
    /// Whether the window expired (the input ended).
    done: bool,
}

impl<Acc: Clone, Out: Clone> Global<Acc, Out> {
    pub(crate) fn new(accumulator: Acc) -> Self {
        Global {
            accumulator,
            latest: i64::MIN,
            pane: PaneState::new(OnTime::Before),
            done: false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.done
    }

    /// Fills in what a checkpoint from before panes had metadata lacks.
    pub(crate) fn upgrade(&mut self, trigger: &Trigger) {
        self.pane.upgrade(trigger, false);
    }

    /// Adds an element.
    pub(crate) fn add<A>(&mut self, cx: &mut Cx<'_, A>, timestamp: i64, input: &A::Input)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        cx.aggregate.add(&mut self.accumulator, input);
        self.latest = self.latest.max(timestamp);
        self.pane
            .record(cx.aggregate, cx.spec, input, cx.moment(Window::GLOBAL.end));
        cx.event_at(Window::GLOBAL.end);
        self.conclude(cx, false);
    }

    /// Fires the last pane when the watermark reaches the end of time; returns when the key
    /// next needs the watermark.
    pub(crate) fn on_watermark<A>(&mut self, cx: &mut Cx<'_, A>) -> Option<i64>
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        if cx.watermark == Window::GLOBAL.end {
            self.conclude(cx, true);
            None
        } else {
            Some(Window::GLOBAL.end)
        }
    }

    /// Fires a pane whose processing-time deadline has passed.
    pub(crate) fn on_processing_time<A>(&mut self, cx: &mut Cx<'_, A>)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        self.conclude(cx, false);
    }

    fn conclude<A>(&mut self, cx: &mut Cx<'_, A>, expiring: bool)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let window = Window::GLOBAL;
        let due = self.pane.decide(cx.spec, cx.moment(window.end), expiring);
        if let Some(due) = due {
            self.pane.emit(
                window,
                due,
                cx.aggregate,
                cx.spec.accumulation,
                &self.accumulator,
                self.latest,
                cx.fired,
            );
        }
        self.done = expiring || due.is_some_and(|due| due.last);
        if !self.done
            && let Some(deadline) = self.pane.deadline(&cx.spec.trigger, cx.now)
        {
            cx.processing_at(deadline);
        }
    }
}
