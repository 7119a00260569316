//! What a [`Trigger`] remembers for one window, and how it reacts: Beam's trigger state
//! machines (`onElement`, `shouldFire`, `onFire`, `onMerge`, `clear`) over one slot per
//! part of the trigger.
//!
//! A slot holds a count (element counts), a deadline (processing time), a phase (a
//! watermark trigger: 0 before its on-time firing, 1 after) or a step (`after_each`: the
//! part that runs). Slots are allocated at the first write, so a trigger that needs nothing
//! before the end of its window (a watermark trigger without early firings) costs nothing
//! per window until then.

use serde::{Deserialize, Serialize};

use super::Trigger;
use super::trigger::Node;

/// "No deadline" in a processing-time slot.
const NONE: i64 = i64::MIN;

/// Where a window stands when its trigger is asked something.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moment {
    /// The watermark.
    pub(crate) watermark: i64,
    /// The processing time.
    pub(crate) now: i64,
    /// The end of the window.
    pub(crate) end: i64,
}

impl Moment {
    fn end_reached(&self) -> bool {
        self.watermark >= self.end
    }
}

/// The state of one window's trigger.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct TriggerState(Vec<i64>);

impl TriggerState {
    fn slot(&self, at: usize) -> Option<i64> {
        self.0.get(at).copied()
    }

    fn get(&self, trigger: &Trigger, at: usize) -> i64 {
        self.slot(at).unwrap_or_else(|| initial(trigger, at))
    }

    fn set(&mut self, trigger: &Trigger, at: usize, value: i64) {
        if self.0.len() < trigger.len() {
            let from = self.0.len();
            self.0
                .extend((from..trigger.len()).map(|part| initial(trigger, part)));
        }
        self.0[at] = value;
    }

    /// Whether a watermark trigger at `at` has fired its on-time part.
    fn past_end(&self, trigger: &Trigger, at: usize) -> bool {
        self.get(trigger, at) == 1
    }

    /// An element arrived in the window.
    pub(crate) fn on_element(&mut self, trigger: &Trigger, moment: &Moment) {
        self.element(trigger, 0, moment);
    }

    fn element(&mut self, trigger: &Trigger, at: usize, moment: &Moment) {
        match trigger.node(at) {
            Node::Watermark { early, late } => {
                if !self.past_end(trigger, at) {
                    if early {
                        self.element(trigger, trigger.child(at, 0), moment);
                    }
                } else if late {
                    self.element(trigger, trigger.child(at, early as usize), moment);
                }
            }
            Node::ProcessingTime {
                delay,
                period,
                offset,
            } => {
                if self.get(trigger, at) == NONE {
                    let due = align(moment.now.saturating_add(delay), period, offset);
                    self.set(trigger, at, due);
                }
            }
            Node::ElementCount(_) => {
                let count = self.get(trigger, at);
                self.set(trigger, at, count.saturating_add(1));
            }
            Node::AfterEach(count) => {
                let step = self.get(trigger, at) as usize;
                if step < count as usize {
                    self.element(trigger, trigger.child(at, step), moment);
                }
            }
            Node::Repeatedly | Node::AfterFirst(_) | Node::AfterAll(_) | Node::OrFinally => {
                for n in 0..trigger.child_count(at) {
                    self.element(trigger, trigger.child(at, n), moment);
                }
            }
            Node::Never | Node::Empty => {}
        }
    }

    /// Whether the trigger would fire now.
    pub(crate) fn should_fire(&self, trigger: &Trigger, moment: &Moment) -> bool {
        self.ready(trigger, 0, moment)
    }

    fn ready(&self, trigger: &Trigger, at: usize, moment: &Moment) -> bool {
        match trigger.node(at) {
            Node::Watermark { early, late } => {
                if !self.past_end(trigger, at) {
                    moment.end_reached()
                        || (early && self.ready(trigger, trigger.child(at, 0), moment))
                } else {
                    late && self.ready(trigger, trigger.child(at, early as usize), moment)
                }
            }
            Node::ProcessingTime { .. } => {
                let due = self.get(trigger, at);
                due != NONE && moment.now >= due
            }
            Node::ElementCount(count) => self.get(trigger, at) >= i64::from(count),
            Node::Never | Node::Empty => false,
            Node::Repeatedly => self.ready(trigger, at + 1, moment),
            Node::AfterEach(count) => {
                let step = self.get(trigger, at) as usize;
                step < count as usize && self.ready(trigger, trigger.child(at, step), moment)
            }
            Node::AfterFirst(count) => {
                (0..count as usize).any(|n| self.ready(trigger, trigger.child(at, n), moment))
            }
            Node::AfterAll(count) => {
                (0..count as usize).all(|n| self.ready(trigger, trigger.child(at, n), moment))
            }
            Node::OrFinally => {
                self.ready(trigger, at + 1, moment)
                    || self.ready(trigger, trigger.child(at, 1), moment)
            }
        }
    }

    /// The trigger fired (after [`should_fire`](Self::should_fire) said so): moves it on.
    /// Returns whether it finished.
    pub(crate) fn on_fire(&mut self, trigger: &Trigger, moment: &Moment) -> bool {
        self.fire(trigger, 0, moment)
    }

    fn fire(&mut self, trigger: &Trigger, at: usize, moment: &Moment) -> bool {
        match trigger.node(at) {
            Node::Watermark { early, late } => {
                let early_part = trigger.child(at, 0);
                if !self.past_end(trigger, at) {
                    if moment.end_reached() {
                        // The on-time firing: the early part ends, the late part starts.
                        if early && self.ready(trigger, early_part, moment) {
                            self.fire(trigger, early_part, moment);
                        }
                        self.set(trigger, at, 1);
                        for n in 0..trigger.child_count(at) {
                            self.clear(trigger, trigger.child(at, n));
                        }
                        !late
                    } else {
                        // An early firing, which repeats by itself.
                        if early {
                            self.fire(trigger, early_part, moment);
                            self.clear(trigger, early_part);
                        }
                        false
                    }
                } else {
                    let late_part = trigger.child(at, early as usize);
                    if late {
                        self.fire(trigger, late_part, moment);
                        self.clear(trigger, late_part);
                    }
                    false
                }
            }
            Node::ProcessingTime { .. } | Node::ElementCount(_) => true,
            Node::Never | Node::Empty => false,
            Node::Repeatedly => {
                if self.fire(trigger, at + 1, moment) {
                    self.clear(trigger, at + 1);
                }
                false
            }
            Node::AfterEach(count) => {
                let step = self.get(trigger, at) as usize;
                if step < count as usize {
                    let part = trigger.child(at, step);
                    if self.fire(trigger, part, moment) {
                        self.clear(trigger, part);
                        self.set(trigger, at, step as i64 + 1);
                    }
                }
                self.get(trigger, at) as usize >= count as usize
            }
            Node::AfterFirst(count) => {
                for n in 0..count as usize {
                    let part = trigger.child(at, n);
                    if self.ready(trigger, part, moment) {
                        self.fire(trigger, part, moment);
                    }
                }
                true
            }
            Node::AfterAll(count) => {
                for n in 0..count as usize {
                    self.fire(trigger, trigger.child(at, n), moment);
                }
                true
            }
            Node::OrFinally => {
                let until = trigger.child(at, 1);
                if self.ready(trigger, until, moment) {
                    self.fire(trigger, until, moment);
                    true
                } else {
                    self.fire(trigger, at + 1, moment)
                }
            }
        }
    }

    /// Starts the part at `at` afresh.
    fn clear(&mut self, trigger: &Trigger, at: usize) {
        if self.0.is_empty() {
            return; // nothing was ever written
        }
        for part in trigger.span(at) {
            self.0[part] = initial(trigger, part);
        }
    }

    /// The earliest processing time after `now` at which the trigger may fire.
    pub(crate) fn deadline(&self, trigger: &Trigger, now: i64) -> Option<i64> {
        self.0
            .iter()
            .enumerate()
            .filter(|(at, due)| {
                matches!(trigger.node(*at), Node::ProcessingTime { .. }) && **due > now
            })
            .map(|(_, due)| *due)
            .min()
    }

    /// The state of a window made of merged windows, whose states are `merged`, as Beam's
    /// `onMerge`: counts add up, the earliest deadline wins, a watermark trigger is before
    /// its on-time firing if any merged window was or if the new window has not ended, and
    /// a sequence continues from the furthest step any merged window reached.
    pub(crate) fn merge(trigger: &Trigger, merged: &[&TriggerState], moment: &Moment) -> Self {
        let mut state = TriggerState::default();
        if merged.iter().any(|state| !state.0.is_empty()) {
            state.merge_part(trigger, 0, merged, moment);
        }
        state
    }

    fn merge_part(
        &mut self,
        trigger: &Trigger,
        at: usize,
        merged: &[&TriggerState],
        moment: &Moment,
    ) {
        match trigger.node(at) {
            Node::Watermark { early, late } => {
                let before_end = !moment.end_reached()
                    || merged.iter().any(|state| !state.past_end(trigger, at));
                if before_end {
                    if early {
                        self.merge_part(trigger, trigger.child(at, 0), merged, moment);
                    }
                } else {
                    self.set(trigger, at, 1);
                    if late {
                        self.merge_part(trigger, trigger.child(at, early as usize), merged, moment);
                    }
                }
            }
            Node::ProcessingTime { .. } => {
                let due = merged
                    .iter()
                    .map(|state| state.get(trigger, at))
                    .filter(|due| *due != NONE)
                    .min();
                if let Some(due) = due {
                    self.set(trigger, at, due);
                }
            }
            Node::ElementCount(_) => {
                let count = merged.iter().map(|state| state.get(trigger, at)).sum();
                self.set(trigger, at, count);
            }
            Node::AfterEach(count) => {
                let step = merged
                    .iter()
                    .map(|state| state.get(trigger, at))
                    .max()
                    .unwrap_or(0);
                self.set(trigger, at, step);
                if (step as usize) < count as usize {
                    let at_step: Vec<&TriggerState> = merged
                        .iter()
                        .copied()
                        .filter(|state| state.get(trigger, at) == step)
                        .collect();
                    let part = trigger.child(at, step as usize);
                    self.merge_part(trigger, part, &at_step, moment);
                }
            }
            Node::Repeatedly | Node::AfterFirst(_) | Node::AfterAll(_) | Node::OrFinally => {
                for n in 0..trigger.child_count(at) {
                    self.merge_part(trigger, trigger.child(at, n), merged, moment);
                }
            }
            Node::Never | Node::Empty => {}
        }
    }

    /// A state for a window restored from a checkpoint taken before triggers had state of
    /// their own: `pending` elements since the last pane, the first at `since`, and whether
    /// the on-time pane is behind it. Counts and delays of the active part pick up from
    /// there, as the earlier trigger did.
    pub(crate) fn legacy(
        trigger: &Trigger,
        pending: u32,
        since: Option<i64>,
        past_end: bool,
    ) -> Self {
        let mut state = TriggerState::default();
        if let Node::Watermark { early, late } = trigger.node(0) {
            if past_end {
                state.set(trigger, 0, 1);
            }
            let part = match (past_end, early, late) {
                (false, true, _) => Some(trigger.child(0, 0)),
                (true, _, true) => Some(trigger.child(0, early as usize)),
                _ => None,
            };
            if let Some(part) = part {
                for at in trigger.span(part) {
                    match trigger.node(at) {
                        Node::ElementCount(_) => state.set(trigger, at, i64::from(pending)),
                        Node::ProcessingTime {
                            delay,
                            period,
                            offset,
                        } => {
                            if let Some(since) = since {
                                let due = align(since.saturating_add(delay), period, offset);
                                state.set(trigger, at, due);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        state
    }
}

/// A slot's value before anything happened.
fn initial(trigger: &Trigger, at: usize) -> i64 {
    match trigger.node(at) {
        Node::ProcessingTime { .. } => NONE,
        _ => 0,
    }
}

/// The first multiple of `period` plus `offset` at or after `time` (`time` itself without
/// a period), as Beam's `AlignFn`.
pub(crate) fn align(time: i64, period: i64, offset: i64) -> i64 {
    if period <= 0 {
        return time;
    }
    let since = time.saturating_sub(offset).rem_euclid(period);
    if since == 0 {
        time
    } else {
        time.saturating_add(period - since)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const END: i64 = 120_000;

    fn at(watermark: i64, now: i64) -> Moment {
        Moment {
            watermark,
            now,
            end: END,
        }
    }

    /// Feeds elements at the processing times of `elements` (watermark 0), and returns the
    /// times at which the trigger fired, asking at every element and every 10 ms.
    fn fires(trigger: Trigger, elements: &[i64], until: i64) -> Vec<i64> {
        let mut state = TriggerState::default();
        let mut fired = Vec::new();
        let mut elements = elements.iter().peekable();
        for now in (0..=until).step_by(10) {
            while let Some(&&time) = elements.peek()
                && time <= now
            {
                state.on_element(&trigger, &at(0, time));
                if state.should_fire(&trigger, &at(0, time)) {
                    state.on_fire(&trigger, &at(0, time));
                    fired.push(time);
                }
                elements.next();
            }
            if state.should_fire(&trigger, &at(0, now)) {
                state.on_fire(&trigger, &at(0, now));
                fired.push(now);
            }
        }
        fired
    }

    #[test]
    fn aligned_times_round_up_to_the_period() {
        assert_eq!(align(125, 100, 0), 200);
        assert_eq!(align(200, 100, 0), 200);
        assert_eq!(align(-50, 100, 0), 0);
        assert_eq!(align(125, 100, 30), 130);
        assert_eq!(align(125, 0, 0), 125);
    }

    #[test]
    fn processing_time_triggers_count_from_the_first_element_or_align_to_the_period() {
        let delay = Trigger::repeatedly(Trigger::after_processing_time(Duration::from_millis(100)));
        assert_eq!(fires(delay, &[30, 50, 200, 210], 400), [130, 300]);
        let aligned = Trigger::repeatedly(
            Trigger::after_processing_time(Duration::ZERO).aligned_to(Duration::from_millis(100)),
        );
        assert_eq!(fires(aligned, &[30, 50, 200, 210], 400), [100, 200, 300]);
    }

    #[test]
    fn combinators_compose_as_beams_do() {
        let count = |n| Trigger::element_count(n);
        let delay = |ms| Trigger::after_processing_time(Duration::from_millis(ms));
        // Two elements, then every element.
        let sequence = Trigger::after_each(&[count(2), Trigger::repeatedly(count(1))]);
        assert_eq!(fires(sequence, &[10, 20, 30, 40], 100), [20, 30, 40]);
        // Whichever comes first: three elements or 100 ms after the first.
        let first = Trigger::repeatedly(Trigger::after_first(&[count(3), delay(100)]));
        assert_eq!(
            fires(first, &[10, 20, 30, 40, 200, 400], 600),
            [30, 140, 300, 500]
        );
        // Both: at least two elements and 100 ms after the first.
        let all = Trigger::repeatedly(Trigger::after_all(&[count(2), delay(100)]));
        assert_eq!(fires(all, &[10, 20, 300, 450, 500], 700), [110, 450]);
        // Every element, until the fourth.
        let until = Trigger::repeatedly(count(1)).or_finally(count(4));
        let mut state = TriggerState::default();
        let mut finished = Vec::new();
        for time in 0..4 {
            state.on_element(&until, &at(0, time));
            assert!(state.should_fire(&until, &at(0, time)));
            finished.push(state.on_fire(&until, &at(0, time)));
        }
        assert_eq!(finished, [false, false, false, true]);
    }

    #[test]
    fn a_watermark_trigger_fires_early_on_time_and_late() {
        let trigger = Trigger::watermark()
            .early(Trigger::element_count(2))
            .late(Trigger::element_count(1));
        let mut state = TriggerState::default();
        state.on_element(&trigger, &at(0, 0));
        assert!(!state.should_fire(&trigger, &at(0, 0)));
        state.on_element(&trigger, &at(0, 1));
        assert!(state.should_fire(&trigger, &at(0, 1)));
        assert!(!state.on_fire(&trigger, &at(0, 1)), "an early firing");
        state.on_element(&trigger, &at(0, 2)); // one pending: not enough for early
        assert!(
            state.should_fire(&trigger, &at(END, 3)),
            "the watermark passed"
        );
        assert!(!state.on_fire(&trigger, &at(END, 3)), "late firings follow");
        assert!(!state.should_fire(&trigger, &at(END, 4)));
        state.on_element(&trigger, &at(END, 5));
        assert!(state.should_fire(&trigger, &at(END, 5)), "a late firing");
        let bare = Trigger::watermark();
        let mut state = TriggerState::default();
        assert!(state.should_fire(&bare, &at(END, 0)));
        assert!(
            state.on_fire(&bare, &at(END, 0)),
            "finished without late firings"
        );
    }

    #[test]
    fn a_trigger_that_waits_for_the_end_holds_no_state_before_it() {
        let trigger = Trigger::on_time();
        let mut state = TriggerState::default();
        for now in 0..100 {
            state.on_element(&trigger, &at(0, now));
        }
        assert_eq!(state, TriggerState::default());
    }

    #[test]
    fn merged_states_add_counts_and_keep_the_earliest_deadline() {
        let trigger = Trigger::watermark().early(Trigger::after_first(&[
            Trigger::element_count(5),
            Trigger::after_processing_time(Duration::from_millis(100)),
        ]));
        let (mut a, mut b) = (TriggerState::default(), TriggerState::default());
        for now in [10, 20] {
            a.on_element(&trigger, &at(0, now));
        }
        for now in [5, 30, 40] {
            b.on_element(&trigger, &at(0, now));
        }
        let merged = TriggerState::merge(&trigger, &[&a, &b], &at(0, 50));
        assert_eq!(merged.deadline(&trigger, 50), Some(105));
        assert!(merged.should_fire(&trigger, &at(0, 50)), "five elements");
        // Past the end, with every merged window past its on-time firing: late phase.
        let late = Trigger::on_time();
        let mut past = TriggerState::default();
        past.on_fire(&late, &at(END, 0));
        let merged = TriggerState::merge(&late, &[&past, &past], &at(END + 1, 0));
        assert!(!merged.should_fire(&late, &at(END + 1, 0)));
        // A merged window that ends later is before its end again.
        let merged = TriggerState::merge(
            &late,
            &[&past],
            &Moment {
                watermark: END + 1,
                now: 0,
                end: END + 10,
            },
        );
        assert_eq!(merged, TriggerState::default());
    }
}
