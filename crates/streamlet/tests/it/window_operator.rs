//! The window operator alone, driven step by step: the Streaming Systems examples (chapter
//! 2's team scores, chapter 4's sessions) and every trigger and accumulation mode.

use std::time::Duration;

use runnel_streamlet::window::{
    Accumulation, Added, Firing, Pane, Sum, Timing, Trigger, WindowOperator, WindowSpec,
};

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

/// A fired pane, short: (processing time, window start, timing, index, retraction, value).
type Fired = (i64, i64, Timing, u32, bool, i64);

/// Runs the steps through an operator summing scores of "TeamX"; returns the panes with
/// the processing time they fired at, and the late scores.
fn run(spec: WindowSpec, steps: &[(i64, Step)], end: Option<i64>) -> (Vec<Fired>, Vec<i64>) {
    let mut operator = WindowOperator::new(spec, Sum::of(|score: &i64| *score));
    let mut fired = Vec::new();
    let mut late = Vec::new();
    let mut panes: Vec<Pane<&str, i64>> = Vec::new();
    let mut record = |at: i64, panes: &mut Vec<Pane<&str, i64>>| {
        for pane in panes.drain(..) {
            fired.push((
                at,
                pane.window_start,
                pane.timing,
                pane.index,
                pane.retraction,
                pane.value,
            ));
        }
    };
    for &(at, step) in steps {
        // Processing-time triggers due before this step fire at their own time.
        while let Some(deadline) = operator.next_processing_deadline().filter(|d| *d <= at) {
            operator.advance_processing_time(deadline, &mut panes);
            record(deadline, &mut panes);
        }
        operator.advance_processing_time(at, &mut panes);
        match step {
            Step::Score(score, event) => {
                if operator.add("TeamX", event, &score, at, &mut panes) == Added::Late {
                    late.push(score);
                }
            }
            Step::Watermark(watermark) => operator.advance_watermark(watermark, at, &mut panes),
        }
        record(at, &mut panes);
    }
    if let Some(end) = end {
        operator.advance_watermark(i64::MAX, end, &mut panes);
        record(end, &mut panes);
    }
    (fired, late)
}

const TWO_MINUTES: Duration = Duration::from_secs(120);
const FIXED: WindowSpec = WindowSpec::tumbling(TWO_MINUTES);

fn on_time(at: i64, start: i64, value: i64) -> Fired {
    (at, start, Timing::OnTime, 0, false, value)
}

#[test]
fn batch_sums_every_window_at_the_end_of_input() {
    let (fired, late) = run(FIXED, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    let end = hms(12, 10, 0);
    assert_eq!(
        fired,
        [
            on_time(end, hms(12, 0, 0), 14),
            on_time(end, hms(12, 2, 0), 18),
            on_time(end, hms(12, 4, 0), 4),
            on_time(end, hms(12, 6, 0), 12),
        ]
    );
    assert!(late.is_empty());
}

/// The heuristic watermark of Streaming Systems figure 2-10.
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

#[test]
fn a_heuristic_watermark_fires_on_time_and_sends_the_nine_to_the_late_output() {
    let (fired, late) = run(FIXED, &timeline(&HEURISTIC, &[]), Some(hms(12, 10, 0)));
    assert_eq!(
        fired,
        [
            on_time(hms(12, 6, 0), hms(12, 0, 0), 5),
            on_time(hms(12, 7, 30), hms(12, 2, 0), 18),
            on_time(hms(12, 7, 40), hms(12, 4, 0), 4),
            on_time(hms(12, 9, 30), hms(12, 6, 0), 12),
        ]
    );
    assert_eq!(late, [9]);
}

#[test]
fn a_perfect_watermark_fires_each_window_once_with_everything() {
    let steps = timeline(&PERFECT, &[hms(12, 8, 39)]);
    let (fired, late) = run(FIXED, &steps, Some(hms(12, 10, 0)));
    assert_eq!(
        fired,
        [
            on_time(hms(12, 8, 39), hms(12, 0, 0), 14),
            on_time(hms(12, 9, 0), hms(12, 2, 0), 18),
            on_time(hms(12, 9, 10), hms(12, 4, 0), 4),
            on_time(hms(12, 9, 20), hms(12, 6, 0), 12),
        ]
    );
    assert!(late.is_empty());
}

/// Early panes a minute (processing time) after the first element of each pane, on-time
/// panes, a late pane per late element: Streaming Systems figure 2-11, in all three modes.
fn early_on_time_late(accumulation: Accumulation) -> Vec<Fired> {
    let spec = FIXED
        .trigger(Trigger::on_time().early(Firing::after_delay(Duration::from_secs(60))))
        .allowed_lateness(Duration::from_secs(600))
        .accumulation(accumulation);
    let (fired, late) = run(spec, &timeline(&HEURISTIC, &[]), None);
    assert!(
        late.is_empty(),
        "within the allowed lateness nothing is late"
    );
    fired
}

#[test]
fn accumulating_panes_hold_everything_so_far() {
    use Timing::{Early, Late, OnTime};
    assert_eq!(
        early_on_time_late(Accumulation::Accumulating),
        [
            (hms(12, 5, 59), hms(12, 0, 0), Early, 0, false, 5),
            (hms(12, 6, 0), hms(12, 0, 0), OnTime, 1, false, 5),
            (hms(12, 6, 39), hms(12, 2, 0), Early, 0, false, 10),
            (hms(12, 7, 30), hms(12, 2, 0), OnTime, 1, false, 18),
            (hms(12, 7, 39), hms(12, 4, 0), Early, 0, false, 4),
            (hms(12, 7, 40), hms(12, 4, 0), OnTime, 1, false, 4),
            (hms(12, 8, 19), hms(12, 6, 0), Early, 0, false, 3),
            (hms(12, 8, 19), hms(12, 0, 0), Late, 2, false, 14),
            (hms(12, 9, 30), hms(12, 6, 0), OnTime, 1, false, 12),
        ]
    );
}

#[test]
fn discarding_panes_hold_only_what_is_new_and_skip_empty_ones() {
    use Timing::{Early, Late, OnTime};
    assert_eq!(
        early_on_time_late(Accumulation::Discarding),
        [
            (hms(12, 5, 59), hms(12, 0, 0), Early, 0, false, 5),
            (hms(12, 6, 39), hms(12, 2, 0), Early, 0, false, 10),
            (hms(12, 7, 30), hms(12, 2, 0), OnTime, 1, false, 8),
            (hms(12, 7, 39), hms(12, 4, 0), Early, 0, false, 4),
            (hms(12, 8, 19), hms(12, 6, 0), Early, 0, false, 3),
            (hms(12, 8, 19), hms(12, 0, 0), Late, 1, false, 9),
            (hms(12, 9, 30), hms(12, 6, 0), OnTime, 1, false, 9),
        ]
    );
}

#[test]
fn retracting_panes_withdraw_the_previous_value_first() {
    use Timing::{Early, Late, OnTime};
    let fired = early_on_time_late(Accumulation::AccumulatingAndRetracting);
    assert_eq!(
        fired,
        [
            (hms(12, 5, 59), hms(12, 0, 0), Early, 0, false, 5),
            (hms(12, 6, 0), hms(12, 0, 0), Early, 0, true, 5),
            (hms(12, 6, 0), hms(12, 0, 0), OnTime, 1, false, 5),
            (hms(12, 6, 39), hms(12, 2, 0), Early, 0, false, 10),
            (hms(12, 7, 30), hms(12, 2, 0), Early, 0, true, 10),
            (hms(12, 7, 30), hms(12, 2, 0), OnTime, 1, false, 18),
            (hms(12, 7, 39), hms(12, 4, 0), Early, 0, false, 4),
            (hms(12, 7, 40), hms(12, 4, 0), Early, 0, true, 4),
            (hms(12, 7, 40), hms(12, 4, 0), OnTime, 1, false, 4),
            (hms(12, 8, 19), hms(12, 6, 0), Early, 0, false, 3),
            (hms(12, 8, 19), hms(12, 0, 0), OnTime, 1, true, 5),
            (hms(12, 8, 19), hms(12, 0, 0), Late, 2, false, 14),
            (hms(12, 9, 30), hms(12, 6, 0), Early, 0, true, 3),
            (hms(12, 9, 30), hms(12, 6, 0), OnTime, 1, false, 12),
        ]
    );
    // Adding panes and subtracting retractions leaves each window's final sum.
    let mut totals = std::collections::BTreeMap::new();
    for (_, start, _, _, retraction, value) in fired {
        *totals.entry(start).or_insert(0) += if retraction { -value } else { value };
    }
    assert_eq!(totals.into_values().collect::<Vec<_>>(), [14, 18, 4, 12]);
}

#[test]
fn early_panes_every_n_elements() {
    use Timing::{Early, OnTime};
    let spec = FIXED.trigger(Trigger::on_time().early(Firing::every(2)));
    let (fired, _) = run(spec, &timeline(&PERFECT, &[hms(12, 8, 39)]), None);
    assert_eq!(
        fired,
        [
            (hms(12, 6, 13), hms(12, 2, 0), Early, 0, false, 10),
            (hms(12, 8, 19), hms(12, 0, 0), Early, 0, false, 14),
            (hms(12, 8, 39), hms(12, 0, 0), OnTime, 1, false, 14),
            (hms(12, 8, 39), hms(12, 6, 0), Early, 0, false, 11),
            (hms(12, 9, 0), hms(12, 2, 0), OnTime, 1, false, 18),
            (hms(12, 9, 10), hms(12, 4, 0), OnTime, 0, false, 4),
            (hms(12, 9, 20), hms(12, 6, 0), OnTime, 1, false, 12),
        ]
    );
}

#[test]
fn allowed_lateness_keeps_a_window_for_late_panes_then_drops_it() {
    // One minute of lateness is not enough for the 9: its window expired at 12:03.
    let (_, late) = run(
        FIXED.allowed_lateness(Duration::from_secs(60)),
        &timeline(&HEURISTIC, &[]),
        None,
    );
    assert_eq!(late, [9]);

    // Five minutes is: the 9 waits for a delayed late firing, which has not come when the
    // window expires at watermark 12:07; the expiry fires the pending late pane.
    let spec = FIXED
        .allowed_lateness(Duration::from_secs(300))
        .trigger(Trigger::on_time().late(Firing::after_delay(Duration::from_secs(600))));
    let mut steps = timeline(&HEURISTIC, &[]);
    steps.push((hms(12, 9, 45), Step::Score(2, hms(12, 1, 0))));
    let (fired, late) = run(spec, &steps, None);
    assert!(fired.contains(&(hms(12, 9, 30), hms(12, 0, 0), Timing::Late, 1, false, 14)));
    assert_eq!(late, [2], "after the expiry the window takes nothing");
}

#[test]
fn sliding_windows_put_each_element_in_every_window_it_falls_in() {
    let spec = WindowSpec::sliding(TWO_MINUTES, Duration::from_secs(60));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    let sums: Vec<(i64, i64)> = fired.iter().map(|f| (f.1, f.5)).collect();
    assert_eq!(
        sums,
        [
            (hms(11, 59, 0), 5),
            (hms(12, 0, 0), 14),
            (hms(12, 1, 0), 16),
            (hms(12, 2, 0), 18),
            (hms(12, 3, 0), 15),
            (hms(12, 4, 0), 4),
            (hms(12, 5, 0), 3),
            (hms(12, 6, 0), 12),
            (hms(12, 7, 0), 9),
        ]
    );
}

mod sessions {
    use super::*;

    const GAP: Duration = Duration::from_secs(60);

    fn bridged(accumulation: Accumulation) -> Vec<Fired> {
        let spec = WindowSpec::session(GAP)
            .allowed_lateness(Duration::from_secs(600))
            .accumulation(accumulation);
        let steps = [
            (hms(12, 5, 0), Step::Score(5, hms(12, 0, 26))),
            (hms(12, 5, 10), Step::Score(7, hms(12, 2, 24))),
            (hms(12, 5, 20), Step::Watermark(hms(12, 4, 0))),
            // Within a gap of both: the two sessions become one.
            (hms(12, 6, 0), Step::Score(9, hms(12, 1, 25))),
        ];
        run(spec, &steps, None).0
    }

    #[test]
    fn a_late_element_that_bridges_two_sessions_merges_them() {
        use Timing::{Late, OnTime};
        assert_eq!(
            bridged(Accumulation::Accumulating),
            [
                (hms(12, 5, 20), hms(12, 0, 26), OnTime, 0, false, 5),
                (hms(12, 5, 20), hms(12, 2, 24), OnTime, 0, false, 7),
                (hms(12, 6, 0), hms(12, 0, 26), Late, 1, false, 21),
            ]
        );
    }

    #[test]
    fn retracting_mode_withdraws_both_merged_sessions() {
        use Timing::{Late, OnTime};
        assert_eq!(
            bridged(Accumulation::AccumulatingAndRetracting),
            [
                (hms(12, 5, 20), hms(12, 0, 26), OnTime, 0, false, 5),
                (hms(12, 5, 20), hms(12, 2, 24), OnTime, 0, false, 7),
                (hms(12, 6, 0), hms(12, 0, 26), OnTime, 0, true, 5),
                (hms(12, 6, 0), hms(12, 2, 24), OnTime, 0, true, 7),
                (hms(12, 6, 0), hms(12, 0, 26), Late, 1, false, 21),
            ]
        );
    }

    #[test]
    fn sessions_grow_with_elements_within_the_gap_and_split_beyond_it() {
        let spec = WindowSpec::session(GAP);
        let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
        let sessions: Vec<(i64, i64)> = fired.iter().map(|f| (f.1, f.5)).collect();
        // 12:00:26 .. 12:04:19, each within a minute of the previous | 12:06:39 .. 12:07:46
        assert_eq!(sessions, [(hms(12, 0, 26), 36), (hms(12, 6, 39), 12)]);
        assert_eq!(fired[0].0, hms(12, 10, 0), "fired at the end of the input");
    }
}
