//! Streaming Systems' running example (chapters 2 and 4: nine team scores with their event
//! and processing times, a heuristic and a perfect watermark), a harness that drives the
//! window operator through it step by step, and the rules every window's panes follow.

use std::collections::BTreeMap;

use runnel_streamlet::window::{Added, Aggregate, Pane, Sum, Timing, WindowOperator, WindowSpec};

/// Milliseconds of a time of day, `12:04:59` → `hms(12, 4, 59)`.
pub(crate) const fn hms(hours: i64, minutes: i64, seconds: i64) -> i64 {
    ((hours * 60 + minutes) * 60 + seconds) * 1_000
}

/// What happens at one processing time.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// A score with its event time.
    Score(i64, i64),
    /// The watermark moves.
    Watermark(i64),
}

/// The team-score inputs: (score, event time, processing time).
pub(crate) const SCORES: [(i64, i64, i64); 9] = [
    (5, hms(12, 0, 26), hms(12, 4, 59)),
    (7, hms(12, 2, 24), hms(12, 5, 39)),
    (3, hms(12, 3, 39), hms(12, 6, 13)),
    (4, hms(12, 4, 19), hms(12, 6, 39)),
    (8, hms(12, 3, 6), hms(12, 7, 6)),
    (3, hms(12, 6, 39), hms(12, 7, 19)),
    (9, hms(12, 1, 25), hms(12, 8, 19)),
    (8, hms(12, 7, 26), hms(12, 8, 39)),
    (1, hms(12, 7, 46), hms(12, 9, 0)),
];

/// The heuristic watermark of Streaming Systems figure 2-10: (processing time, watermark).
pub(crate) const HEURISTIC: [(i64, i64); 4] = [
    (hms(12, 6, 0), hms(12, 2, 0)),
    (hms(12, 7, 30), hms(12, 4, 0)),
    (hms(12, 7, 40), hms(12, 6, 0)),
    (hms(12, 9, 30), hms(12, 8, 30)),
];

/// The perfect watermark of figure 2-10; its first two steps happen before the score that
/// arrives at the same processing time.
pub(crate) const PERFECT: [(i64, i64); 4] = [
    (hms(12, 8, 39), hms(12, 2, 0)),
    (hms(12, 9, 0), hms(12, 4, 0)),
    (hms(12, 9, 10), hms(12, 6, 0)),
    (hms(12, 9, 20), hms(12, 8, 0)),
];

/// The scores merged with watermark steps, ordered by processing time (a watermark at the
/// same time as a score goes first when `before` says so).
pub(crate) fn timeline(watermarks: &[(i64, i64)], before: &[i64]) -> Vec<(i64, Step)> {
    let mut steps: Vec<(i64, u8, Step)> = SCORES
        .iter()
        .map(|&(score, event, at)| (at, 1, Step::Score(score, event)))
        .collect();
    for &(at, watermark) in watermarks {
        let order = if before.contains(&at) { 0 } else { 2 };
        steps.push((at, order, Step::Watermark(watermark)));
    }
    steps.sort_by_key(|(at, order, _)| (*at, *order));
    steps.into_iter().map(|(at, _, step)| (at, step)).collect()
}

/// A pane with the processing time it fired at.
pub(crate) type Timed = (i64, Pane<&'static str, i64>);

/// Runs the steps through an operator summing scores of "TeamX": processing-time triggers
/// due before a step fire at their own time, first. With `end`, the input ends then: the
/// triggers due by then fire, and the watermark goes to the end of time. Returns the panes
/// with the processing time they fired at, and the late scores.
pub(crate) fn run(
    spec: WindowSpec,
    steps: &[(i64, Step)],
    end: Option<i64>,
) -> (Vec<Timed>, Vec<i64>) {
    fn due<A: Aggregate<Output = i64>>(
        operator: &mut WindowOperator<&'static str, A>,
        until: i64,
        fired: &mut Vec<Timed>,
    ) {
        while let Some(deadline) = operator.next_processing_deadline().filter(|d| *d <= until) {
            let mut panes = Vec::new();
            operator.advance_processing_time(deadline, &mut panes);
            fired.extend(panes.into_iter().map(|pane| (deadline, pane)));
        }
    }
    let mut operator = WindowOperator::new(spec, Sum::of(|score: &i64| *score));
    let mut fired = Vec::new();
    let mut late = Vec::new();
    let mut panes = Vec::new();
    for &(at, step) in steps {
        due(&mut operator, at, &mut fired);
        match step {
            Step::Score(score, event) => {
                if operator.add("TeamX", event, &score, at, &mut panes) == Added::Late {
                    late.push(score);
                }
            }
            Step::Watermark(watermark) => operator.advance_watermark(watermark, at, &mut panes),
        }
        fired.extend(panes.drain(..).map(|pane| (at, pane)));
    }
    if let Some(end) = end {
        due(&mut operator, end, &mut fired);
        operator.advance_watermark(i64::MAX, end, &mut panes);
        fired.extend(panes.drain(..).map(|pane| (end, pane)));
    }
    check_pane_rules(&fired);
    (fired, late)
}

/// A pane as a test expects it: fire time, window, timing, index, whether it is the last,
/// whether it is a retraction, value.
pub(crate) type Expected = (i64, (i64, i64), Timing, u32, bool, bool, i64);

/// The panes as [`Expected`] rows.
pub(crate) fn rows(panes: &[Timed]) -> Vec<Expected> {
    panes
        .iter()
        .map(|(at, pane)| {
            (
                *at,
                (pane.window_start, pane.window_end),
                pane.timing,
                pane.index,
                pane.is_last,
                pane.retraction,
                pane.value,
            )
        })
        .collect()
}

/// Asserts the rules every window's panes follow, whatever the trigger: indices 0, 1, 2, ...
/// with `is_first` on 0; timings in the order early, on time, late, at most one on time;
/// on-time indices `None` for early panes and 0, 1, 2, ... for the others; nothing after
/// a pane marked last; a retraction repeats the pane it retracts.
pub(crate) fn check_pane_rules<K: Clone + Ord + std::fmt::Debug>(panes: &[(i64, Pane<K, i64>)]) {
    #[derive(Default)]
    struct Seen {
        next_index: u32,
        next_on_time: u32,
        last_timing: Option<Timing>,
        ended: bool,
        emitted: BTreeMap<u32, (Timing, Option<u32>, i64)>,
    }
    let mut windows: BTreeMap<(K, i64, i64), Seen> = BTreeMap::new();
    for (_, pane) in panes {
        let window = (pane.key.clone(), pane.window_start, pane.window_end);
        let seen = windows.entry(window.clone()).or_default();
        if pane.retraction {
            let emitted = seen.emitted.get(&pane.index);
            assert_eq!(
                emitted,
                Some(&(pane.timing, pane.on_time_index, pane.value)),
                "a retraction repeats its pane: {pane:?}"
            );
            assert!(!pane.is_last, "retractions are never last: {pane:?}");
            continue;
        }
        assert!(
            !seen.ended,
            "{window:?} fired after its last pane: {pane:?}"
        );
        assert_eq!(pane.index, seen.next_index, "{pane:?}");
        assert_eq!(pane.is_first, pane.index == 0, "{pane:?}");
        let rank = |timing: Timing| match timing {
            Timing::Early => 0,
            Timing::OnTime => 1,
            Timing::Late => 2,
        };
        if let Some(previous) = seen.last_timing {
            assert!(
                rank(previous) <= rank(pane.timing),
                "timings go early, on time, late: {pane:?}"
            );
            assert!(
                !(previous == Timing::OnTime && pane.timing == Timing::OnTime),
                "one on-time pane per window: {pane:?}"
            );
        }
        if pane.timing == Timing::Early {
            assert_eq!(pane.on_time_index, None, "{pane:?}");
        } else {
            assert_eq!(pane.on_time_index, Some(seen.next_on_time), "{pane:?}");
            seen.next_on_time += 1;
        }
        seen.emitted
            .insert(pane.index, (pane.timing, pane.on_time_index, pane.value));
        seen.last_timing = Some(pane.timing);
        seen.next_index += 1;
        seen.ended = pane.is_last;
    }
}
