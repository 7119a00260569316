//! The window operator alone, driven step by step through Streaming Systems' running
//! example: watermarks (batch, heuristic, perfect), the accumulation modes, allowed
//! lateness, sliding windows and sessions. `reference_panes.rs` has the book's trigger
//! examples with every pane's metadata; `triggers.rs` the composed triggers.

use std::time::Duration;

use runnel_streamlet::window::{Accumulation, OnTimeBehavior, Timing, Trigger, WindowSpec};

use crate::scores::{HEURISTIC, PERFECT, Step, Timed, hms, run, timeline};

/// A fired pane, short: (processing time, window start, timing, index, retraction, value).
type Fired = (i64, i64, Timing, u32, bool, i64);

fn short(panes: &[Timed]) -> Vec<Fired> {
    panes
        .iter()
        .map(|(at, pane)| {
            (
                *at,
                pane.window_start,
                pane.timing,
                pane.index,
                pane.retraction,
                pane.value,
            )
        })
        .collect()
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
        short(&fired),
        [
            on_time(end, hms(12, 0, 0), 14),
            on_time(end, hms(12, 2, 0), 18),
            on_time(end, hms(12, 4, 0), 4),
            on_time(end, hms(12, 6, 0), 12),
        ]
    );
    assert!(fired.iter().all(|(_, pane)| pane.is_first && pane.is_last));
    assert!(late.is_empty());
}

/// With allowed lateness, a window whose on-time pane fires only when a bounded input
/// ends expires at once (the watermark is at the end of time), so that pane is its last,
/// for tumbling, sliding and session windows alike (Beam marks it so).
#[test]
fn on_time_panes_at_the_end_of_input_are_last_despite_allowed_lateness() {
    let lateness = Duration::from_secs(600);
    for spec in [
        FIXED,
        WindowSpec::sliding(TWO_MINUTES, Duration::from_secs(60)),
        WindowSpec::session(Duration::from_secs(60)),
    ] {
        let spec = spec.allowed_lateness(lateness);
        let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
        assert!(!fired.is_empty());
        for (_, pane) in &fired {
            assert_eq!(pane.timing, Timing::OnTime, "{spec:?}: {pane:?}");
            assert!(pane.is_last, "{spec:?}: the on-time pane is last: {pane:?}");
        }
        // Under a heuristic watermark the windows it passes before the end fire on time
        // and wait for late data: not last.
        let (fired, _) = run(spec, &timeline(&HEURISTIC, &[]), Some(hms(12, 10, 0)));
        let before_end = fired.iter().filter(|(at, _)| *at < hms(12, 10, 0));
        for (_, pane) in before_end {
            assert!(!pane.is_last, "{spec:?}: {pane:?}");
        }
    }
}

#[test]
fn a_heuristic_watermark_fires_on_time_and_sends_the_nine_to_the_late_output() {
    let (fired, late) = run(FIXED, &timeline(&HEURISTIC, &[]), Some(hms(12, 10, 0)));
    assert_eq!(
        short(&fired),
        [
            on_time(hms(12, 6, 0), hms(12, 0, 0), 5),
            on_time(hms(12, 7, 30), hms(12, 2, 0), 18),
            on_time(hms(12, 7, 40), hms(12, 4, 0), 4),
            on_time(hms(12, 9, 30), hms(12, 6, 0), 12),
        ]
    );
    // Without allowed lateness a window expires with its on-time pane, its last.
    assert!(fired.iter().all(|(_, pane)| pane.is_last));
    assert_eq!(late, [9]);
}

#[test]
fn a_perfect_watermark_fires_each_window_once_with_everything() {
    let steps = timeline(&PERFECT, &[hms(12, 8, 39)]);
    let (fired, late) = run(FIXED, &steps, Some(hms(12, 10, 0)));
    assert_eq!(
        short(&fired),
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
/// panes, a pane per late element, in all three modes. (The book aligns the early panes to
/// the minute: see `reference_panes.rs`.)
fn early_on_time_late(spec: WindowSpec) -> Vec<Fired> {
    let spec = spec
        .trigger(Trigger::on_time().early(Trigger::after_processing_time(Duration::from_secs(60))))
        .allowed_lateness(Duration::from_secs(600));
    let (fired, late) = run(spec, &timeline(&HEURISTIC, &[]), None);
    assert!(
        late.is_empty(),
        "within the allowed lateness nothing is late"
    );
    short(&fired)
}

#[test]
fn accumulating_panes_hold_everything_so_far() {
    use Timing::{Early, Late, OnTime};
    assert_eq!(
        early_on_time_late(FIXED.accumulation(Accumulation::Accumulating)),
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
fn discarding_panes_hold_only_what_is_new_and_empty_on_time_panes_fire_as_in_beam() {
    use Timing::{Early, Late, OnTime};
    // Beam's default (`OnTimeBehavior::FireAlways`): the on-time pane of a window whose
    // early pane took everything fires anyway, with the sum of nothing.
    assert_eq!(
        early_on_time_late(FIXED.accumulation(Accumulation::Discarding)),
        [
            (hms(12, 5, 59), hms(12, 0, 0), Early, 0, false, 5),
            (hms(12, 6, 0), hms(12, 0, 0), OnTime, 1, false, 0),
            (hms(12, 6, 39), hms(12, 2, 0), Early, 0, false, 10),
            (hms(12, 7, 30), hms(12, 2, 0), OnTime, 1, false, 8),
            (hms(12, 7, 39), hms(12, 4, 0), Early, 0, false, 4),
            (hms(12, 7, 40), hms(12, 4, 0), OnTime, 1, false, 0),
            (hms(12, 8, 19), hms(12, 6, 0), Early, 0, false, 3),
            (hms(12, 8, 19), hms(12, 0, 0), Late, 2, false, 9),
            (hms(12, 9, 30), hms(12, 6, 0), OnTime, 1, false, 9),
        ]
    );
    // Only if non-empty: the empty panes are skipped and take no index.
    let skipping = FIXED
        .accumulation(Accumulation::Discarding)
        .on_time_behavior(OnTimeBehavior::FireIfNonEmpty);
    assert_eq!(
        early_on_time_late(skipping),
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
    let fired = early_on_time_late(FIXED.accumulation(Accumulation::AccumulatingAndRetracting));
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
    let spec = FIXED.trigger(Trigger::on_time().early(Trigger::element_count(2)));
    let (fired, _) = run(spec, &timeline(&PERFECT, &[hms(12, 8, 39)]), None);
    assert_eq!(
        short(&fired),
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
    // window expires at watermark 12:07; the expiry fires the pending pane, its last.
    let spec = FIXED
        .allowed_lateness(Duration::from_secs(300))
        .trigger(Trigger::on_time().late(Trigger::after_processing_time(Duration::from_secs(600))));
    let mut steps = timeline(&HEURISTIC, &[]);
    steps.push((hms(12, 9, 45), Step::Score(2, hms(12, 1, 0))));
    let (fired, late) = run(spec, &steps, None);
    let (at, last) = fired
        .iter()
        .find(|(_, pane)| pane.timing == Timing::Late)
        .expect("a late pane");
    assert_eq!(
        (*at, last.window_start, last.index, last.is_last, last.value),
        (hms(12, 9, 30), hms(12, 0, 0), 1, true, 14)
    );
    assert_eq!(late, [2], "after the expiry the window takes nothing");
}

#[test]
fn sliding_windows_put_each_element_in_every_window_it_falls_in() {
    let spec = WindowSpec::sliding(TWO_MINUTES, Duration::from_secs(60));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    let sums: Vec<(i64, i64)> = fired
        .iter()
        .map(|(_, p)| (p.window_start, p.value))
        .collect();
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

    fn bridged(accumulation: Accumulation) -> Vec<Timed> {
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
    fn a_late_element_that_bridges_two_sessions_merges_them_into_a_new_window() {
        use Timing::{Late, OnTime};
        let fired = bridged(Accumulation::Accumulating);
        assert_eq!(
            short(&fired),
            [
                (hms(12, 5, 20), hms(12, 0, 26), OnTime, 0, false, 5),
                (hms(12, 5, 20), hms(12, 2, 24), OnTime, 0, false, 7),
                // A new window, as in Beam: its panes start at 0, and it is late.
                (hms(12, 6, 0), hms(12, 0, 26), Late, 0, false, 21),
            ]
        );
        let merged = &fired[2].1;
        assert_eq!(merged.window_end, hms(12, 3, 24));
        assert_eq!((merged.is_first, merged.on_time_index), (true, Some(0)));
    }

    #[test]
    fn retracting_mode_withdraws_both_merged_sessions() {
        use Timing::{Late, OnTime};
        let fired = bridged(Accumulation::AccumulatingAndRetracting);
        assert_eq!(
            short(&fired),
            [
                (hms(12, 5, 20), hms(12, 0, 26), OnTime, 0, false, 5),
                (hms(12, 5, 20), hms(12, 2, 24), OnTime, 0, false, 7),
                (hms(12, 6, 0), hms(12, 0, 26), OnTime, 0, true, 5),
                (hms(12, 6, 0), hms(12, 2, 24), OnTime, 0, true, 7),
                (hms(12, 6, 0), hms(12, 0, 26), Late, 0, false, 21),
            ]
        );
        // Each retraction names the window it retracts: the old sessions' bounds.
        let windows: Vec<(i64, i64)> = fired
            .iter()
            .map(|(_, pane)| (pane.window_start, pane.window_end))
            .collect();
        assert_eq!(windows[2], (hms(12, 0, 26), hms(12, 1, 26)));
        assert_eq!(windows[4], (hms(12, 0, 26), hms(12, 3, 24)));
    }

    #[test]
    fn sessions_grow_with_elements_within_the_gap_and_split_beyond_it() {
        let spec = WindowSpec::session(GAP);
        let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
        let sessions: Vec<(i64, i64)> = fired
            .iter()
            .map(|(_, p)| (p.window_start, p.value))
            .collect();
        // 12:00:26 .. 12:04:19, each within a minute of the previous | 12:06:39 .. 12:07:46
        assert_eq!(sessions, [(hms(12, 0, 26), 36), (hms(12, 6, 39), 12)]);
        assert_eq!(fired[0].0, hms(12, 10, 0), "fired at the end of the input");
    }
}
