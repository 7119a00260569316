//! The firing state of one window of one key: how many panes it emitted, what arrived since
//! the last one, and what to retract. Shared by the sliced (tumbling, sliding) and the
//! session stores.

use serde::{Deserialize, Serialize};

use super::{Accumulation, Aggregate, Timing, Window};

/// A pane as a store fires it; the operator adds the key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fired<Out> {
    pub(crate) window: Window,
    pub(crate) timing: Timing,
    pub(crate) index: u32,
    pub(crate) retraction: bool,
    pub(crate) value: Out,
}

/// What a pane emitted, kept to retract it later.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Emitted<Out> {
    pub(crate) value: Out,
    pub(crate) index: u32,
    pub(crate) timing: Timing,
}

/// The firing state of one window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PaneState<Acc, Out> {
    /// Panes emitted so far, which is the next pane's index.
    pub(crate) index: u32,
    /// Elements since the previous pane (every element, before the first pane).
    pub(crate) pending: u32,
    /// The processing time of the first of them.
    pub(crate) pending_since: Option<i64>,
    /// Discarding mode after the first pane: the accumulator of the pending elements.
    /// Before the first pane every element is pending and the window's own accumulator
    /// serves.
    pub(crate) delta: Option<Acc>,
    /// Accumulating-and-retracting mode: what the previous pane emitted.
    pub(crate) last: Option<Emitted<Out>>,
    /// Accumulating-and-retracting mode: the last panes of windows merged into this one,
    /// retracted before its next pane.
    pub(crate) retract: Vec<(Window, Emitted<Out>)>,
}

impl<Acc, Out> Default for PaneState<Acc, Out> {
    fn default() -> Self {
        PaneState {
            index: 0,
            pending: 0,
            pending_since: None,
            delta: None,
            last: None,
            retract: Vec::new(),
        }
    }
}

impl<Acc: Clone, Out: Clone> PaneState<Acc, Out> {
    /// Counts an element that the window's accumulator already holds.
    pub(crate) fn record<A>(&mut self, aggregate: &A, input: &A::Input, now: i64)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        self.pending += 1;
        self.pending_since.get_or_insert(now);
        if let Some(delta) = &mut self.delta {
            aggregate.add(delta, input);
        }
    }

    /// Emits a pane (after any retractions) and starts the next one. `full` is the
    /// window's accumulator of every element.
    pub(crate) fn fire<A>(
        &mut self,
        window: Window,
        timing: Timing,
        aggregate: &A,
        accumulation: Accumulation,
        full: &Acc,
        out: &mut Vec<Fired<Out>>,
    ) where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let value = match (accumulation, &self.delta) {
            (Accumulation::Discarding, Some(delta)) => aggregate.result(delta),
            _ => aggregate.result(full),
        };
        if accumulation == Accumulation::AccumulatingAndRetracting {
            for (window, emitted) in self.retract.drain(..) {
                out.push(retraction(window, emitted));
            }
            if let Some(emitted) = self.last.take() {
                out.push(retraction(window, emitted));
            }
            self.last = Some(Emitted {
                value: value.clone(),
                index: self.index,
                timing,
            });
        }
        out.push(Fired {
            window,
            timing,
            index: self.index,
            retraction: false,
            value,
        });
        self.index += 1;
        self.pending = 0;
        self.pending_since = None;
        if accumulation == Accumulation::Discarding {
            self.delta = Some(aggregate.create());
        }
    }

    /// The window grew from `from` (a session took in an element past its end): what the
    /// previous pane emitted was for `from`, so that is what the next pane retracts.
    pub(crate) fn moved_from(&mut self, from: Window) {
        if let Some(last) = self.last.take() {
            self.retract.push((from, last));
        }
    }

    /// The state of a window made of two merged sessions, `self` of `window` with
    /// accumulator `full`, and `other` likewise.
    pub(crate) fn merge<A>(
        self,
        (window, full): (Window, &Acc),
        other: Self,
        (other_window, other_full): (Window, &Acc),
        aggregate: &A,
    ) -> Self
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let delta = match (self.delta, other.delta) {
            (None, None) => None,
            (mine, theirs) => {
                let mut delta = mine.unwrap_or_else(|| full.clone());
                aggregate.merge(&mut delta, theirs.as_ref().unwrap_or(other_full));
                Some(delta)
            }
        };
        let mut retract = self.retract;
        retract.extend(other.retract);
        retract.extend(self.last.map(|emitted| (window, emitted)));
        retract.extend(other.last.map(|emitted| (other_window, emitted)));
        PaneState {
            index: self.index.max(other.index),
            pending: self.pending + other.pending,
            pending_since: match (self.pending_since, other.pending_since) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            delta,
            last: None,
            retract,
        }
    }
}

fn retraction<Out>(window: Window, emitted: Emitted<Out>) -> Fired<Out> {
    Fired {
        window,
        timing: emitted.timing,
        index: emitted.index,
        retraction: true,
        value: emitted.value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::Sum;

    const W: Window = Window::new(0, 10);

    fn values(out: &[Fired<i64>]) -> Vec<(u32, bool, i64)> {
        out.iter()
            .map(|f| (f.index, f.retraction, f.value))
            .collect()
    }

    #[test]
    fn the_three_accumulation_modes_emit_what_they_promise() {
        let sum = Sum::of(|v: &i64| *v);
        for (mode, expected) in [
            (Accumulation::Discarding, vec![(0, false, 3), (1, false, 4)]),
            (
                Accumulation::Accumulating,
                vec![(0, false, 3), (1, false, 7)],
            ),
            (
                Accumulation::AccumulatingAndRetracting,
                vec![(0, false, 3), (0, true, 3), (1, false, 7)],
            ),
        ] {
            let mut state = PaneState::default();
            let mut full = 0;
            let mut out = Vec::new();
            for value in [1, 2] {
                full += value;
                state.record(&sum, &value, 0);
            }
            state.fire(W, Timing::Early, &sum, mode, &full, &mut out);
            full += 4;
            state.record(&sum, &4, 0);
            state.fire(W, Timing::OnTime, &sum, mode, &full, &mut out);
            assert_eq!(values(&out), expected, "{mode:?}");
        }
    }
}
