//! Properties of panes across accumulation modes, for random inputs, random watermark
//! schedules, every kind of window and a range of composed triggers: the three modes fire
//! the same panes; an accumulating pane is the running sum of the discarding ones (for
//! merged sessions, with the panes of the sessions they absorbed); retractions cancel what
//! they retract; and every window that is not merged away ends with exactly one pane
//! marked last when windows close always (at most one otherwise).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use runnel_streamlet::window::{
    Accumulation, ClosingBehavior, OnTimeBehavior, Pane, Sum, Trigger, WindowOperator, WindowSpec,
    Windows,
};

use crate::scores::check_pane_rules;

/// What happens after a gap of processing time (the same gap passes in event time).
#[derive(Clone, Copy, Debug)]
enum Step {
    /// An element of a key, at an offset from the event-time clock, with a value.
    Element(u8, i64, i64),
    /// The watermark moves to this far behind the event-time clock (if that is ahead).
    Watermark(i64),
}

fn steps() -> impl Strategy<Value = Vec<(i64, Step)>> {
    let step = prop_oneof![
        4 => (0_u8..3, -3_000_i64..500, -20_i64..50).prop_map(|(k, o, v)| Step::Element(k, o, v)),
        1 => (0_i64..4_000).prop_map(Step::Watermark),
    ];
    prop::collection::vec((0_i64..1_500, step), 0..80)
}

fn windows() -> impl Strategy<Value = Windows> {
    prop_oneof![
        (1_i64..5).prop_map(|n| Windows::Tumbling { size: n * 1_000 }),
        Just(Windows::Sliding {
            size: 2_000,
            slide: 500
        }),
        (1_i64..6).prop_map(|n| Windows::Session { gap: n * 300 }),
        Just(Windows::Global),
    ]
}

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Triggers of every shape: the watermark with early and late parts, none at all,
/// processing time aligned and not, counts, sequences, whichever-first, all-of,
/// `or_finally`, `never`.
fn trigger() -> impl Strategy<Value = Trigger> {
    let aligned = Trigger::after_processing_time(Duration::ZERO).aligned_to(MS(1_000));
    prop::sample::select(vec![
        Trigger::on_time(),
        Trigger::watermark().early(Trigger::element_count(2)),
        Trigger::watermark()
            .early(Trigger::after_processing_time(MS(1_500)))
            .late(Trigger::element_count(2)),
        Trigger::repeatedly(Trigger::element_count(1)),
        Trigger::repeatedly(aligned),
        Trigger::repeatedly(Trigger::after_first(&[
            Trigger::element_count(3),
            Trigger::after_processing_time(MS(700)),
        ])),
        Trigger::repeatedly(Trigger::after_all(&[
            Trigger::element_count(2),
            Trigger::after_processing_time(MS(500)),
        ])),
        Trigger::after_each(&[
            Trigger::element_count(2),
            Trigger::repeatedly(Trigger::element_count(1)),
        ]),
        Trigger::repeatedly(Trigger::element_count(2)).or_finally(Trigger::watermark()),
        Trigger::never(),
    ])
}

/// A spec from the drawn parts; the lateness falls to zero where the rules ask for it.
fn spec(
    windows: Windows,
    trigger: Trigger,
    lateness: u64,
    on_time: bool,
    closing: bool,
) -> WindowSpec {
    let mut spec = WindowSpec::new(windows)
        .trigger(trigger)
        .allowed_lateness(MS(lateness))
        .on_time_behavior(if on_time {
            OnTimeBehavior::FireAlways
        } else {
            OnTimeBehavior::FireIfNonEmpty
        })
        .closing_behavior(if closing {
            ClosingBehavior::FireAlways
        } else {
            ClosingBehavior::FireIfNonEmpty
        });
    if spec.check().is_err() {
        spec = spec.allowed_lateness(Duration::ZERO);
    }
    assert_eq!(spec.check(), Ok(()), "{spec:?}");
    spec
}

type Fired = Vec<(i64, Pane<u8, i64>)>;

/// Runs the steps; at the end, processing time moves on and the input ends.
fn run(spec: WindowSpec, steps: &[(i64, Step)]) -> Fired {
    let mut operator = WindowOperator::new(spec, Sum::of(|value: &i64| *value));
    let (mut now, mut clock) = (0_i64, 1_000_000_i64);
    let mut fired = Vec::new();
    let mut panes = Vec::new();
    let mut due = |operator: &mut WindowOperator<u8, _>, until: i64, fired: &mut Fired| {
        while let Some(deadline) = operator.next_processing_deadline().filter(|d| *d <= until) {
            operator.advance_processing_time(deadline, &mut panes);
            fired.extend(panes.drain(..).map(|pane| (deadline, pane)));
        }
    };
    let mut out = Vec::new();
    for &(gap, step) in steps {
        now += gap;
        clock += gap;
        due(&mut operator, now, &mut fired);
        match step {
            Step::Element(key, offset, value) => {
                operator.add(key, clock + offset, &value, now, &mut out);
            }
            Step::Watermark(lag) => operator.advance_watermark(clock - lag, now, &mut out),
        }
        fired.extend(out.drain(..).map(|pane| (now, pane)));
    }
    now += 10_000;
    due(&mut operator, now, &mut fired);
    operator.advance_watermark(i64::MAX, now, &mut out);
    fired.extend(out.drain(..).map(|pane| (now, pane)));
    check_pane_rules(&fired);
    fired
}

type WindowId = (u8, i64, i64);

fn id(pane: &Pane<u8, i64>) -> WindowId {
    (pane.key, pane.window_start, pane.window_end)
}

/// The panes that are not retractions, without their values.
fn shapes(fired: &Fired) -> Vec<(i64, String)> {
    fired
        .iter()
        .filter(|(_, pane)| !pane.retraction)
        .map(|(at, pane)| {
            let info = pane.info();
            (
                *at,
                format!(
                    "{:?} {:?} {info:?} {}",
                    pane.key,
                    pane.window(),
                    pane.timestamp
                ),
            )
        })
        .collect()
}

/// For each window, the windows merged into it, directly or not, read from the
/// retractions that precede its panes in accumulating-and-retracting mode.
fn absorbed(retracting: &Fired) -> BTreeMap<WindowId, BTreeSet<WindowId>> {
    let mut absorbed: BTreeMap<WindowId, BTreeSet<WindowId>> = BTreeMap::new();
    let mut retracted: Vec<WindowId> = Vec::new();
    for (_, pane) in retracting {
        if pane.retraction {
            retracted.push(id(pane));
            continue;
        }
        let window = id(pane);
        for other in retracted.drain(..).filter(|other| *other != window) {
            let inherited = absorbed.get(&other).cloned().unwrap_or_default();
            let set = absorbed.entry(window).or_default();
            set.insert(other);
            set.extend(inherited);
        }
    }
    absorbed
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_accumulation_modes_agree_retractions_cancel_and_windows_end_once(
        windows in windows(),
        trigger in trigger(),
        lateness in prop::sample::select(vec![0_u64, 1_500, 100_000]),
        on_time in any::<bool>(),
        closing in any::<bool>(),
        steps in steps(),
    ) {
        let spec = spec(windows, trigger, lateness, on_time, closing);
        let discarding = run(spec.accumulation(Accumulation::Discarding), &steps);
        let accumulating = run(spec.accumulation(Accumulation::Accumulating), &steps);
        let retracting = run(spec.accumulation(Accumulation::AccumulatingAndRetracting), &steps);

        // The same panes fire, at the same times, in every mode.
        prop_assert_eq!(shapes(&discarding), shapes(&accumulating));
        prop_assert_eq!(shapes(&retracting), shapes(&accumulating));
        let values = |fired: &Fired| -> Vec<i64> {
            fired.iter().filter(|(_, p)| !p.retraction).map(|(_, p)| p.value).collect()
        };
        prop_assert_eq!(values(&retracting), values(&accumulating));

        // An accumulating pane is the sum of the window's discarding panes so far, and of
        // every discarding pane of the windows merged into it.
        let absorbed = absorbed(&retracting);
        let mut so_far: BTreeMap<WindowId, i64> = BTreeMap::new();
        let mut accumulated = accumulating.iter().map(|(_, pane)| pane.value);
        for (_, pane) in &discarding {
            *so_far.entry(id(pane)).or_insert(0) += pane.value;
            let merged: i64 = absorbed
                .get(&id(pane))
                .into_iter()
                .flatten()
                .map(|other| so_far.get(other).copied().unwrap_or(0))
                .sum();
            prop_assert_eq!(accumulated.next(), Some(so_far[&id(pane)] + merged), "{:?}", pane);
        }

        // Retractions cancel: per window, panes minus retractions leave the last pane of a
        // window that lived to the end, and nothing of a window merged away.
        let merged_away: BTreeSet<WindowId> = absorbed.values().flatten().copied().collect();
        let mut net: BTreeMap<WindowId, i64> = BTreeMap::new();
        let mut last_value: BTreeMap<WindowId, i64> = BTreeMap::new();
        for (_, pane) in &retracting {
            let sign = if pane.retraction { -1 } else { 1 };
            *net.entry(id(pane)).or_insert(0) += sign * pane.value;
            if !pane.retraction {
                last_value.insert(id(pane), pane.value);
            }
        }
        for (window, total) in &net {
            let expected = if merged_away.contains(window) { 0 } else { last_value[window] };
            prop_assert_eq!(*total, expected, "{:?}", window);
        }

        // Every window that was not merged away ends with one pane marked last when
        // windows close always; at most one otherwise (check_pane_rules: nothing after it).
        let mut lasts: BTreeMap<WindowId, usize> = BTreeMap::new();
        for (_, pane) in &accumulating {
            *lasts.entry(id(pane)).or_insert(0) += usize::from(pane.is_last);
        }
        for (window, count) in lasts {
            if merged_away.contains(&window) {
                prop_assert_eq!(count, 0, "{:?} was merged away", window);
            } else if closing {
                prop_assert_eq!(count, 1, "{:?}", window);
            } else {
                prop_assert!(count <= 1, "{:?}", window);
            }
        }
    }
}

/// Found by the property above: an element whose first sliding window the watermark had
/// already passed still owes its later windows their final panes.
#[test]
fn a_sliding_window_after_one_the_watermark_passed_still_closes() {
    let spec = spec(
        Windows::Sliding {
            size: 2_000,
            slide: 500,
        },
        Trigger::watermark()
            .early(Trigger::after_processing_time(MS(1_500)))
            .late(Trigger::element_count(2)),
        0,
        false,
        true,
    );
    let steps = [(0, Step::Watermark(1)), (747, Step::Element(0, -1_248, 0))];
    let fired = run(spec, &steps);
    let last: Vec<(i64, i64)> = fired
        .iter()
        .filter(|(_, pane)| pane.is_last)
        .map(|(_, pane)| (pane.window_start, pane.window_end))
        .collect();
    assert_eq!(
        last,
        [
            (998_000, 1_000_000),
            (998_500, 1_000_500),
            (999_000, 1_001_000)
        ]
    );
}
