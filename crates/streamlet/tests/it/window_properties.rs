//! Properties of the window operator against a direct batch computation: for inputs in
//! order, and out of order within the watermark bound, streaming results equal batch ones;
//! and the three accumulation modes agree on every window's final value.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::{
    Accumulation, Added, Aggregate, Firing, Pane, Sum, Timing, Trigger, WindowOperator, WindowSpec,
    Windows,
};

/// One input: key, event time, value, input partition.
type Input = (u8, i64, i64, u32);

/// The windows to test: tumbling, sliding with an even and an uneven slide, sessions.
fn windows() -> impl Strategy<Value = Windows> {
    prop_oneof![
        (1_i64..20).prop_map(|s| Windows::Tumbling { size: s * 500 }),
        (1_i64..6, 1_i64..4).prop_map(|(n, s)| Windows::Sliding {
            size: n * s * 400,
            slide: s * 400
        }),
        Just(Windows::Sliding {
            size: 1_000,
            slide: 300
        }),
        (1_i64..10).prop_map(|g| Windows::Session { gap: g * 300 }),
    ]
}

/// Inputs whose timestamps trail the largest one before them by at most `bound`.
fn inputs(bound: i64) -> impl Strategy<Value = Vec<Input>> {
    prop::collection::vec(
        (0_u8..4, 0_i64..800, -50_i64..50, 0_u32..3, 0..=bound),
        0..120,
    )
    .prop_map(|steps| {
        let mut time = 1_000_000;
        steps
            .into_iter()
            .map(|(key, advance, value, partition, jitter)| {
                time += advance;
                (key, time - jitter, value, partition)
            })
            .collect()
    })
}

/// Sums per key and window, computed directly from all inputs.
fn batch(windows: Windows, inputs: &[Input]) -> BTreeMap<(u8, i64, i64), i64> {
    let mut sums = BTreeMap::new();
    if let Windows::Session { gap } = windows {
        let mut by_key: BTreeMap<u8, Vec<(i64, i64)>> = BTreeMap::new();
        for &(key, time, value, _) in inputs {
            by_key.entry(key).or_default().push((time, value));
        }
        for (key, mut elements) in by_key {
            elements.sort();
            let mut session: Option<(i64, i64, i64)> = None;
            for (time, value) in elements {
                session = match session {
                    Some((start, end, sum)) if time < end => {
                        Some((start, end.max(time + gap), sum + value))
                    }
                    done => {
                        if let Some((start, end, sum)) = done {
                            sums.insert((key, start, end), sum);
                        }
                        Some((time, time + gap, value))
                    }
                };
            }
            if let Some((start, end, sum)) = session {
                sums.insert((key, start, end), sum);
            }
        }
    } else {
        for &(key, time, value, _) in inputs {
            for window in windows.windows_of(time) {
                *sums.entry((key, window.start, window.end)).or_insert(0) += value;
            }
        }
    }
    sums
}

/// Streams the inputs through watermarks with `bound` and the operator; returns the panes
/// and the late inputs.
fn stream(spec: WindowSpec, bound: i64, inputs: &[Input]) -> (Vec<Pane<u8, i64>>, usize) {
    stream_with(spec, bound, inputs, Sum::of(|value: &i64| *value))
}

/// An integer sum that does not subtract: every pane merges its window's slices.
struct Merging(Sum<i64, i64>);

impl Aggregate for Merging {
    type Input = i64;
    type Accumulator = i64;
    type Output = i64;

    fn create(&self) -> i64 {
        self.0.create()
    }
    fn add(&self, accumulator: &mut i64, input: &i64) {
        self.0.add(accumulator, input);
    }
    fn merge(&self, accumulator: &mut i64, other: &i64) {
        self.0.merge(accumulator, other);
    }
    fn result(&self, accumulator: &i64) -> i64 {
        self.0.result(accumulator)
    }
}

fn stream_with<A: Aggregate<Input = i64, Output = i64>>(
    spec: WindowSpec,
    bound: i64,
    inputs: &[Input],
    aggregate: A,
) -> (Vec<Pane<u8, i64>>, usize) {
    stream_restoring(spec, bound, inputs, aggregate, None)
}

/// [`stream_with`], replacing the operator with one restored from its snapshot before
/// input `restart` if given.
fn stream_restoring<A: Aggregate<Input = i64, Output = i64>>(
    spec: WindowSpec,
    bound: i64,
    inputs: &[Input],
    aggregate: A,
    restart: Option<(usize, A)>,
) -> (Vec<Pane<u8, i64>>, usize) {
    let mut operator = WindowOperator::new(spec, aggregate);
    let mut restart = restart;
    let mut watermarks =
        WatermarkHolder::new(Watermarks::bounded(Duration::from_millis(bound as u64)).never_idle());
    for partition in 0..3 {
        watermarks.add_partition(partition, 0);
    }
    let (mut panes, mut late) = (Vec::new(), 0);
    for (now, &(key, time, value, partition)) in inputs.iter().enumerate() {
        if restart.as_ref().is_some_and(|(at, _)| *at == now) {
            let (_, aggregate) = restart.take().expect("a restart");
            let mut restored = WindowOperator::new(spec, aggregate);
            restored
                .restore(&operator.snapshot())
                .expect("the snapshot restores");
            operator = restored;
        }
        let now = now as i64;
        if operator.add(key, time, &value, now, &mut panes) == Added::Late {
            late += 1;
        }
        if let Some(watermark) = watermarks.observe(partition, time, now) {
            operator.advance_watermark(watermark, now, &mut panes);
        }
    }
    operator.advance_watermark(watermarks.finish(), inputs.len() as i64, &mut panes);
    (panes, late)
}

fn nonzero_keys(sums: BTreeMap<u8, i64>) -> BTreeMap<u8, i64> {
    sums.into_iter().filter(|(_, v)| *v != 0).collect()
}

fn by_window(panes: &[Pane<u8, i64>]) -> BTreeMap<(u8, i64, i64), i64> {
    panes
        .iter()
        .map(|pane| ((pane.key, pane.window_start, pane.window_end), pane.value))
        .collect()
}

proptest! {
    #[test]
    fn in_order_results_equal_batch(windows in windows(), inputs in inputs(0)) {
        let (panes, late) = stream(WindowSpec::new(windows), 0, &inputs);
        prop_assert_eq!(late, 0);
        prop_assert!(panes.iter().all(|p| p.timing == Timing::OnTime && p.index == 0));
        prop_assert_eq!(by_window(&panes), batch(windows, &inputs));
    }

    #[test]
    fn out_of_order_results_within_the_bound_equal_batch(
        windows in windows(),
        bound in 0_i64..3_000,
        seed in inputs(3_000),
    ) {
        // Regenerate the jitter within this case's bound.
        let inputs: Vec<Input> = seed
            .iter()
            .enumerate()
            .map(|(i, &(key, time, value, partition))| {
                (key, time + 3_000 - (i as i64 * 7919) % (bound + 1), value, partition)
            })
            .scan(i64::MIN, |max, (key, time, value, partition)| {
                // Keep every timestamp within `bound` of the largest before it.
                let time = time.max(max.saturating_sub(bound));
                *max = (*max).max(time);
                Some((key, time, value, partition))
            })
            .collect();
        let (panes, late) = stream(WindowSpec::new(windows), bound, &inputs);
        prop_assert_eq!(late, 0);
        prop_assert_eq!(by_window(&panes), batch(windows, &inputs));
    }

    #[test]
    fn every_accumulation_mode_ends_with_the_batch_value(
        windows in windows(),
        count in 1_u32..4,
        inputs in inputs(4_000),
    ) {
        // A small watermark bound makes many inputs late; a long lateness keeps them all.
        let expected = batch(windows, &inputs);
        for accumulation in [
            Accumulation::Discarding,
            Accumulation::Accumulating,
            Accumulation::AccumulatingAndRetracting,
        ] {
            let spec = WindowSpec::new(windows)
                .trigger(Trigger::on_time().early(Firing::every(count)))
                .allowed_lateness(Duration::from_secs(3_600))
                .accumulation(accumulation);
            let (panes, late) = stream(spec, 500, &inputs);
            prop_assert_eq!(late, 0);
            let mut totals: BTreeMap<(u8, i64, i64), i64> = BTreeMap::new();
            let mut next_index: BTreeMap<(u8, i64, i64), u32> = BTreeMap::new();
            for pane in &panes {
                let window = (pane.key, pane.window_start, pane.window_end);
                match (accumulation, pane.retraction) {
                    (Accumulation::Accumulating, _) => {
                        totals.insert(window, pane.value);
                    }
                    (_, true) => *totals.entry(window).or_insert(0) -= pane.value,
                    (_, false) => *totals.entry(window).or_insert(0) += pane.value,
                }
                if !pane.retraction {
                    let index = next_index.entry(window).or_insert(0);
                    prop_assert!(pane.index >= *index, "pane indexes grow per window");
                    *index = pane.index + 1;
                }
            }
            let sessions = matches!(windows, Windows::Session { .. });
            let nonzero = |map: &BTreeMap<(u8, i64, i64), i64>| -> BTreeMap<(u8, i64, i64), i64> {
                map.iter().filter(|(_, v)| **v != 0).map(|(k, v)| (*k, *v)).collect()
            };
            let per_key = |map: &BTreeMap<(u8, i64, i64), i64>| -> BTreeMap<u8, i64> {
                let mut sums = BTreeMap::new();
                for ((key, _, _), value) in map {
                    *sums.entry(*key).or_insert(0) += value;
                }
                sums
            };
            match accumulation {
                // Without retractions a merged-away session keeps its last pane downstream;
                // the final sessions carry the batch values.
                Accumulation::Accumulating if sessions => {
                    for (window, value) in &expected {
                        prop_assert_eq!(totals.get(window), Some(value));
                    }
                }
                // Discarding panes of merged sessions add up per key, not per window.
                Accumulation::Discarding if sessions => {
                    prop_assert_eq!(nonzero_keys(per_key(&totals)), nonzero_keys(per_key(&expected)));
                }
                _ => prop_assert_eq!(nonzero(&totals), nonzero(&expected), "{:?}", accumulation),
            }
        }
    }

    #[test]
    fn subtracting_fires_the_same_panes_as_merging(
        windows in windows(),
        count in 1_u32..4,
        lateness in 0_u64..3_000,
        inputs in inputs(4_000),
    ) {
        // Late elements within the lateness and expiring slices both touch the window an
        // aggregate that subtracts keeps running between panes.
        for accumulation in [
            Accumulation::Discarding,
            Accumulation::Accumulating,
            Accumulation::AccumulatingAndRetracting,
        ] {
            let late = Trigger::on_time().late(Firing::every(count));
            // With and without early firings, and two triggers without a watermark part,
            // whose panes after the end of a window come from elements or its expiry.
            for trigger in [
                late,
                late.early(Firing::every(count)),
                Trigger::never(),
                Trigger::repeatedly(Trigger::element_count(count)),
            ] {
                let spec = WindowSpec::new(windows)
                    .trigger(trigger)
                    .allowed_lateness(Duration::from_millis(lateness))
                    .accumulation(accumulation);
                let subtracting = stream(spec, 500, &inputs);
                let merging = stream_with(spec, 500, &inputs, Merging(Sum::of(|value: &i64| *value)));
                prop_assert_eq!(subtracting, merging, "{:?}", spec);
            }
        }
    }

    #[test]
    fn a_restored_operator_fires_what_the_original_would(
        windows in windows(),
        restart in 0_usize..120,
        inputs in inputs(1_000),
    ) {
        // Restored stores rebuild what they do not checkpoint (the running accumulator of
        // a sum that subtracts) and hold the newest slice among the others.
        let spec = WindowSpec::new(windows)
            .trigger(Trigger::on_time().late(Firing::every(1)))
            .allowed_lateness(Duration::from_millis(700));
        let sum = || Sum::of(|value: &i64| *value);
        let through = stream_restoring(spec, 500, &inputs, sum(), None);
        let restored = stream_restoring(spec, 500, &inputs, sum(), Some((restart, sum())));
        prop_assert_eq!(through, restored);
    }
}
