//! Window state checkpointed before triggers kept state of their own and panes had
//! metadata (commit df6137d) restores: pending early and late firings pick up where they
//! were, and the panes that follow carry their metadata. The snapshots below are what that
//! version wrote for the steps described with each.

use std::time::Duration;

use runnel_streamlet::window::{
    Accumulation, Count, Pane, PaneInfo, Timing, Trigger, WindowOperator, WindowSpec,
};

/// Tumbling minutes, early panes 10 s after the first element of a pane, late panes every
/// two elements, two minutes of lateness, retracting. Written after: elements at event time
/// 1 s (processing time 0) and 2 s (1 s); processing time 10 s (early pane of 2); 3 s at
/// 11 s; watermark 60 s at 12 s (on-time pane of 3); 61 s at 12.5 s; the late 4 s at 13 s.
const SLICED: &str = r#"{"watermark":60000,"keys":[["a",{"store":{"Sliced":{"slices":[[0,4],[60000,1]],"panes":{"0":{"index":2,"pending":1,"pending_since":13000,"delta":null,"last":{"value":3,"index":1,"timing":"ON_TIME"},"retract":[]},"60000":{"index":0,"pending":1,"pending_since":12500,"delta":null,"last":null,"retract":[]}},"fired_through":60000}},"event_timer":120000,"processing_timer":21000}]],"event_timers":{"due":{"120000":["a"],"180000":["a"]}},"processing_timers":{"due":{"21000":["a"]}}}"#;

/// Sessions with a 10 s gap, a minute of lateness, retracting. Written after: elements at
/// 1 s and 30 s, watermark 20 s (the first session's on-time pane).
const SESSIONS: &str = r#"{"watermark":20000,"keys":[["s",{"store":{"Sessions":{"sessions":[{"window":{"start":1000,"end":11000},"accumulator":1,"pane":{"index":1,"pending":0,"pending_since":null,"delta":null,"last":{"value":1,"index":0,"timing":"ON_TIME"},"retract":[]}},{"window":{"start":30000,"end":40000},"accumulator":1,"pane":{"index":0,"pending":1,"pending_since":0,"delta":null,"last":null,"retract":[]}}],"fired_through":11000}},"event_timer":40000,"processing_timer":null}]],"event_timers":{"due":{"40000":["s"]}},"processing_timers":{"due":{}}}"#;

type Panes = Vec<Pane<String, i64>>;

fn brief(panes: &Panes) -> Vec<(i64, i64, PaneInfo, i64)> {
    panes
        .iter()
        .map(|pane| (pane.window_start, pane.window_end, pane.info(), pane.value))
        .collect()
}

fn info(timing: Timing, index: u32, on_time_index: Option<u32>, retraction: bool) -> PaneInfo {
    PaneInfo {
        timing,
        index,
        on_time_index,
        is_first: index == 0,
        is_last: false,
        retraction,
    }
}

#[test]
fn a_checkpoint_of_fixed_windows_from_before_pane_metadata_restores() {
    let spec = WindowSpec::tumbling(Duration::from_secs(60))
        .trigger(
            Trigger::on_time()
                .early(Trigger::after_delay(Duration::from_secs(10)))
                .late(Trigger::every(2)),
        )
        .allowed_lateness(Duration::from_secs(120))
        .accumulation(Accumulation::AccumulatingAndRetracting);
    let mut operator = WindowOperator::<String, _>::new(spec, Count::<()>::new());
    operator
        .restore(SLICED.as_bytes())
        .expect("the old snapshot restores");
    let mut panes = Vec::new();

    // The second minute's early pane is due 10 s after its element arrived at 12.5 s.
    operator.advance_processing_time(22_499, &mut panes);
    assert!(panes.is_empty());
    operator.advance_processing_time(22_500, &mut panes);
    assert_eq!(
        brief(&panes),
        [(60_000, 120_000, info(Timing::Early, 0, None, false), 1)]
    );

    // The first minute waited for a second late element: it retracts its on-time pane.
    panes.clear();
    operator.add("a".to_owned(), 5_000, &(), 23_000, &mut panes);
    use Timing::{Early, Late, OnTime};
    assert_eq!(
        brief(&panes),
        [
            (0, 60_000, info(OnTime, 1, Some(0), true), 3),
            (0, 60_000, info(Late, 2, Some(1), false), 5),
        ]
    );

    // The input ends: the watermark passes the window's lateness too, so its on-time
    // pane is its last.
    panes.clear();
    operator.advance_watermark(i64::MAX, 30_000, &mut panes);
    let last = PaneInfo {
        is_last: true,
        ..info(OnTime, 1, Some(0), false)
    };
    assert_eq!(
        brief(&panes),
        [
            (60_000, 120_000, info(Early, 0, None, true), 1),
            (60_000, 120_000, last, 1),
        ]
    );
}

#[test]
fn a_checkpoint_of_sessions_from_before_pane_metadata_restores() {
    let spec = WindowSpec::session(Duration::from_secs(10))
        .allowed_lateness(Duration::from_secs(60))
        .accumulation(Accumulation::AccumulatingAndRetracting);
    let mut operator = WindowOperator::<String, _>::new(spec, Count::<()>::new());
    operator
        .restore(SESSIONS.as_bytes())
        .expect("the old snapshot restores");
    let mut panes = Vec::new();

    // A late element extends the first session: a new window, which retracts the old one.
    operator.add("s".to_owned(), 8_000, &(), 1, &mut panes);
    use Timing::{Late, OnTime};
    assert_eq!(
        brief(&panes),
        [
            (1_000, 11_000, info(OnTime, 0, Some(0), true), 1),
            (1_000, 18_000, info(Late, 0, Some(0), false), 2),
        ]
    );
    panes.clear();
    operator.advance_watermark(40_000, 2, &mut panes);
    assert_eq!(
        brief(&panes),
        [(30_000, 40_000, info(OnTime, 0, Some(0), false), 1)]
    );
}
