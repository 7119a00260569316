//! The trigger examples of Streaming Systems (chapter 2's team scores in fixed two-minute
//! windows, chapter 4's sessions), every pane asserted: processing time it fired at,
//! window, timing, index, whether it is the window's last, whether it is a retraction,
//! value. `scores::check_pane_rules` also checks every run's first flags, on-time indices
//! and retractions.
//!
//! Where the book's figures show values, these are the book's; the metadata is what Beam's
//! rules give. Processing-time boundaries that coincide with an arrival (the `1` arrives at
//! 12:09:00, on a minute boundary) follow Beam's alignment: a time on a boundary is due at
//! once.

use std::time::Duration;

use runnel_streamlet::window::{Accumulation, ClosingBehavior, Timing, Trigger, WindowSpec};

use crate::scores::{Expected, HEURISTIC, Step, hms, rows, run, timeline};

use Timing::{Early as E, Late as L, OnTime as O};

const TWO_MINUTES: Duration = Duration::from_secs(120);
const MINUTE: Duration = Duration::from_secs(60);
const FIXED: WindowSpec = WindowSpec::tumbling(TWO_MINUTES);

const W0: (i64, i64) = (hms(12, 0, 0), hms(12, 2, 0));
const W2: (i64, i64) = (hms(12, 2, 0), hms(12, 4, 0));
const W4: (i64, i64) = (hms(12, 4, 0), hms(12, 6, 0));
const W6: (i64, i64) = (hms(12, 6, 0), hms(12, 8, 0));

/// A pane that is neither last nor a retraction.
const fn p(at: i64, window: (i64, i64), timing: Timing, index: u32, value: i64) -> Expected {
    (at, window, timing, index, false, false, value)
}

/// A retraction.
const fn r(at: i64, window: (i64, i64), timing: Timing, index: u32, value: i64) -> Expected {
    (at, window, timing, index, false, true, value)
}

/// A window's last pane.
const fn last(at: i64, window: (i64, i64), timing: Timing, index: u32, value: i64) -> Expected {
    (at, window, timing, index, true, false, value)
}

/// Figure 2-6: `Repeatedly(AfterCount(1))`, accumulating, no watermark before the end of
/// the input: a pane per score with its window's running sum, all early, and no on-time
/// pane (the trigger has no watermark part).
#[test]
fn per_record_triggering_fires_a_pane_per_score_and_no_on_time_pane() {
    let spec = FIXED.trigger(Trigger::repeatedly(Trigger::element_count(1)));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 4, 59), W0, E, 0, 5),
            p(hms(12, 5, 39), W2, E, 0, 7),
            p(hms(12, 6, 13), W2, E, 1, 10),
            p(hms(12, 6, 39), W4, E, 0, 4),
            p(hms(12, 7, 6), W2, E, 2, 18),
            p(hms(12, 7, 19), W6, E, 0, 3),
            p(hms(12, 8, 19), W0, E, 1, 14),
            p(hms(12, 8, 39), W6, E, 1, 11),
            p(hms(12, 9, 0), W6, E, 2, 12),
        ]
    );
}

/// The same trigger under the heuristic watermark, with ten minutes of allowed lateness:
/// the panes after the watermark passed their window are late, and no window gets an
/// on-time pane it did not ask for. With `ClosingBehavior::FireAlways` each window ends
/// with a last pane when the input ends.
#[test]
fn a_per_record_trigger_under_a_watermark_is_early_then_late_and_can_close_every_window() {
    let spec = FIXED
        .trigger(Trigger::repeatedly(Trigger::element_count(1)))
        .allowed_lateness(Duration::from_secs(600));
    let steps = timeline(&HEURISTIC, &[]);
    let per_record = [
        p(hms(12, 4, 59), W0, E, 0, 5),
        p(hms(12, 5, 39), W2, E, 0, 7),
        p(hms(12, 6, 13), W2, E, 1, 10),
        p(hms(12, 6, 39), W4, E, 0, 4),
        p(hms(12, 7, 6), W2, E, 2, 18),
        p(hms(12, 7, 19), W6, E, 0, 3),
        p(hms(12, 8, 19), W0, L, 1, 14),
        p(hms(12, 8, 39), W6, E, 1, 11),
        p(hms(12, 9, 0), W6, E, 2, 12),
    ];
    let (fired, late) = run(spec, &steps, Some(hms(12, 10, 0)));
    assert_eq!(rows(&fired), per_record);
    assert!(late.is_empty());
    assert_eq!(
        fired[6].1.on_time_index,
        Some(0),
        "the first pane that is not early"
    );

    let closing = spec.closing_behavior(ClosingBehavior::FireAlways);
    let (fired, _) = run(closing, &steps, Some(hms(12, 10, 0)));
    let end = hms(12, 10, 0);
    let mut expected = per_record.to_vec();
    expected.extend([
        last(end, W0, L, 2, 14),
        last(end, W2, L, 3, 18),
        last(end, W4, L, 1, 4),
        last(end, W6, L, 3, 12),
    ]);
    assert_eq!(rows(&fired), expected);
}

/// Figure 2-7: `Repeatedly(AlignedDelay(TWO_MINUTES))`: every window with new scores fires
/// on the same two-minute boundaries of processing time.
#[test]
fn aligned_delays_fire_every_window_together_on_the_boundaries() {
    let aligned = Trigger::after_processing_time(Duration::ZERO).aligned_to(TWO_MINUTES);
    let spec = FIXED.trigger(Trigger::repeatedly(aligned));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 6, 0), W0, E, 0, 5),
            p(hms(12, 6, 0), W2, E, 0, 7),
            p(hms(12, 8, 0), W2, E, 1, 18),
            p(hms(12, 8, 0), W4, E, 0, 4),
            p(hms(12, 8, 0), W6, E, 0, 3),
            p(hms(12, 10, 0), W0, E, 1, 14),
            p(hms(12, 10, 0), W6, E, 1, 12),
        ]
    );
}

/// Figure 2-8: `Repeatedly(UnalignedDelay(TWO_MINUTES))`: each window fires two minutes
/// after the first score of its pane, on its own clock.
#[test]
fn unaligned_delays_fire_each_window_on_its_own_clock() {
    let spec = FIXED.trigger(Trigger::repeatedly(Trigger::after_processing_time(
        TWO_MINUTES,
    )));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 11, 0)));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 6, 59), W0, E, 0, 5),
            p(hms(12, 7, 39), W2, E, 0, 18),
            p(hms(12, 8, 39), W4, E, 0, 4),
            p(hms(12, 9, 19), W6, E, 0, 12),
            p(hms(12, 10, 19), W0, E, 1, 14),
        ]
    );
}

/// Example 2-7 (figure 2-11, table 2-2): early panes aligned to the minute, the on-time
/// pane, a pane per late score; ten minutes of allowed lateness.
fn early_on_time_late(accumulation: Accumulation) -> WindowSpec {
    FIXED
        .trigger(
            Trigger::watermark()
                .early(Trigger::after_processing_time(Duration::ZERO).aligned_to(MINUTE))
                .late(Trigger::element_count(1)),
        )
        .allowed_lateness(Duration::from_secs(600))
        .accumulation(accumulation)
}

fn fired(spec: WindowSpec) -> Vec<Expected> {
    let (fired, late) = run(spec, &timeline(&HEURISTIC, &[]), Some(hms(12, 10, 0)));
    assert!(late.is_empty());
    rows(&fired)
}

#[test]
fn early_on_time_and_late_panes_accumulating() {
    assert_eq!(
        fired(early_on_time_late(Accumulation::Accumulating)),
        [
            p(hms(12, 5, 0), W0, E, 0, 5),
            p(hms(12, 6, 0), W2, E, 0, 7),
            p(hms(12, 6, 0), W0, O, 1, 5),
            p(hms(12, 7, 0), W2, E, 1, 10),
            p(hms(12, 7, 0), W4, E, 0, 4),
            p(hms(12, 7, 30), W2, O, 2, 18),
            p(hms(12, 7, 40), W4, O, 1, 4),
            p(hms(12, 8, 0), W6, E, 0, 3),
            p(hms(12, 8, 19), W0, L, 2, 14),
            p(hms(12, 9, 0), W6, E, 1, 11),
            p(hms(12, 9, 0), W6, E, 2, 12),
            p(hms(12, 9, 30), W6, O, 3, 12),
        ]
    );
}

#[test]
fn early_on_time_and_late_panes_discarding() {
    // Table 2-2's second window: 7, 3, 8. Empty on-time panes fire (Beam's default).
    assert_eq!(
        fired(early_on_time_late(Accumulation::Discarding)),
        [
            p(hms(12, 5, 0), W0, E, 0, 5),
            p(hms(12, 6, 0), W2, E, 0, 7),
            p(hms(12, 6, 0), W0, O, 1, 0),
            p(hms(12, 7, 0), W2, E, 1, 3),
            p(hms(12, 7, 0), W4, E, 0, 4),
            p(hms(12, 7, 30), W2, O, 2, 8),
            p(hms(12, 7, 40), W4, O, 1, 0),
            p(hms(12, 8, 0), W6, E, 0, 3),
            p(hms(12, 8, 19), W0, L, 2, 9),
            p(hms(12, 9, 0), W6, E, 1, 8),
            p(hms(12, 9, 0), W6, E, 2, 1),
            p(hms(12, 9, 30), W6, O, 3, 0),
        ]
    );
}

#[test]
fn early_on_time_and_late_panes_accumulating_and_retracting() {
    // Table 2-2's second window: 7, 10 (-7), 18 (-10).
    assert_eq!(
        fired(early_on_time_late(Accumulation::AccumulatingAndRetracting)),
        [
            p(hms(12, 5, 0), W0, E, 0, 5),
            p(hms(12, 6, 0), W2, E, 0, 7),
            r(hms(12, 6, 0), W0, E, 0, 5),
            p(hms(12, 6, 0), W0, O, 1, 5),
            r(hms(12, 7, 0), W2, E, 0, 7),
            p(hms(12, 7, 0), W2, E, 1, 10),
            p(hms(12, 7, 0), W4, E, 0, 4),
            r(hms(12, 7, 30), W2, E, 1, 10),
            p(hms(12, 7, 30), W2, O, 2, 18),
            r(hms(12, 7, 40), W4, E, 0, 4),
            p(hms(12, 7, 40), W4, O, 1, 4),
            p(hms(12, 8, 0), W6, E, 0, 3),
            r(hms(12, 8, 19), W0, O, 1, 5),
            p(hms(12, 8, 19), W0, L, 2, 14),
            r(hms(12, 9, 0), W6, E, 0, 3),
            p(hms(12, 9, 0), W6, E, 1, 11),
            r(hms(12, 9, 0), W6, E, 1, 11),
            p(hms(12, 9, 0), W6, E, 2, 12),
            r(hms(12, 9, 30), W6, E, 2, 12),
            p(hms(12, 9, 30), W6, O, 3, 12),
        ]
    );
}

#[test]
fn closing_always_ends_every_window_with_a_last_pane() {
    let spec = early_on_time_late(Accumulation::Accumulating)
        .closing_behavior(ClosingBehavior::FireAlways);
    let fired = fired(spec);
    let end = hms(12, 10, 0);
    assert_eq!(
        fired[12..],
        [
            last(end, W0, L, 3, 14),
            last(end, W2, L, 3, 18),
            last(end, W4, L, 2, 4),
            last(end, W6, L, 4, 12),
        ]
    );
}

/// Example 4-3 (figures 4-7 and 4-8): sessions with a one-minute gap, early panes aligned
/// to the minute, a pane per late score, accumulating and retracting. A session that grows
/// or merges is a new window: its panes start at 0, and the panes of the sessions it
/// replaced are retracted under their own bounds.
#[test]
fn sessions_merge_into_new_windows_and_retract_what_they_replace() {
    let spec = WindowSpec::session(MINUTE)
        .trigger(
            Trigger::watermark()
                .early(Trigger::after_processing_time(Duration::ZERO).aligned_to(MINUTE))
                .late(Trigger::element_count(1)),
        )
        .allowed_lateness(Duration::from_secs(600))
        .accumulation(Accumulation::AccumulatingAndRetracting);
    let (fired, _) = run(spec, &timeline(&HEURISTIC, &[]), Some(hms(12, 10, 0)));
    let s = |from: (i64, i64, i64), to: (i64, i64, i64)| {
        (hms(from.0, from.1, from.2), hms(to.0, to.1, to.2))
    };
    let s1 = s((12, 0, 26), (12, 1, 26));
    let s2 = s((12, 2, 24), (12, 3, 24));
    let s34 = s((12, 3, 39), (12, 5, 19));
    let s2345 = s((12, 2, 24), (12, 5, 19));
    let s6 = s((12, 6, 39), (12, 7, 39));
    let s17 = s((12, 0, 26), (12, 5, 19));
    let s68 = s((12, 6, 39), (12, 8, 26));
    let s689 = s((12, 6, 39), (12, 8, 46));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 5, 0), s1, E, 0, 5),
            p(hms(12, 6, 0), s2, E, 0, 7),
            r(hms(12, 6, 0), s1, E, 0, 5),
            p(hms(12, 6, 0), s1, O, 1, 5),
            // 3 and 4 made a session of their own, which fired early.
            p(hms(12, 7, 0), s34, E, 0, 7),
            // 8 bridged it with 7's: on time, the merged session retracts both.
            r(hms(12, 7, 40), s2, E, 0, 7),
            r(hms(12, 7, 40), s34, E, 0, 7),
            p(hms(12, 7, 40), s2345, O, 0, 22),
            p(hms(12, 8, 0), s6, E, 0, 3),
            // The late 9 bridges the first two sessions: a new, late window.
            r(hms(12, 8, 19), s1, O, 1, 5),
            r(hms(12, 8, 19), s2345, O, 0, 22),
            p(hms(12, 8, 19), s17, L, 0, 36),
            r(hms(12, 9, 0), s6, E, 0, 3),
            p(hms(12, 9, 0), s68, E, 0, 11),
            r(hms(12, 9, 0), s68, E, 0, 11),
            p(hms(12, 9, 0), s689, E, 0, 12),
            // The watermark passes 12:08:46 only when the input ends, at the end of
            // time, past the ten minutes of lateness too: the on-time pane is the
            // session's last (Beam marks it so).
            r(hms(12, 10, 0), s689, E, 0, 12),
            last(hms(12, 10, 0), s689, O, 1, 12),
        ]
    );
    // Adding panes and subtracting retractions leaves every score counted once.
    let total: i64 = fired
        .iter()
        .map(|(_, pane)| {
            if pane.retraction {
                -pane.value
            } else {
                pane.value
            }
        })
        .sum();
    assert_eq!(total, 48);
    let merged = &fired[11].1;
    assert_eq!((merged.is_first, merged.on_time_index), (true, Some(0)));
}

/// Chapter 4's sessions are windows of their own: a score inside a session keeps it.
#[test]
fn a_score_inside_a_session_keeps_its_window_and_its_pane_indices() {
    let spec = WindowSpec::session(MINUTE).trigger(Trigger::repeatedly(Trigger::element_count(1)));
    let steps = [
        (hms(12, 0, 0), Step::Score(1, hms(12, 0, 0))),
        (hms(12, 0, 1), Step::Score(2, hms(12, 0, 30))),
        (hms(12, 0, 2), Step::Score(3, hms(12, 0, 10))),
    ];
    let (fired, _) = run(spec, &steps, None);
    let first = (hms(12, 0, 0), hms(12, 1, 0));
    let grown = (hms(12, 0, 0), hms(12, 1, 30));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 0, 0), first, E, 0, 1),
            p(hms(12, 0, 1), grown, E, 0, 3),
            p(hms(12, 0, 2), grown, E, 1, 6),
        ]
    );
}
