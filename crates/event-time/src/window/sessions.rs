//! The session windows of one key: each element opens `[timestamp, timestamp + gap)`, and
//! windows that overlap merge, with their accumulators and firing states.
//!
//! As in Beam, a session whose bounds change (two sessions merge, or an element extends
//! one) is a new window: its panes start again at index 0, its trigger state is the merge
//! of the old ones', and in accumulating-and-retracting mode its first pane is preceded by
//! retractions of the last panes of the windows it replaced, each under its own bounds.

use serde::{Deserialize, Serialize};

use super::cx::Cx;
use super::pane_state::{OnTime, PaneState};
use super::{Aggregate, Trigger, Window};

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

    /// Fills in what a checkpoint from before panes had metadata lacks.
    pub(crate) fn upgrade(&mut self, trigger: &Trigger) {
        for session in &mut self.sessions {
            let past_end = session.window.end <= self.fired_through;
            session.pane.upgrade(trigger, past_end);
        }
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
        let mut overlapped: Vec<Session<Acc, Out>> = self.sessions.drain(first..last).collect();
        let mut session = match overlapped.len() {
            0 => Session {
                window: own,
                accumulator: cx.aggregate.create(),
                // A session that ends before the watermark started late: no on-time pane.
                pane: PaneState::new(if own.end <= self.fired_through {
                    OnTime::Past
                } else {
                    OnTime::Before
                }),
            },
            1 if overlapped[0].window.span(&own) == overlapped[0].window => {
                overlapped.pop().expect("one session")
            }
            _ => merge(overlapped, own, cx),
        };
        cx.aggregate.add(&mut session.accumulator, input);
        session
            .pane
            .record(cx.aggregate, cx.spec, input, cx.moment(session.window.end));
        let end = session.window.end;
        if end <= self.fired_through {
            cx.event_at(end.saturating_add(cx.spec.allowed_lateness));
        } else {
            cx.event_at(end);
        }
        let done = conclude(cx, &mut session, false);
        // A trigger finishes only when its window expires (`WindowSpec::check`).
        debug_assert!(!done, "a trigger finished before its window expired");
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
        let mut kept = Vec::with_capacity(self.sessions.len());
        for mut session in self.sessions.drain(..) {
            let end = session.window.end;
            let reaches_end = end > self.fired_through && end <= watermark;
            // A session reaching its end now expires with it when the watermark the operator
            // moves to is past its allowed lateness too (the end of a bounded input).
            let expiring = end.saturating_add(lateness) <= watermark
                || (reaches_end && end.saturating_add(lateness) <= cx.target_watermark);
            let done = (reaches_end || expiring) && conclude(cx, &mut session, expiring);
            if !done {
                kept.push(session);
            }
        }
        self.sessions = kept;
        self.fired_through = self.fired_through.max(watermark);
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

    /// Fires panes whose processing-time deadline has passed, and tells `cx` the next
    /// deadlines.
    pub(crate) fn on_processing_time<A>(&mut self, cx: &mut Cx<'_, A>)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        for session in &mut self.sessions {
            let done = conclude(cx, session, false);
            debug_assert!(!done, "a trigger finished before its window expired");
        }
    }
}

/// Fires the session's pane if one is due; returns whether the session is done.
fn conclude<A: Aggregate>(
    cx: &mut Cx<'_, A>,
    session: &mut Session<A::Accumulator, A::Output>,
    expiring: bool,
) -> bool {
    let window = session.window;
    let due = session
        .pane
        .decide(cx.spec, cx.moment(window.end), expiring);
    if let Some(due) = due {
        session.pane.emit(
            window,
            due,
            cx.aggregate,
            cx.spec.accumulation,
            &session.accumulator,
            window.end.saturating_sub(1),
            cx.fired,
        );
    }
    let done = expiring || due.is_some_and(|due| due.last);
    if !done && let Some(deadline) = session.pane.deadline(&cx.spec.trigger, cx.now) {
        cx.processing_at(deadline);
    }
    done
}

/// The new session made of `sessions` and an element's own window `own`.
fn merge<A: Aggregate>(
    sessions: Vec<Session<A::Accumulator, A::Output>>,
    own: Window,
    cx: &Cx<'_, A>,
) -> Session<A::Accumulator, A::Output> {
    let window = sessions
        .iter()
        .fold(own, |window, session| window.span(&session.window));
    let mut accumulator = cx.aggregate.create();
    let mut accumulators = Vec::with_capacity(sessions.len());
    let mut states = Vec::with_capacity(sessions.len());
    for session in sessions {
        cx.aggregate.merge(&mut accumulator, &session.accumulator);
        accumulators.push(session.accumulator);
        states.push((session.window, session.pane));
    }
    let parts = states
        .into_iter()
        .zip(&accumulators)
        .map(|((window, pane), full)| (window, pane, full))
        .collect();
    let pane = PaneState::merged(parts, window, cx.aggregate, cx.spec, cx.moment(window.end));
    Session {
        window,
        accumulator,
        pane,
    }
}
