//! The session windows of one key: each element opens `[timestamp, timestamp + gap)`, and
//! windows that overlap merge, with their accumulators and firing states.

use serde::{Deserialize, Serialize};

use super::operator::Cx;
use super::pane_state::PaneState;
use super::{Accumulation, Aggregate, Timing, Window};

/// One session: its window, the accumulator of all its elements, its firing state.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Session<Acc, Out> {
    window: Window,
    accumulator: Acc,
    pane: PaneState<Acc, Out>,
}

/// The sessions of one key, by start; they never overlap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Sessions<Acc, Out> {
    sessions: Vec<Session<Acc, Out>>,
    /// Every session ending at or before this has had its on-time firing.
    fired_through: i64,
}

impl<Acc: Clone, Out: Clone> Sessions<Acc, Out> {
    pub(crate) fn new() -> Self {
        Sessions {
            sessions: Vec::new(),
            fired_through: i64::MIN,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Adds an element whose own session `[timestamp, timestamp + gap)` has not expired,
    /// merging every session it overlaps.
    pub(crate) fn add<A>(&mut self, cx: &mut Cx<'_, A>, timestamp: i64, input: &A::Input)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        self.fired_through = self.fired_through.max(cx.watermark);
        let own = Window::new(timestamp, timestamp.saturating_add(cx.geometry.size));
        let first = self.sessions.partition_point(|s| s.window.end <= own.start);
        let last = first
            + self.sessions[first..]
                .iter()
                .take_while(|s| s.window.start < own.end)
                .count();
        let merged = self
            .sessions
            .drain(first..last)
            .reduce(|a, b| merge(a, b, cx.aggregate));
        let mut session = match merged {
            Some(mut session) => {
                let grown = session.window.span(&own);
                if grown != session.window {
                    session.pane.moved_from(session.window);
                    session.window = grown;
                }
                session
            }
            None => Session {
                window: own,
                accumulator: cx.aggregate.create(),
                pane: PaneState::default(),
            },
        };
        cx.aggregate.add(&mut session.accumulator, input);
        session.pane.record(cx.aggregate, input, cx.now);

        let late = session.window.end <= self.fired_through;
        if late {
            cx.event_at(session.window.end.saturating_add(cx.spec.allowed_lateness));
        } else {
            cx.event_at(session.window.end);
        }
        let firing = if late {
            Some(cx.spec.trigger.late)
        } else {
            cx.spec.trigger.early
        };
        if let Some(firing) = firing {
            let pane = &session.pane;
            if firing.is_due(pane.pending, pane.pending_since, cx.now) {
                let timing = if late { Timing::Late } else { Timing::Early };
                fire(cx, &mut session, timing);
            } else if let Some(deadline) = firing.deadline(pane.pending_since) {
                cx.processing_at(deadline);
            }
        }
        self.sessions.insert(first, session);
    }

    /// Fires the sessions that end by `cx.watermark` and drops the expired ones; returns
    /// when this key next needs the watermark.
    pub(crate) fn on_watermark<A>(&mut self, cx: &mut Cx<'_, A>) -> Option<i64>
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let watermark = cx.watermark;
        let lateness = cx.spec.allowed_lateness;
        for session in &mut self.sessions {
            let end = session.window.end;
            if end > self.fired_through
                && end <= watermark
                && (cx.spec.accumulation != Accumulation::Discarding || session.pane.pending > 0)
            {
                fire(cx, session, Timing::OnTime);
            }
        }
        self.fired_through = self.fired_through.max(watermark);
        let mut kept = Vec::with_capacity(self.sessions.len());
        for mut session in self.sessions.drain(..) {
            if session.window.end.saturating_add(lateness) > watermark {
                kept.push(session);
            } else if session.pane.pending > 0 {
                fire(cx, &mut session, Timing::Late);
            }
        }
        self.sessions = kept;
        self.sessions
            .iter()
            .map(|session| {
                if session.window.end > watermark {
                    session.window.end
                } else {
                    session.window.end.saturating_add(lateness)
                }
            })
            .min()
    }

    /// Fires early or late panes whose processing-time delay has passed, and tells `cx` the
    /// next such deadline.
    pub(crate) fn on_processing_time<A>(&mut self, cx: &mut Cx<'_, A>)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        for session in &mut self.sessions {
            let late = session.window.end <= self.fired_through;
            let firing = if late {
                Some(cx.spec.trigger.late)
            } else {
                cx.spec.trigger.early
            };
            let Some(firing) = firing else { continue };
            let pane = &session.pane;
            if firing.is_due(pane.pending, pane.pending_since, cx.now) {
                fire(cx, session, if late { Timing::Late } else { Timing::Early });
            } else if let Some(deadline) = firing.deadline(pane.pending_since) {
                cx.processing_at(deadline);
            }
        }
    }
}

fn fire<A: Aggregate>(
    cx: &mut Cx<'_, A>,
    session: &mut Session<A::Accumulator, A::Output>,
    timing: Timing,
) {
    session.pane.fire(
        session.window,
        timing,
        cx.aggregate,
        cx.spec.accumulation,
        &session.accumulator,
        cx.fired,
    );
}

fn merge<A: Aggregate>(
    a: Session<A::Accumulator, A::Output>,
    b: Session<A::Accumulator, A::Output>,
    aggregate: &A,
) -> Session<A::Accumulator, A::Output> {
    let pane = a.pane.merge(
        (a.window, &a.accumulator),
        b.pane,
        (b.window, &b.accumulator),
        aggregate,
    );
    let mut accumulator = a.accumulator;
    aggregate.merge(&mut accumulator, &b.accumulator);
    Session {
        window: a.window.span(&b.window),
        accumulator,
        pane,
    }
}
