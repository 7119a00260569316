//! Windowed aggregation inside a streamlet, driven through the test kit's time control:
//! the Streaming Systems examples with the processing time each pane fired at, and
//! watermarks generated per partition with idle partitions.

use std::time::Duration;

use runnel_host::testkit::TestError;
use runnel_host::testkit::{TestRecord, TestRun};
use runnel_streamlet::prelude::*;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::window::{
    Accumulation, Count, Pane, PaneInfo, Sum, Timing, Trigger, Window, WindowSpec,
};

use crate::scores::{HEURISTIC, PERFECT, SCORES, Step, hms, timeline};

/// A team's score, with its event time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Score {
    team: String,
    points: i64,
    time: i64,
}

const IN: Inlet<Score> = Inlet::new("in");
const TOTALS: Outlet<Pane<String, i64>> = Outlet::new("out");
const LATE: Outlet<Score> = Outlet::new("late");
const FIXED: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120));

fn totals(spec: WindowSpec) -> impl Streamlet {
    WindowedAggregate::new(IN, TOTALS, spec, Sum::of(|s: &Score| s.points))
        .key_by(|s| s.team.clone())
        .event_time(|s| s.time)
        .late_output(LATE)
}

fn score(points: i64, time: i64) -> Score {
    Score {
        team: "TeamX".to_owned(),
        points,
        time,
    }
}

/// The scores (and watermarks) of `steps`, each at its processing time.
fn scheduled(mut run: TestRun, steps: &[(i64, Step)]) -> TestRun {
    for &(at, step) in steps {
        run = match step {
            Step::Score(points, time) => run.at(at).input(IN, [score(points, time)]),
            Step::Watermark(watermark) => run.at(at).watermark(watermark),
        };
    }
    run
}

/// (processing time, window start, timing, index, value) of every pane.
fn fired(run: &runnel_host::testkit::TestOutput) -> Vec<(i64, i64, Timing, u32, i64)> {
    run.timed_output(TOTALS)
        .expect("a timed run")
        .into_iter()
        .map(|(at, pane)| {
            assert_eq!(pane.key, "TeamX");
            assert_eq!(pane.window_end - pane.window_start, 120_000);
            (at, pane.window_start, pane.timing, pane.index, pane.value)
        })
        .collect()
}

#[tokio::test]
async fn batch_every_window_fires_at_the_end_of_the_input() -> anyhow::Result<()> {
    let run = scheduled(TestRun::new(totals(FIXED)), &timeline(&[], &[]))
        .scripted_watermarks()
        .at(hms(12, 10, 0))
        .run()
        .await?;
    let end = hms(12, 10, 0);
    assert_eq!(
        fired(&run),
        [
            (end, hms(12, 0, 0), Timing::OnTime, 0, 14),
            (end, hms(12, 2, 0), Timing::OnTime, 0, 18),
            (end, hms(12, 4, 0), Timing::OnTime, 0, 4),
            (end, hms(12, 6, 0), Timing::OnTime, 0, 12),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn heuristic_watermark_fires_each_window_when_it_passes_and_sends_the_nine_late()
-> anyhow::Result<()> {
    let run = scheduled(TestRun::new(totals(FIXED)), &timeline(&HEURISTIC, &[]))
        .run()
        .await?;
    assert_eq!(
        fired(&run),
        [
            (hms(12, 6, 0), hms(12, 0, 0), Timing::OnTime, 0, 5),
            (hms(12, 7, 30), hms(12, 2, 0), Timing::OnTime, 0, 18),
            (hms(12, 7, 40), hms(12, 4, 0), Timing::OnTime, 0, 4),
            (hms(12, 9, 30), hms(12, 6, 0), Timing::OnTime, 0, 12),
        ]
    );
    assert_eq!(
        run.timed_output(LATE)?,
        [(hms(12, 8, 19), score(9, hms(12, 1, 25)))]
    );
    assert_eq!(run.metrics().late(), 1);
    // Panes carry the last millisecond of their window as event time.
    assert_eq!(run.records(TOTALS)[0].timestamp, hms(12, 2, 0) - 1);
    Ok(())
}

#[tokio::test]
async fn perfect_watermark_fires_each_window_once_complete() -> anyhow::Result<()> {
    let steps = timeline(&PERFECT, &[hms(12, 8, 39)]);
    let run = scheduled(TestRun::new(totals(FIXED)), &steps).run().await?;
    assert_eq!(
        fired(&run),
        [
            (hms(12, 8, 39), hms(12, 0, 0), Timing::OnTime, 0, 14),
            (hms(12, 9, 0), hms(12, 2, 0), Timing::OnTime, 0, 18),
            (hms(12, 9, 10), hms(12, 4, 0), Timing::OnTime, 0, 4),
            (hms(12, 9, 20), hms(12, 6, 0), Timing::OnTime, 0, 12),
        ]
    );
    assert!(run.output(LATE).is_empty());
    Ok(())
}

#[tokio::test]
async fn processing_time_early_firings_fire_at_their_own_time() -> anyhow::Result<()> {
    use Timing::{Early, Late, OnTime};
    let spec = FIXED
        .trigger(Trigger::on_time().early(Trigger::after_processing_time(Duration::from_secs(60))))
        .allowed_lateness(Duration::from_secs(600));
    let run = scheduled(TestRun::new(totals(spec)), &timeline(&HEURISTIC, &[]))
        .run()
        .await?;
    assert_eq!(
        fired(&run),
        [
            (hms(12, 5, 59), hms(12, 0, 0), Early, 0, 5),
            (hms(12, 6, 0), hms(12, 0, 0), OnTime, 1, 5),
            (hms(12, 6, 39), hms(12, 2, 0), Early, 0, 10),
            (hms(12, 7, 30), hms(12, 2, 0), OnTime, 1, 18),
            (hms(12, 7, 39), hms(12, 4, 0), Early, 0, 4),
            (hms(12, 7, 40), hms(12, 4, 0), OnTime, 1, 4),
            (hms(12, 8, 19), hms(12, 6, 0), Early, 0, 3),
            (hms(12, 8, 19), hms(12, 0, 0), Late, 2, 14),
            (hms(12, 9, 30), hms(12, 6, 0), OnTime, 1, 12),
        ]
    );
    assert_eq!(run.metrics().late(), 0);
    Ok(())
}

#[tokio::test]
async fn an_idle_partition_stops_holding_the_watermark_after_the_timeout() -> anyhow::Result<()> {
    let minute = WindowSpec::tumbling(Duration::from_secs(60));
    let counts = WindowedAggregate::new(IN, TOTALS, minute, Sum::of(|s: &Score| s.points))
        .key_by(|s| s.team.clone())
        .event_time(|s| s.time)
        .watermarks(Watermarks::bounded(Duration::ZERO).idle_after(Duration::from_secs(30)));
    let on = |partition: u32, points: i64, time: i64| {
        [TestRecord::new(score(points, time)).partition(partition)]
    };
    let run = TestRun::new(counts)
        .partitions(2)
        .at(0)
        .input_records(IN, on(0, 1, 10_000))
        .at(20_000)
        .input_records(IN, on(1, 2, 20_000))
        .input_records(IN, on(0, 3, 70_000)) // partition 1 still holds the watermark at 20 s
        .at(100_000)
        .run()
        .await?;
    let fired: Vec<(i64, i64, i64)> = run
        .timed_output(TOTALS)?
        .into_iter()
        .map(|(at, pane)| (at, pane.window_start, pane.value))
        .collect();
    // Partition 1 went idle 30 s after its last record: the watermark jumped to 70 s and the
    // first window fired then; the second fired at the end of the input.
    assert_eq!(fired, [(50_000, 0, 3), (100_000, 60_000, 3)]);
    Ok(())
}

#[tokio::test]
async fn pane_records_carry_their_metadata_in_headers_in_one_view_with_their_times()
-> anyhow::Result<()> {
    let spec = FIXED
        .trigger(Trigger::repeatedly(Trigger::element_count(1)))
        .allowed_lateness(Duration::from_secs(600))
        .accumulation(Accumulation::AccumulatingAndRetracting);
    let run = scheduled(TestRun::new(totals(spec)), &timeline(&HEURISTIC, &[]))
        .run()
        .await?;
    let records = run.timed_records(TOTALS)?;
    // The late 9: a retraction of the window's early pane, then its first late pane.
    let late: Vec<_> = records
        .iter()
        .filter(|record| record.sent_at == Some(hms(12, 8, 19)))
        .collect();
    assert_eq!(late.len(), 2);
    let (retraction, pane) = (late[0], late[1]);
    assert_eq!(
        retraction.pane,
        Some(PaneInfo {
            timing: Timing::Early,
            index: 0,
            on_time_index: None,
            is_first: true,
            is_last: false,
            retraction: true,
        })
    );
    assert_eq!(retraction.value.value, 5);
    assert_eq!(
        pane.pane,
        Some(PaneInfo {
            timing: Timing::Late,
            index: 1,
            on_time_index: Some(0),
            is_first: false,
            is_last: false,
            retraction: false,
        })
    );
    assert_eq!(pane.value.value, 14);
    assert_eq!(pane.timestamp, hms(12, 2, 0) - 1);
    let header = |name: &str| pane.headers.get_str(name).map(str::to_owned);
    assert_eq!(
        header("runnel.window.start"),
        Some(hms(12, 0, 0).to_string())
    );
    assert_eq!(header("runnel.window.end"), Some(hms(12, 2, 0).to_string()));
    assert_eq!(header("runnel.pane.timing").as_deref(), Some("LATE"));
    assert_eq!(header("runnel.pane.on-time-index").as_deref(), Some("0"));
    assert_eq!(header("runnel.pane.retraction").as_deref(), Some("false"));
    // Every record's header metadata is its value's.
    for record in &records {
        assert_eq!(record.pane, Some(record.value.info()));
    }
    // `records` gives the same view, partition by partition.
    assert_eq!(run.records(TOTALS), records);
    Ok(())
}

#[tokio::test]
async fn a_timed_view_of_an_untimed_run_is_an_error_that_says_what_to_do() -> anyhow::Result<()> {
    let run = TestRun::new(totals(FIXED))
        .input(IN, [score(5, 1_000)])
        .run()
        .await?;
    let error = run.timed_records(TOTALS).unwrap_err();
    assert!(matches!(error, TestError::NotTimed { .. }));
    assert_eq!(
        error.to_string(),
        "outlet 'out': outputs have processing times only in a timed run; schedule inputs with \
         TestRun::at or set watermarks with TestRun::watermark"
    );
    assert!(run.timed_output(LATE).is_err());
    // The untimed view still has everything else.
    let records = run.records(TOTALS);
    assert_eq!(records[0].sent_at, None);
    assert_eq!(records[0].pane.map(|pane| pane.is_last), Some(true));
    Ok(())
}

#[tokio::test]
async fn aligned_processing_time_fires_every_key_together_on_the_boundaries() -> anyhow::Result<()>
{
    // Counts per team in a global window, every two minutes of processing time.
    const EVERY_TWO_MINUTES: WindowSpec = WindowSpec::global()
        .trigger(Trigger::repeatedly(
            Trigger::after_processing_time(Duration::ZERO).aligned_to(Duration::from_secs(120)),
        ))
        .checked();
    const COUNTS: Outlet<Pane<String, i64>> = Outlet::new("out");
    let counts = WindowedAggregate::new(IN, COUNTS, EVERY_TWO_MINUTES, Count::new())
        .key_by(|s: &Score| s.team.clone())
        .event_time(|s| s.time);
    let team = |team: &str, time: i64| Score {
        team: team.to_owned(),
        points: 1,
        time,
    };
    let run = TestRun::new(counts)
        .at(hms(12, 0, 10))
        .input(IN, [team("x", hms(11, 59, 0))])
        .at(hms(12, 1, 30))
        .input(IN, [team("y", hms(12, 1, 0)), team("x", hms(12, 1, 20))])
        .at(hms(12, 2, 40))
        .input(IN, [team("y", hms(12, 2, 30))])
        .at(hms(12, 5, 0))
        .run()
        .await?;
    let fired: Vec<(Option<i64>, String, u32, i64, i64)> = run
        .timed_records(COUNTS)?
        .into_iter()
        .map(|r| {
            (
                r.sent_at,
                r.value.key,
                r.value.index,
                r.value.value,
                r.timestamp,
            )
        })
        .collect();
    assert_eq!(
        fired,
        [
            (Some(hms(12, 2, 0)), "x".into(), 0, 2, hms(12, 1, 20)),
            (Some(hms(12, 2, 0)), "y".into(), 0, 1, hms(12, 1, 0)),
            (Some(hms(12, 4, 0)), "y".into(), 1, 2, hms(12, 2, 30)),
        ]
    );
    let window = run.output(COUNTS)[0].window();
    assert_eq!(window, Window::GLOBAL);
    Ok(())
}

#[tokio::test]
async fn scores_feed_in_order_of_arrival() {
    // The inputs above are in arrival (processing-time) order, as the book lists them.
    assert!(SCORES.windows(2).all(|pair| pair[0].2 < pair[1].2));
}

/// What `work` logs at warning level or above, one line per event.
async fn warnings_of<T>(work: impl std::future::Future<Output = T>) -> (T, Vec<String>) {
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let result = work.await;
    let logged = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    (result, logged.lines().map(str::to_owned).collect())
}

#[tokio::test]
async fn a_flood_of_late_records_without_a_late_output_logs_a_line_every_ten_seconds()
-> anyhow::Result<()> {
    let dropping = WindowedAggregate::new(IN, TOTALS, FIXED, Sum::of(|s: &Score| s.points))
        .key_by(|s| s.team.clone())
        .event_time(|s| s.time)
        .watermarks(Watermarks::bounded(Duration::ZERO));
    // The watermark passes 12:10; then 400 records of 12:00 arrive, 100 every 5 seconds.
    let mut run = TestRun::new(dropping)
        .at(hms(12, 10, 0))
        .input(IN, [score(1, hms(12, 10, 0))]);
    for batch in 0..4 {
        let at = hms(12, 10, 1) + batch * 5000;
        run = run
            .at(at)
            .input(IN, (0..100).map(|_| score(1, hms(12, 0, 0))));
    }
    let (run, warnings) = warnings_of(run.run()).await;
    let run = run?;
    assert_eq!(run.metrics().late(), 400);
    let dropped: Vec<&String> = warnings
        .iter()
        .filter(|line| line.contains("too late for its windows"))
        .collect();
    assert_eq!(dropped.len(), 2, "{warnings:#?}");
    assert!(dropped[0].contains(" 0 more dropped since"), "{dropped:?}");
    assert!(
        dropped[1].contains(" 199 more dropped since"),
        "{dropped:?}"
    );
    Ok(())
}
