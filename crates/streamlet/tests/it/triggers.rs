//! Composed triggers over the running example: sequences, whichever-first, all-of,
//! `or_finally`, `never`, global windows; and the rules a spec must pass.

use std::time::Duration;

use runnel_streamlet::window::{
    ClosingBehavior, Count, SpecError, Sum, Timing, Trigger, Window, WindowOperator, WindowSpec,
};

use crate::scores::{Expected, HEURISTIC, hms, rows, run, timeline};

use Timing::{Early as E, Late as L, OnTime as O};

const MINUTE: Duration = Duration::from_secs(60);
const FIXED: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120));

const W0: (i64, i64) = (hms(12, 0, 0), hms(12, 2, 0));
const W2: (i64, i64) = (hms(12, 2, 0), hms(12, 4, 0));
const W4: (i64, i64) = (hms(12, 4, 0), hms(12, 6, 0));
const W6: (i64, i64) = (hms(12, 6, 0), hms(12, 8, 0));

const fn p(at: i64, window: (i64, i64), timing: Timing, index: u32, value: i64) -> Expected {
    (at, window, timing, index, false, false, value)
}

const fn last(at: i64, window: (i64, i64), timing: Timing, index: u32, value: i64) -> Expected {
    (at, window, timing, index, true, false, value)
}

#[test]
fn a_sequence_waits_for_two_scores_then_fires_for_each() {
    let spec = FIXED.trigger(Trigger::after_each(&[
        Trigger::element_count(2),
        Trigger::repeatedly(Trigger::element_count(1)),
    ]));
    let end = hms(12, 10, 0);
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(end));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 6, 13), W2, E, 0, 10),
            p(hms(12, 7, 6), W2, E, 1, 18),
            p(hms(12, 8, 19), W0, E, 0, 14),
            p(hms(12, 8, 39), W6, E, 0, 11),
            p(hms(12, 9, 0), W6, E, 1, 12),
            // The 4 never had company: the window's final pane carries it, on time.
            last(end, W4, O, 0, 4),
        ]
    );
}

#[test]
fn whichever_comes_first_two_scores_or_a_minute() {
    let spec = FIXED.trigger(Trigger::repeatedly(Trigger::after_first(&[
        Trigger::element_count(2),
        Trigger::after_processing_time(MINUTE),
    ])));
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(hms(12, 10, 0)));
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 5, 59), W0, E, 0, 5),
            p(hms(12, 6, 13), W2, E, 0, 10),
            p(hms(12, 7, 39), W4, E, 0, 4),
            p(hms(12, 8, 6), W2, E, 1, 18),
            p(hms(12, 8, 19), W6, E, 0, 3),
            p(hms(12, 9, 0), W6, E, 1, 12),
            p(hms(12, 9, 19), W0, E, 1, 14),
        ]
    );
}

#[test]
fn all_of_two_scores_and_a_minute() {
    let spec = FIXED.trigger(Trigger::repeatedly(Trigger::after_all(&[
        Trigger::element_count(2),
        Trigger::after_processing_time(MINUTE),
    ])));
    let end = hms(12, 10, 0);
    let (fired, _) = run(spec, &timeline(&[], &[]), Some(end));
    assert_eq!(
        rows(&fired),
        [
            // 7 at 12:05:39 starts the minute; 3 makes two; the minute ends at 12:06:39.
            p(hms(12, 6, 39), W2, E, 0, 10),
            // 5 waited since 12:04:59 for a second score: the 9.
            p(hms(12, 8, 19), W0, E, 0, 14),
            // 3 at 12:07:19 starts the minute; 8 at 12:08:39 makes two, after it.
            p(hms(12, 8, 39), W6, E, 0, 11),
            // What never met both conditions closes with its window, on time.
            last(end, W2, O, 1, 18),
            last(end, W4, O, 0, 4),
            last(end, W6, O, 1, 12),
        ]
    );
}

#[test]
fn every_score_until_the_watermark_passes_the_end() {
    // Beam's `Repeatedly.forever(AfterPane.elementCountAtLeast(1))
    //     .orFinally(AfterWatermark.pastEndOfWindow())`: the watermark fires a last,
    // on-time pane, and the window is done.
    let spec = FIXED
        .trigger(Trigger::repeatedly(Trigger::element_count(1)).or_finally(Trigger::watermark()));
    let (fired, late) = run(spec, &timeline(&HEURISTIC, &[]), None);
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 4, 59), W0, E, 0, 5),
            p(hms(12, 5, 39), W2, E, 0, 7),
            last(hms(12, 6, 0), W0, O, 1, 5),
            p(hms(12, 6, 13), W2, E, 1, 10),
            p(hms(12, 6, 39), W4, E, 0, 4),
            p(hms(12, 7, 6), W2, E, 2, 18),
            p(hms(12, 7, 19), W6, E, 0, 3),
            last(hms(12, 7, 30), W2, O, 3, 18),
            last(hms(12, 7, 40), W4, O, 1, 4),
            p(hms(12, 8, 39), W6, E, 1, 11),
            p(hms(12, 9, 0), W6, E, 2, 12),
            last(hms(12, 9, 30), W6, O, 3, 12),
        ]
    );
    assert_eq!(late, [9]);
}

#[test]
fn never_fires_only_the_final_pane_of_each_window() {
    let spec = FIXED
        .trigger(Trigger::never())
        .allowed_lateness(Duration::from_secs(300));
    let end = hms(12, 10, 0);
    let (fired, late) = run(spec, &timeline(&HEURISTIC, &[]), Some(end));
    assert_eq!(
        rows(&fired),
        [
            // Expired at watermark 12:07 with the late 9 in it; on time, since it holds
            // what arrived before the end.
            last(hms(12, 9, 30), W0, O, 0, 14),
            last(end, W2, O, 0, 18),
            last(end, W4, O, 0, 4),
            last(end, W6, O, 0, 12),
        ]
    );
    assert!(late.is_empty());
}

#[test]
fn a_global_window_keeps_per_key_state_and_fires_on_processing_time() {
    let every_two_minutes = Trigger::repeatedly(
        Trigger::after_processing_time(Duration::ZERO).aligned_to(Duration::from_secs(120)),
    );
    let spec = WindowSpec::global().trigger(every_two_minutes);
    let end = hms(12, 10, 0);
    let (fired, _) = run(spec, &timeline(&HEURISTIC, &[]), Some(end));
    let global = (Window::GLOBAL.start, Window::GLOBAL.end);
    assert_eq!(
        rows(&fired),
        [
            p(hms(12, 6, 0), global, E, 0, 12),
            p(hms(12, 8, 0), global, E, 1, 30),
            p(hms(12, 10, 0), global, E, 2, 48),
        ]
    );
    // A pane's event time is the latest of its window's scores so far, not the end of time.
    let stamps: Vec<i64> = fired.iter().map(|(_, pane)| pane.timestamp).collect();
    assert_eq!(stamps, [hms(12, 2, 24), hms(12, 6, 39), hms(12, 7, 46)]);

    // Closing always: the end of the input adds a last pane.
    let closing = spec.closing_behavior(ClosingBehavior::FireAlways);
    let (fired, _) = run(closing, &timeline(&HEURISTIC, &[]), Some(end));
    assert_eq!(rows(&fired)[3], last(end, global, L, 3, 48));
}

#[test]
fn a_global_window_with_the_watermark_trigger_is_a_batch() {
    let end = hms(12, 10, 0);
    let (fired, late) = run(WindowSpec::global(), &timeline(&HEURISTIC, &[]), Some(end));
    let global = (Window::GLOBAL.start, Window::GLOBAL.end);
    assert_eq!(rows(&fired), [last(end, global, O, 0, 48)]);
    assert!(
        late.is_empty(),
        "nothing is late in a window that ends with the input"
    );
}

#[test]
fn specs_that_cannot_run_are_refused_with_what_to_change() {
    let finishing = FIXED.trigger(Trigger::after_first(&[
        Trigger::element_count(10),
        Trigger::watermark(),
    ]));
    let error = WindowOperator::<String, _>::try_new(finishing, Count::<()>::new())
        .expect_err("a trigger that finishes early");
    assert!(matches!(error, SpecError::FinishesEarly { .. }));
    assert!(
        error
            .to_string()
            .starts_with("trigger after_first(element_count(10), watermark()) finishes once"),
        "{error}"
    );
    let repeating_early =
        FIXED.trigger(Trigger::watermark().early(Trigger::repeatedly(Trigger::element_count(1))));
    assert_eq!(
        repeating_early.check().unwrap_err().to_string(),
        "trigger watermark().early(repeatedly(element_count(1))): the early firings must fire \
         once (element_count, after_processing_time, watermark(), never, after_first or \
         after_all), not repeatedly(element_count(1)); early and late firings repeat by \
         themselves"
    );
    let lateness = WindowSpec::global().allowed_lateness(MINUTE);
    assert_eq!(lateness.check(), Err(SpecError::LatenessOnGlobalWindows));
    let wrong = FIXED.trigger(Trigger::element_count(2).late(Trigger::element_count(1)));
    assert_eq!(
        wrong.check().unwrap_err().to_string(),
        "late() applies to Trigger::watermark() only, not to element_count(2)"
    );
}

#[test]
#[should_panic(expected = "invalid window spec: trigger element_count(3) finishes once")]
fn an_operator_with_a_spec_that_cannot_run_panics_with_the_reason() {
    let spec = FIXED.trigger(Trigger::element_count(3));
    let _ = WindowOperator::<String, _>::new(spec, Sum::of(|value: &i64| *value));
}
