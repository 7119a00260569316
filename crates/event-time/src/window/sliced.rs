//! The windows of one key for tumbling and sliding windows, kept as slices.
//!
//! Time is cut into slices of `gcd(size, slide)` (for tumbling windows, the window
//! itself), and each element is added to exactly one slice accumulator. A window's value is
//! the merge of its `size / step` slices, computed when it fires. So an element costs one
//! accumulator update however many windows it belongs to, and a sliding window with a small
//! slide costs more only when panes fire.
//!
//! For aggregates that subtract ([`Aggregate::subtract`]), the accumulator of the last
//! window fired on time is kept, and the next window's is that one minus the slices that
//! left it plus those that entered: a pane then costs a few slices, not `size / step` of
//! them, which is what small slides would otherwise pay for every pane.
//!
//! Per-window firing state ([`PaneState`]) exists only where a window needs one: from the
//! window's first element for triggers that can fire before the end of the window, and
//! after the end while the window accepts late elements.

use std::collections::{BTreeMap, VecDeque};

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use super::cx::Cx;
use super::pane_state::{OnTime, PaneState};
use super::windows::floor;
use super::{Aggregate, Timing, Trigger, Window};

/// The slices and window states of one key.
#[derive(Clone, Debug, Deserialize)]
#[serde(
    from = "Checkpointed<Acc, Out>",
    bound(deserialize = "Acc: Deserialize<'de>, Out: Deserialize<'de>")
)]
pub(crate) struct Sliced<Acc, Out> {
    /// The newest slice, kept with the key rather than in `slices`: most elements go to
    /// it, and the key's state is in cache when an element arrives, where the back of
    /// `slices` (with small slides, one of many lines per key) often is not. Every other
    /// method moves it to `slices` first, so they see all slices there.
    newest: Option<(i64, Acc)>,
    /// Accumulators of the other non-empty slices, by start, ascending, all before
    /// `newest`.
    slices: VecDeque<(i64, Acc)>,
    /// Windows with firing state, by start.
    panes: BTreeMap<i64, PaneState<Acc, Out>>,
    /// Every window ending at or before this has had its on-time firing.
    fired_through: i64,
    /// For aggregates that subtract: the accumulator of the slices present in a range, the
    /// last window fired on time. Derived from the slices, so not checkpointed: a restored
    /// store rebuilds it at its first on-time pane, exactly (subtracting is exact).
    running: Option<Running<Acc>>,
}

/// A store as checkpointed: the newest slice is among the others, and the running
/// accumulator, derived state, is left out; the format of a store without them.
#[derive(Deserialize)]
struct Checkpointed<Acc, Out> {
    slices: VecDeque<(i64, Acc)>,
    panes: BTreeMap<i64, PaneState<Acc, Out>>,
    fired_through: i64,
}

// By hand, to write `Checkpointed` from a borrowed store without copying it.
impl<Acc: Serialize, Out: Serialize> Serialize for Sliced<Acc, Out> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut store = serializer.serialize_struct("Checkpointed", 3)?;
        store.serialize_field("slices", &Slices(&self.slices, &self.newest))?;
        store.serialize_field("panes", &self.panes)?;
        store.serialize_field("fired_through", &self.fired_through)?;
        store.end()
    }
}

/// The slices of a store in order: the older ones, then the newest.
struct Slices<'a, Acc>(&'a VecDeque<(i64, Acc)>, &'a Option<(i64, Acc)>);

impl<Acc: Serialize> Serialize for Slices<'_, Acc> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().chain(self.1))
    }
}

impl<Acc, Out> From<Checkpointed<Acc, Out>> for Sliced<Acc, Out> {
    fn from(checkpointed: Checkpointed<Acc, Out>) -> Self {
        Sliced {
            newest: None,
            slices: checkpointed.slices,
            panes: checkpointed.panes,
            fired_through: checkpointed.fired_through,
            running: None,
        }
    }
}

/// The accumulator of every slice present with a start in `[start, end)`.
#[derive(Clone, Debug)]
struct Running<Acc> {
    start: i64,
    end: i64,
    accumulator: Acc,
}

impl<Acc> Running<Acc> {
    fn covers(&self, slice: i64) -> bool {
        self.start <= slice && slice < self.end
    }
}

impl<Acc: Clone, Out: Clone> Sliced<Acc, Out> {
    pub(crate) fn new() -> Self {
        Sliced {
            newest: None,
            slices: VecDeque::new(),
            panes: BTreeMap::new(),
            fired_through: i64::MIN,
            running: None,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.newest.is_none() && self.slices.is_empty() && self.panes.is_empty()
    }

    /// Fills in what a checkpoint from before panes had metadata lacks.
    pub(crate) fn upgrade(&mut self, trigger: &Trigger, size: i64) {
        for (start, pane) in &mut self.panes {
            pane.upgrade(trigger, start.saturating_add(size) <= self.fired_through);
        }
    }

    /// Moves the newest slice to the others, for the methods that read slices there.
    fn settle(&mut self) {
        if let Some(newest) = self.newest.take() {
            self.reserve();
            self.slices.push_back(newest);
        }
    }

    fn reserve(&mut self) {
        // Grow by a quarter, not double: with small slides the slice rings of all keys are
        // the working set, and it must stay in cache.
        if self.slices.len() == self.slices.capacity() {
            self.slices.reserve_exact(self.slices.len() / 4 + 4);
        }
    }

    /// Adds an element the operator found not late for every window.
    pub(crate) fn add<A>(&mut self, cx: &mut Cx<'_, A>, timestamp: i64, input: &A::Input)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let g = cx.geometry;
        let (first, last) = (g.first_start(timestamp), g.last_start(timestamp));
        if first > last {
            return; // between windows: a slide longer than the size leaves gaps
        }
        self.fired_through = self.fired_through.max(cx.watermark);
        let slice = floor(timestamp, g.step);
        let accumulator = match &mut self.newest {
            Some((newest, accumulator)) if *newest == slice => accumulator,
            Some((newest, _)) if *newest > slice => self.slice_mut(slice, g.step, cx.aggregate),
            // Settled by a watermark: take the newest back, or the rest of its elements
            // would go to the slices.
            None if self.slices.back().is_some_and(|(last, _)| *last == slice) => {
                let newest = self.slices.pop_back().expect("a back slice");
                &mut self.newest.insert(newest).1
            }
            None if self.slices.back().is_some_and(|(last, _)| *last > slice) => {
                self.slice_mut(slice, g.step, cx.aggregate)
            }
            _ => {
                self.settle(); // a new newest slice
                &mut self.newest.insert((slice, cx.aggregate.create())).1
            }
        };
        cx.aggregate.add(accumulator, input);
        if let Some(running) = &mut self.running
            && running.covers(slice)
        {
            cx.aggregate.add(&mut running.accumulator, input); // a late element
        }

        // The earliest end the watermark has not reached: the element's first window's in
        // the common case, a later one's when the watermark passed the first's end.
        let first_end = first.saturating_add(g.size);
        let unfired_end = if first_end > self.fired_through {
            Some(first_end)
        } else {
            let behind = self.fired_through - first_end;
            let start = first + (behind / g.slide + 1) * g.slide;
            (start <= last).then(|| start.saturating_add(g.size))
        };
        if let Some(end) = unfired_end {
            cx.event_at(end);
            if cx.lazy && end == first_end {
                return; // the common case: the trigger needs nothing before the end
            }
        }
        let lateness = cx.spec.allowed_lateness;
        let mut start = first;
        while start <= last {
            let window = Window::new(start, start + g.size);
            start += g.slide;
            if window.end.saturating_add(lateness) <= cx.watermark {
                continue; // expired: this window no longer takes elements
            }
            let late = window.end <= self.fired_through;
            if late {
                cx.event_at(window.end.saturating_add(lateness));
            } else if cx.lazy {
                continue;
            }
            // A late window without state started after its end: no on-time pane for it.
            let on_time = if late { OnTime::Past } else { OnTime::Before };
            let pane = self
                .panes
                .entry(window.start)
                .or_insert_with(|| PaneState::new(on_time));
            pane.record(cx.aggregate, cx.spec, input, cx.moment(window.end));
            self.evaluate(cx, window);
        }
    }

    /// Fires the windows that end by `cx.watermark` and drops what expired; returns when
    /// this key next needs the watermark.
    pub(crate) fn on_watermark<A>(&mut self, cx: &mut Cx<'_, A>) -> Option<i64>
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        self.settle();
        let (g, watermark) = (cx.geometry, cx.watermark);
        let lateness = cx.spec.allowed_lateness;
        // Their end: windows with elements, ending in (fired_through, watermark], in order.
        if watermark > self.fired_through
            && let (Some((first, _)), Some((last, _))) = (self.slices.front(), self.slices.back())
        {
            let mut start = g.first_start(*first);
            if self.fired_through != i64::MIN {
                start = start.max(g.first_start(self.fired_through));
            }
            let last_start = g.last_start(*last);
            while start <= last_start && start.saturating_add(g.size) <= watermark {
                let window = Window::new(start, start + g.size);
                // The first slice at or after the window's start: inside it, or past a gap.
                let next = self.first_slice_from(window.start);
                match self.slices.get(next) {
                    Some((slice, _)) if *slice < window.end => {
                        self.at_end(cx, window);
                        start += g.slide;
                    }
                    Some((slice, _)) => start = (start + g.slide).max(g.first_start(*slice)),
                    None => break,
                }
            }
            self.fired_through = watermark;
        }
        // Windows whose end passed before: expired ones fire their final pane and go.
        while let Some((&start, _)) = self.panes.first_key_value() {
            let window = Window::new(start, start + g.size);
            if window.end.saturating_add(lateness) > watermark {
                break;
            }
            if let Some(mut pane) = self.panes.remove(&start) {
                self.conclude(cx, window, &mut pane, true);
            }
        }
        while let Some((slice, _)) = self.slices.front() {
            let last_end = g.last_start(*slice) + g.size;
            if last_end.saturating_add(lateness) > watermark {
                break;
            }
            let (slice, accumulator) = self.slices.pop_front().expect("a front slice");
            // Keep the running accumulator that of the slices present in its range, so
            // that moving it to the next window subtracts only the slices still here.
            if let Some(running) = &mut self.running
                && running.covers(slice)
            {
                cx.aggregate
                    .subtract(&mut running.accumulator, &accumulator);
            }
        }
        self.next_event(cx)
    }

    /// Fires panes whose processing-time deadline has passed, and tells `cx` the next
    /// deadlines.
    pub(crate) fn on_processing_time<A>(&mut self, cx: &mut Cx<'_, A>)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let size = cx.geometry.size;
        let starts: Vec<i64> = self.panes.keys().copied().collect();
        for start in starts {
            self.evaluate(cx, Window::new(start, start + size));
        }
    }

    /// The watermark reached the end of `window`, which holds elements: fires its on-time
    /// pane if due, and its final pane if it expires at once.
    fn at_end<A>(&mut self, cx: &mut Cx<'_, A>, window: Window)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let expiring = window.end.saturating_add(cx.spec.allowed_lateness) <= cx.target_watermark;
        // Without a state, the trigger needed none before the end: every element is pending.
        let mut pane = self
            .panes
            .remove(&window.start)
            .unwrap_or_else(PaneState::untouched);
        if !self.conclude(cx, window, &mut pane, expiring) {
            self.panes.insert(window.start, pane);
        }
    }

    /// Fires `window`'s pane if one is due, `expiring` or not; returns whether the window is
    /// done. Its state is out of the map, so that the slices can make its accumulator.
    fn conclude<A>(
        &mut self,
        cx: &mut Cx<'_, A>,
        window: Window,
        pane: &mut PaneState<Acc, Out>,
        expiring: bool,
    ) -> bool
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let due = pane.decide(cx.spec, cx.moment(window.end), expiring);
        if let Some(due) = due {
            // Windows reach their end in order of start, which the running accumulator of
            // an aggregate that subtracts follows; other panes merge their slices.
            let full = if cx.subtracts && due.timing == Timing::OnTime {
                self.running_accumulator(cx.aggregate, window, cx.geometry.step)
            } else {
                self.window_accumulator(cx.aggregate, window)
            };
            let timestamp = window.end.saturating_sub(1);
            let accumulation = cx.spec.accumulation;
            pane.emit(
                window,
                due,
                cx.aggregate,
                accumulation,
                &full,
                timestamp,
                cx.fired,
            );
        }
        let done = expiring || due.is_some_and(|due| due.last);
        if !done && let Some(deadline) = pane.deadline(&cx.spec.trigger, cx.now) {
            cx.processing_at(deadline);
        }
        done
    }

    /// Fires `window`'s pane if its trigger says so (after an element or at a deadline).
    fn evaluate<A>(&mut self, cx: &mut Cx<'_, A>, window: Window)
    where
        A: Aggregate<Accumulator = Acc, Output = Out>,
    {
        let Some(pane) = self.panes.get_mut(&window.start) else {
            return;
        };
        let due = pane.decide(cx.spec, cx.moment(window.end), false);
        if let Some(due) = due {
            self.settle();
            let full = self.window_accumulator(cx.aggregate, window);
            let pane = self.panes.get_mut(&window.start).expect("a window state");
            let timestamp = window.end.saturating_sub(1);
            let accumulation = cx.spec.accumulation;
            pane.emit(
                window,
                due,
                cx.aggregate,
                accumulation,
                &full,
                timestamp,
                cx.fired,
            );
        }
        let pane = &self.panes[&window.start];
        if let Some(deadline) = pane.deadline(&cx.spec.trigger, cx.now) {
            cx.processing_at(deadline);
        }
        // A trigger finishes only when its window expires (`WindowSpec::check`), which is
        // decided by the watermark, not here.
        debug_assert!(
            !due.is_some_and(|due| due.last),
            "a trigger finished before its window expired"
        );
    }

    /// When this key next needs the watermark: its next on-time window, or the next expiry.
    fn next_event<A: Aggregate>(&self, cx: &Cx<'_, A>) -> Option<i64> {
        let g = cx.geometry;
        let watermark = cx.watermark;
        let after = g.first_start(watermark);
        // Slices are in order, and so are the ends of their last windows.
        let pending = self.first_slice_from(floor(watermark - g.size, g.slide) + g.slide);
        let on_time = self
            .slices
            .get(pending)
            .map(|(slice, _)| g.first_start(*slice).max(after) + g.size);
        // Window states are in order of start, so of end: the first expires first.
        let expiry = self
            .panes
            .keys()
            .next()
            .map(|start| start + g.size)
            .filter(|end| *end <= watermark)
            .map(|end| end.saturating_add(cx.spec.allowed_lateness));
        match (on_time, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn slice_mut<A>(&mut self, slice: i64, step: i64, aggregate: &A) -> &mut Acc
    where
        A: Aggregate<Accumulator = Acc>,
    {
        self.reserve();
        let position = match self.slices.back() {
            Some((back, _)) if *back == slice => self.slices.len() - 1, // the common case
            Some((back, _)) if *back < slice => {
                self.slices.push_back((slice, aggregate.create()));
                self.slices.len() - 1
            }
            None => {
                self.slices.push_back((slice, aggregate.create()));
                0
            }
            Some((back, _)) => {
                // Out of order. Slices are distinct multiples of the step, so the slice
                // `behind` places before the back one starts at or before `slice`; with a
                // slice in every step (a busy key), exactly at it. Jump there rather than scan back to it: with small
                // slides that is many slices, and the scan missed the cache at each line.
                let behind = back
                    .checked_sub(slice)
                    .and_then(|distance| usize::try_from(distance / step).ok())
                    .unwrap_or(usize::MAX);
                let mut at = (self.slices.len() - 1).saturating_sub(behind);
                while at + 1 < self.slices.len() && self.slices[at + 1].0 <= slice {
                    at += 1;
                }
                match self.slices[at].0 {
                    start if start == slice => at,
                    start if start < slice => {
                        self.slices.insert(at + 1, (slice, aggregate.create()));
                        at + 1
                    }
                    _ => {
                        // Only when `behind` reached the front: `slice` is before them all.
                        self.slices.push_front((slice, aggregate.create()));
                        0
                    }
                }
            }
        };
        &mut self.slices[position].1
    }

    /// The index of the first slice starting at or after `time`. Windows fire in order and
    /// expired slices leave from the front, so the answer is almost always near the front:
    /// look there first, and search only when it is not (a long allowed lateness).
    fn first_slice_from(&self, time: i64) -> usize {
        const NEAR: usize = 16;
        match self
            .slices
            .iter()
            .take(NEAR)
            .position(|(start, _)| *start >= time)
        {
            Some(index) => index,
            None if self.slices.len() <= NEAR => self.slices.len(),
            None => self.slices.partition_point(|(start, _)| *start < time),
        }
    }

    /// The accumulator of `window`, for an aggregate that subtracts: the running one moved
    /// to `window` (windows fire on time in order of start, so it moves forward by a slide),
    /// or made anew when `window` does not overlap it.
    fn running_accumulator<A>(&mut self, aggregate: &A, window: Window, step: i64) -> Acc
    where
        A: Aggregate<Accumulator = Acc>,
    {
        let running = match self.running.take() {
            Some(mut running) if running.start <= window.start && window.start < running.end => {
                let mut first = self.first_slice_from(running.start);
                while let Some((start, slice)) = self.slices.get(first)
                    && *start < window.start
                {
                    aggregate.subtract(&mut running.accumulator, slice);
                    first += 1;
                }
                // Slices are at least a step apart, so the first to enter is at most this
                // far from the window's first; with a slice in every step, exactly. Look
                // back from there: a binary search would miss the cache at every probe.
                let span = (running.end - window.start) / step;
                let mut entered = first
                    .saturating_add(usize::try_from(span).unwrap_or(usize::MAX))
                    .min(self.slices.len());
                while entered > first && self.slices[entered - 1].0 >= running.end {
                    entered -= 1;
                }
                for (start, slice) in self.slices.range(entered..) {
                    if *start >= window.end {
                        break;
                    }
                    aggregate.merge(&mut running.accumulator, slice);
                }
                running.start = window.start;
                running.end = window.end;
                running
            }
            _ => Running {
                start: window.start,
                end: window.end,
                accumulator: self.window_accumulator(aggregate, window),
            },
        };
        let accumulator = running.accumulator.clone();
        self.running = Some(running);
        accumulator
    }

    fn window_accumulator<A>(&self, aggregate: &A, window: Window) -> Acc
    where
        A: Aggregate<Accumulator = Acc>,
    {
        let first = self.first_slice_from(window.start);
        let mut inside = self
            .slices
            .range(first..)
            .take_while(|(start, _)| *start < window.end);
        let mut accumulator = match inside.next() {
            Some((_, only)) => only.clone(),
            None => aggregate.create(),
        };
        for (_, slice) in inside {
            aggregate.merge(&mut accumulator, slice);
        }
        accumulator
    }
}
