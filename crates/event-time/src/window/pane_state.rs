//! The firing state of one window of one key: its trigger's state, how many panes it
//! emitted, what arrived since the last one, where it stands with its on-time pane, and
//! what to retract. Shared by the sliced (tumbling, sliding), session and global stores.
//!
//! A store asks [`PaneState::decide`] whenever something could make the window fire (an
//! element, the watermark reaching its end or its expiry, a processing-time deadline), and
//! if a pane is due, computes the window's accumulator and calls [`PaneState::emit`]. The
//! two steps are apart so that a store computes an accumulator only for panes that fire.

use serde::{Deserialize, Serialize};

use super::trigger_state::{Moment, TriggerState};
use super::{
    Accumulation, Aggregate, ClosingBehavior, OnTimeBehavior, PaneInfo, Timing, Trigger, Window,
    WindowSpec,
};

/// A pane as a store fires it; the operator adds the key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fired<Out> {
    pub(crate) window: Window,
    pub(crate) info: PaneInfo,
    pub(crate) timestamp: i64,
    pub(crate) value: Out,
}

/// What a pane emitted, kept to retract it later.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Emitted<Out> {
    pub(crate) value: Out,
    pub(crate) index: u32,
    pub(crate) timing: Timing,
    #[serde(default)]
    pub(crate) on_time_index: Option<u32>,
    /// `None` in checkpoints from before panes had timestamps: the end of the window.
    #[serde(default)]
    pub(crate) timestamp: Option<i64>,
}

/// Where a window stands with its on-time pane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OnTime {
    /// The watermark has not passed the end of the window.
    Before,
    /// It has, with elements waiting that arrived before: the next pane is on time.
    Due,
    /// The on-time pane fired or was skipped, or nothing was waiting when the watermark
    /// passed the end, or the window started after its end: every later pane is late.
    Past,
    /// Restored from a checkpoint taken before windows kept this; [`PaneState::upgrade`]
    /// works it out.
    #[default]
    Unknown,
}

/// The firing state of one window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PaneState<Acc, Out> {
    /// Panes emitted so far, which is the next pane's index.
    pub(crate) index: u32,
    /// Panes emitted so far that were not early: the next on-time index.
    #[serde(default)]
    pub(crate) not_early: u32,
    /// Elements since the previous pane (every element, before the first pane).
    pub(crate) pending: u32,
    /// Discarding mode after the first pane: the accumulator of the pending elements.
    /// Before the first pane every element is pending and the window's own accumulator
    /// serves.
    pub(crate) delta: Option<Acc>,
    /// Accumulating-and-retracting mode: what the previous pane emitted.
    pub(crate) last: Option<Emitted<Out>>,
    /// Accumulating-and-retracting mode: the last panes of windows merged into this one,
    /// retracted before its next pane.
    pub(crate) retract: Vec<(Window, Emitted<Out>)>,
    /// What the trigger remembers.
    #[serde(default)]
    pub(crate) trigger: TriggerState,
    #[serde(default)]
    pub(crate) on_time: OnTime,
    /// In checkpoints from before triggers kept state: when the first pending element
    /// arrived. Read once by [`upgrade`](Self::upgrade).
    #[serde(default, skip_serializing)]
    pending_since: Option<i64>,
}

/// A pane to emit, as [`PaneState::decide`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Due {
    pub(crate) timing: Timing,
    /// Whether it is the window's last pane.
    pub(crate) last: bool,
}

impl<Acc, Out> PaneState<Acc, Out> {
    /// A window with nothing emitted and nothing pending.
    pub(crate) fn new(on_time: OnTime) -> Self {
        PaneState {
            index: 0,
            not_early: 0,
            pending: 0,
            delta: None,
            last: None,
            retract: Vec::new(),
            trigger: TriggerState::default(),
            on_time,
            pending_since: None,
        }
    }

    /// A window without firing state so far, which its trigger did not need before the
    /// end of the window: every element it holds is pending.
    pub(crate) fn untouched() -> Self {
        PaneState {
            pending: 1,
            ..Self::new(OnTime::Before)
        }
    }

    /// Whether nothing arrived since the last pane.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Fills in what a checkpoint from before this state existed lacks, for a window whose
    /// end the watermark passed if `past_end`.
    pub(crate) fn upgrade(&mut self, trigger: &Trigger, past_end: bool) {
        if self.on_time != OnTime::Unknown {
            return;
        }
        self.on_time = if past_end {
            OnTime::Past
        } else {
            OnTime::Before
        };
        if past_end && self.index > 0 {
            self.not_early = 1; // the on-time pane fired; how many late ones is not known
        }
        self.trigger =
            TriggerState::legacy(trigger, self.pending, self.pending_since.take(), past_end);
        // What a pane emitted was not early after the end; which of the late panes it was
        // is not known: take the latest.
        let not_early = self.not_early;
        let emitted = self
            .last
            .iter_mut()
            .chain(self.retract.iter_mut().map(|(_, emitted)| emitted));
        for emitted in emitted {
            if emitted.on_time_index.is_none() && emitted.timing != Timing::Early {
                emitted.on_time_index = Some(match emitted.timing {
                    Timing::OnTime => 0,
                    _ => not_early.saturating_sub(1),
                });
            }
        }
    }

    /// The next processing time after `now` at which the trigger may fire.
    pub(crate) fn deadline(&self, trigger: &Trigger, now: i64) -> Option<i64> {
        self.trigger.deadline(trigger, now)
    }

    /// Decides whether a pane fires at `moment`: because the trigger fires, or because the
    /// window is `expiring`. Moves the trigger and the on-time standing on.
    pub(crate) fn decide(
        &mut self,
        spec: &WindowSpec,
        moment: Moment,
        expiring: bool,
    ) -> Option<Due> {
        let past_end = moment.watermark >= moment.end;
        let fires = self.trigger.should_fire(&spec.trigger, &moment);
        if self.on_time == OnTime::Before && past_end {
            // The end of the window: the pane fired now, or the next one with what waits,
            // is on time; with nothing firing and nothing waiting, the moment passes.
            self.on_time = if fires || !self.is_empty() {
                OnTime::Due
            } else {
                OnTime::Past
            };
        }
        // An expiring window's state is dropped: its trigger need not move on.
        let finished = fires && !expiring && self.trigger.on_fire(&spec.trigger, &moment);
        let last = finished || expiring;
        if !fires && !expiring {
            return None;
        }
        let timing = if !past_end {
            Timing::Early
        } else if self.on_time == OnTime::Due {
            Timing::OnTime
        } else {
            Timing::Late
        };
        if timing == Timing::OnTime {
            self.on_time = OnTime::Past; // fired or skipped: the moment is gone
        }
        let emit = !self.is_empty()
            || (timing == Timing::OnTime && fires && spec.on_time == OnTimeBehavior::FireAlways)
            || (last && spec.closing == ClosingBehavior::FireAlways);
        emit.then_some(Due { timing, last })
    }
}

impl<Acc: Clone, Out: Clone> PaneState<Acc, Out> {
    /// Counts an element that the window's accumulator already holds, and tells the
    /// trigger.
    pub(crate) fn record<A>(
        &mut self,
        aggregate: &A,
        spec: &WindowSpec,
        input: &A::Input,
        moment: Moment,
    ) where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        self.pending += 1;
        if let Some(delta) = &mut self.delta {
            aggregate.add(delta, input);
        }
        self.trigger.on_element(&spec.trigger, &moment);
    }

    /// Emits the pane `due` found (after any retractions) and starts the next one. `full`
    /// is the window's accumulator of every element, `timestamp` the pane's event time.
    #[allow(clippy::too_many_arguments)] // one call per store, each with its own accumulator
    pub(crate) fn emit<A>(
        &mut self,
        window: Window,
        due: Due,
        aggregate: &A,
        accumulation: Accumulation,
        full: &Acc,
        timestamp: i64,
        out: &mut Vec<Fired<Out>>,
    ) where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let value = match (accumulation, &self.delta) {
            (Accumulation::Discarding, Some(delta)) => aggregate.result(delta),
            _ => aggregate.result(full),
        };
        let on_time_index = (due.timing != Timing::Early).then_some(self.not_early);
        if due.timing != Timing::Early {
            self.not_early += 1;
        }
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
                timing: due.timing,
                on_time_index,
                timestamp: Some(timestamp),
            });
        }
        out.push(Fired {
            window,
            info: PaneInfo {
                timing: due.timing,
                index: self.index,
                on_time_index,
                is_first: self.index == 0,
                is_last: due.last,
                retraction: false,
            },
            timestamp,
            value,
        });
        self.index += 1;
        self.pending = 0;
        if accumulation == Accumulation::Discarding {
            self.delta = Some(aggregate.create());
        }
    }

    /// The state of `window`, a new window made of merged windows (sessions that merged,
    /// or one that grew): Beam's merged window, whose panes start again at index 0. Each
    /// part is a merged window, its state and its accumulator. What the parts emitted is
    /// retracted before the new window's first pane (accumulating-and-retracting mode).
    pub(crate) fn merged<A>(
        parts: Vec<(Window, Self, &Acc)>,
        window: Window,
        aggregate: &A,
        spec: &WindowSpec,
        moment: Moment,
    ) -> Self
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let moment = Moment {
            end: window.end,
            ..moment
        };
        let states: Vec<&TriggerState> = parts.iter().map(|(_, state, _)| &state.trigger).collect();
        let trigger = TriggerState::merge(&spec.trigger, &states, &moment);
        let on_time = if moment.watermark < window.end {
            OnTime::Before
        } else if parts
            .iter()
            .any(|(_, state, _)| matches!(state.on_time, OnTime::Before | OnTime::Due))
        {
            OnTime::Due
        } else {
            OnTime::Past
        };
        let delta = if parts.iter().all(|(_, state, _)| state.delta.is_none()) {
            None
        } else {
            let mut delta = aggregate.create();
            for (_, state, full) in &parts {
                aggregate.merge(&mut delta, state.delta.as_ref().unwrap_or(full));
            }
            Some(delta)
        };
        let mut merged = PaneState {
            pending: parts.iter().map(|(_, state, _)| state.pending).sum(),
            delta,
            trigger,
            ..Self::new(on_time)
        };
        for (from, state, _) in parts {
            merged.retract.extend(state.retract);
            merged
                .retract
                .extend(state.last.map(|emitted| (from, emitted)));
        }
        merged
    }
}

fn retraction<Out>(window: Window, emitted: Emitted<Out>) -> Fired<Out> {
    Fired {
        window,
        info: PaneInfo {
            timing: emitted.timing,
            index: emitted.index,
            on_time_index: emitted.on_time_index,
            is_first: emitted.index == 0,
            is_last: false,
            retraction: true,
        },
        timestamp: emitted
            .timestamp
            .unwrap_or_else(|| window.end.saturating_sub(1)),
        value: emitted.value,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::window::Sum;

    const W: Window = Window::new(0, 10);

    fn values(out: &[Fired<i64>]) -> Vec<(u32, bool, i64)> {
        out.iter()
            .map(|f| (f.info.index, f.info.retraction, f.value))
            .collect()
    }

    fn moment(watermark: i64) -> Moment {
        Moment {
            watermark,
            now: 0,
            end: W.end,
        }
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
            let spec = WindowSpec::tumbling(Duration::from_millis(10))
                .trigger(Trigger::watermark().early(Trigger::element_count(2)))
                .accumulation(mode);
            let mut state = PaneState::new(OnTime::Before);
            let mut full = 0;
            let mut out = Vec::new();
            for value in [1, 2] {
                full += value;
                state.record(&sum, &spec, &value, moment(0));
            }
            let due = state.decide(&spec, moment(0), false).expect("two elements");
            assert_eq!(
                due,
                Due {
                    timing: Timing::Early,
                    last: false
                }
            );
            state.emit(W, due, &sum, mode, &full, 9, &mut out);
            full += 4;
            state.record(&sum, &spec, &4, moment(0));
            assert_eq!(
                state.decide(&spec, moment(0), false),
                None,
                "one is not enough"
            );
            let due = state.decide(&spec, moment(10), true).expect("on time");
            assert_eq!(
                due,
                Due {
                    timing: Timing::OnTime,
                    last: true
                }
            );
            state.emit(W, due, &sum, mode, &full, 9, &mut out);
            assert_eq!(values(&out), expected, "{mode:?}");
            let last = out.last().unwrap().info;
            assert_eq!(
                (last.on_time_index, last.is_first, last.is_last),
                (Some(0), false, true)
            );
        }
    }

    #[test]
    fn an_empty_on_time_pane_fires_unless_asked_not_to() {
        let spec = WindowSpec::tumbling(Duration::from_millis(10))
            .trigger(Trigger::on_time().early(Trigger::element_count(1)))
            .allowed_lateness(Duration::from_millis(100));
        let sum = Sum::of(|v: &i64| *v);
        let mut state: PaneState<i64, i64> = PaneState::new(OnTime::Before);
        state.record(&sum, &spec, &1, moment(0));
        let due = state.decide(&spec, moment(0), false).unwrap();
        state.emit(
            W,
            due,
            &sum,
            Accumulation::Discarding,
            &1,
            9,
            &mut Vec::new(),
        );
        let mut skipping = state.clone();
        assert_eq!(
            state.decide(&spec, moment(10), false),
            Some(Due {
                timing: Timing::OnTime,
                last: false
            })
        );
        let skip = spec.on_time_behavior(OnTimeBehavior::FireIfNonEmpty);
        assert_eq!(skipping.decide(&skip, moment(10), false), None);
        // The skipped on-time pane takes the on-time moment with it.
        skipping.record(&sum, &skip, &2, moment(10));
        let due = skipping.decide(&skip, moment(10), false).unwrap();
        assert_eq!(due.timing, Timing::Late);
    }
}
