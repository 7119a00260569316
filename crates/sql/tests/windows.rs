//! Windowed SQL streamlets on the test kit: `GROUP BY` a key and a group window (TUMBLE,
//! HOP, SESSION) with each aggregate function, checked against the same aggregation
//! computed over the whole input at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use apache_avro::AvroSchema;
use runnel_host::testkit::TestRun;
use runnel_sql::{Query, SqlStreamlet, Table};
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::{Inlet, Outlet};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Bid {
    auction: i64,
    bidder: i64,
    price: i64,
    channel: String,
    date_time: i64,
}

const BIDS: Inlet<Bid> = Inlet::new("bids");

fn bids_table() -> Table {
    Table::from_avro("bids", &serde_json::to_value(Bid::get_schema()).unwrap()).unwrap()
}

fn streamlet(sql: &str, record: &str) -> SqlStreamlet {
    let query = Query::plan(sql, &[bids_table()], record).unwrap();
    assert!(query.is_stateful());
    SqlStreamlet::new(Arc::new(query))
}

/// 300 bids over 210 s of event time, from 3 bidders on 4 auctions and 3 channels.
fn bids() -> Vec<Bid> {
    (0..300)
        .map(|n| Bid {
            auction: n % 4,
            bidder: n % 3,
            price: (n * 37) % 101,
            channel: ["web", "app", "api"][(n % 5 % 3) as usize].into(),
            date_time: n * 700,
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct BidderTotal {
    bidder: i64,
    bids: i64,
    total: Option<i64>,
    starts: i64,
    ends: i64,
}

#[tokio::test]
async fn tumbling_windows_count_and_sum_per_key() -> anyhow::Result<()> {
    let sql = "SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, \
                      TUMBLE_START(date_time, INTERVAL '10' SECOND) AS starts, \
                      TUMBLE_END(date_time, INTERVAL '10' SECOND) AS ends \
               FROM bids GROUP BY bidder, TUMBLE(date_time, INTERVAL '10' SECOND)";
    let run = TestRun::new(streamlet(sql, "BidderTotal"))
        .input(BIDS, bids())
        .run()
        .await?;
    let out: Outlet<BidderTotal> = Outlet::new("out");
    let mut streamed = run.output(out);
    streamed.sort_by_key(|total| (total.bidder, total.starts));

    let mut expected: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for bid in bids() {
        let start = bid.date_time / 10_000 * 10_000;
        let entry = expected.entry((bid.bidder, start)).or_default();
        *entry = (entry.0 + 1, entry.1 + bid.price);
    }
    let expected: Vec<BidderTotal> = expected
        .into_iter()
        .map(|((bidder, starts), (bids, total))| BidderTotal {
            bidder,
            bids,
            total: Some(total),
            starts,
            ends: starts + 10_000,
        })
        .collect();
    assert_eq!(expected.len(), 3 * 21);
    assert_eq!(streamed, expected);

    // Each result is stamped with its window's last millisecond, and says its window and
    // pane in its headers.
    for received in run.records(out) {
        let (starts, ends) = (received.value.starts, received.value.ends);
        assert_eq!(received.timestamp, ends - 1);
        let header = |name: &str| received.headers.get_str(name).map(str::to_owned);
        assert_eq!(header("runnel.window.start"), Some(starts.to_string()));
        assert_eq!(header("runnel.window.end"), Some(ends.to_string()));
        let pane = received.pane.expect("a window's result carries its pane");
        assert_eq!(pane.timing, runnel_streamlet::window::Timing::OnTime);
        assert!(
            pane.is_first && pane.is_last && !pane.retraction,
            "{pane:?}"
        );
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, PartialOrd, Serialize, Deserialize, AvroSchema)]
struct Spread {
    parity: i64,
    lowest: Option<i64>,
    highest: Option<i64>,
    mean: Option<f64>,
    channels: i64,
    starts: i64,
}

#[tokio::test]
async fn hopping_windows_take_min_max_avg_and_count_distinct() -> anyhow::Result<()> {
    let sql = "SELECT auction % 2 AS parity, MIN(price) AS lowest, MAX(price) AS highest, \
                      AVG(price) AS mean, COUNT(DISTINCT channel) AS channels, \
                      HOP_START(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS starts \
               FROM bids WHERE price > 10 \
               GROUP BY auction % 2, HOP(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND)";
    let run = TestRun::new(streamlet(sql, "Spread"))
        .input(BIDS, bids())
        .run()
        .await?;
    let out: Outlet<Spread> = Outlet::new("out");
    assert!(run.dead_letters().is_empty(), "{:?}", run.dead_letters());
    let mut streamed = run.output(out);
    streamed.sort_by_key(|spread| (spread.parity, spread.starts));

    // Every window of 10 s starting every 5 s holds the bids of its two slices.
    let mut windows: BTreeMap<(i64, i64), Vec<Bid>> = BTreeMap::new();
    for bid in bids().into_iter().filter(|bid| bid.price > 10) {
        let slice = bid.date_time / 5_000 * 5_000;
        for start in [slice - 5_000, slice] {
            windows
                .entry((bid.auction % 2, start))
                .or_default()
                .push(bid.clone());
        }
    }
    let expected: Vec<Spread> = windows
        .into_iter()
        .map(|((parity, starts), bids)| {
            let prices: Vec<i64> = bids.iter().map(|bid| bid.price).collect();
            let channels: BTreeSet<&str> = bids.iter().map(|bid| bid.channel.as_str()).collect();
            Spread {
                parity,
                lowest: prices.iter().min().copied(),
                highest: prices.iter().max().copied(),
                mean: Some(prices.iter().sum::<i64>() as f64 / prices.len() as f64),
                channels: channels.len() as i64,
                starts,
            }
        })
        .collect();
    assert!(expected.iter().any(|spread| spread.channels < 3));
    assert_eq!(streamed.len(), expected.len());
    for (streamed, expected) in streamed.iter().zip(&expected) {
        let mean = |spread: &Spread| spread.mean.unwrap();
        assert!(
            (mean(streamed) - mean(expected)).abs() < 1e-9,
            "{streamed:?} {expected:?}"
        );
        assert_eq!(
            Spread {
                mean: None,
                ..streamed.clone()
            },
            Spread {
                mean: None,
                ..expected.clone()
            }
        );
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct Session {
    bidder: i64,
    bids: i64,
    starts: i64,
    ends: i64,
}

#[tokio::test]
async fn sessions_end_after_the_gap_and_having_filters_them() -> anyhow::Result<()> {
    // Bidder 1 bids in bursts: 5 bids 1 s apart, then 4 s of silence.
    let bids: Vec<Bid> = (0..40)
        .map(|n| Bid {
            auction: 1,
            bidder: 1 + n % 2,
            price: 1,
            channel: "web".into(),
            date_time: (n / 5) * 9_000 + (n % 5) * 1_000,
        })
        .collect();
    let sql = "SELECT bidder, COUNT(*) AS bids, \
                      SESSION_START(date_time, INTERVAL '3' SECOND) AS starts, \
                      SESSION_ROWTIME(date_time, INTERVAL '3' SECOND) AS ends \
               FROM bids GROUP BY bidder, SESSION(date_time, INTERVAL '3' SECOND) \
               HAVING COUNT(*) > 2";
    let run = TestRun::new(streamlet(sql, "Session"))
        .input(BIDS, bids.clone())
        .run()
        .await?;
    let out: Outlet<Session> = Outlet::new("out");
    let mut streamed = run.output(out);
    streamed.sort();
    // Each burst of 5 bids (1 s apart) holds 3 of one bidder, 2 of the other, 2 s apart:
    // a session of 3 bids from its first bid to 3 s after its last, and one of 2 that
    // HAVING drops.
    let mut expected = Vec::new();
    for burst in 0..8 {
        let first = burst * 5;
        let bidder = 1 + first % 2;
        let start = burst * 9_000;
        expected.push(Session {
            bidder,
            bids: 3,
            starts: start,
            ends: start + 4_000 + 3_000 - 1,
        });
    }
    expected.sort();
    assert_eq!(streamed, expected);
    Ok(())
}

#[tokio::test]
async fn records_too_late_for_their_window_are_dropped_and_counted() -> anyhow::Result<()> {
    let at = |date_time: i64, price: i64| Bid {
        auction: 1,
        bidder: 1,
        price,
        channel: "web".into(),
        date_time,
    };
    let sql = "SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, \
                      TUMBLE_START(date_time, INTERVAL '10' SECOND) AS starts, \
                      TUMBLE_END(date_time, INTERVAL '10' SECOND) AS ends \
               FROM bids GROUP BY bidder, TUMBLE(date_time, INTERVAL '10' SECOND)";
    let streamlet =
        streamlet(sql, "BidderTotal").watermarks(Watermarks::bounded(Duration::from_secs(1)));
    // 25 s passes the first window's end (and 1 s of disorder): the bid at 3 s is late.
    let run = TestRun::new(streamlet)
        .input(
            BIDS,
            [at(1_000, 5), at(25_000, 7), at(3_000, 100), at(26_000, 1)],
        )
        .run()
        .await?;
    let out: Outlet<BidderTotal> = Outlet::new("out");
    let totals: Vec<(i64, Option<i64>)> = run
        .output(out)
        .into_iter()
        .map(|total| (total.starts, total.total))
        .collect();
    assert_eq!(totals, [(0, Some(5)), (20_000, Some(8))]);
    assert_eq!(run.metrics().late(), 1);
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Reading {
    sensor: String,
    at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Readings {
    sensor: String,
    readings: i64,
}

#[tokio::test]
async fn a_record_without_event_time_goes_to_the_dead_letters() -> anyhow::Result<()> {
    let table = Table::from_avro("readings", &serde_json::to_value(Reading::get_schema())?)?;
    let query = Query::plan(
        "SELECT sensor, COUNT(*) AS readings FROM readings \
         GROUP BY sensor, TUMBLE(at, INTERVAL '1' MINUTE)",
        &[table],
        "Readings",
    )?;
    let reading = |sensor: &str, at| Reading {
        sensor: sensor.into(),
        at,
    };
    let readings: Inlet<Reading> = Inlet::new("readings");
    let run = TestRun::new(SqlStreamlet::new(Arc::new(query)))
        .input(
            readings,
            [
                reading("a", Some(1)),
                reading("b", None),
                reading("a", Some(2)),
            ],
        )
        .run()
        .await?;
    let out: Outlet<Readings> = Outlet::new("out");
    assert_eq!(
        run.output(out),
        [Readings {
            sensor: "a".into(),
            readings: 2
        }]
    );
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let reasons: Vec<String> = dead[0]
        .record
        .headers
        .iter()
        .map(|header| String::from_utf8_lossy(&header.value).into_owned())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("the event time of the record is null")),
        "{reasons:?}"
    );
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct BidderCount {
    bidder: i64,
    bids: i64,
    starts: i64,
}

#[tokio::test]
async fn emit_before_the_watermark_sends_early_results_that_the_final_ones_replace()
-> anyhow::Result<()> {
    let sql = "SELECT bidder, COUNT(*) AS bids, \
                      TUMBLE_START(date_time, INTERVAL '60' SECOND) AS starts \
               FROM bids GROUP BY bidder, TUMBLE(date_time, INTERVAL '60' SECOND) \
               EMIT WITH DELAY '2' SECOND BEFORE WATERMARK";
    let query = Query::plan(sql, &[bids_table()], "BidderCount")?;
    assert!(query.is_updating());
    // Ten bids (7 s of event time) a second of processing time: each minute's window
    // fills over some 9 s, and sends an early result every 2 s meanwhile.
    let mut run = TestRun::new(SqlStreamlet::new(Arc::new(query)));
    for (second, chunk) in bids().chunks(10).enumerate() {
        run = run.at(second as i64 * 1_000).input(BIDS, chunk.to_vec());
    }
    let run = run.run().await?;
    let (table, kinds) = folded(&run);
    let mut expected: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for bid in bids() {
        *expected
            .entry((bid.bidder, bid.date_time / 60_000 * 60_000))
            .or_default() += 1;
    }
    assert_eq!(table, expected);
    assert_eq!(
        kinds["+I"],
        expected.len(),
        "one first result per key and window"
    );
    assert!(
        kinds["-U"] >= expected.len() && kinds["-U"] == kinds["+U"],
        "early results, each replaced: {kinds:?}"
    );
    Ok(())
}

/// The results of `sql` over [`bids`] (ten a second of processing time) and then two late
/// bids of bidder 0, planned with `allowed_lateness`: the table its changes fold into, how
/// many of each kind came, and how many rows were too late.
async fn with_late_bids(
    sql: &str,
    allowed_lateness: Duration,
) -> anyhow::Result<(
    BTreeMap<(i64, i64), i64>,
    BTreeMap<&'static str, usize>,
    u64,
)> {
    use runnel_sql::Functions;

    let query = Query::plan_with_lateness(
        sql,
        &[bids_table()],
        "BidderCount",
        &Functions::standard(),
        allowed_lateness,
    )?;
    assert!(query.is_updating());
    let mut run = TestRun::new(SqlStreamlet::new(Arc::new(query)));
    for (second, chunk) in bids().chunks(10).enumerate() {
        run = run.at(second as i64 * 1_000).input(BIDS, chunk.to_vec());
    }
    // The watermark is at 204.3 s: the window [190 s, 200 s) has given its result, and
    // [0 s, 10 s) ended more than 100 s ago.
    let late = |date_time| Bid {
        auction: 1,
        bidder: 0,
        price: 5,
        channel: "web".into(),
        date_time,
    };
    let run = run
        .at(40_000)
        .input(BIDS, [late(195_000), late(5_000)])
        .run()
        .await?;
    let (table, kinds) = folded(&run);
    Ok((table, kinds, run.metrics().late()))
}

/// Each bidder's count by window start.
type Counts = BTreeMap<(i64, i64), i64>;
/// How many rows of each kind (`+I`, `-U`, ...) came.
type Kinds = BTreeMap<&'static str, usize>;

/// The table that the updating `BidderCount` rows of `run` fold into (each retraction must
/// take back the row it names), and how many rows of each kind came.
fn folded(run: &runnel_host::testkit::TestOutput) -> (Counts, Kinds) {
    use runnel_sql::RowKind;

    let out: Outlet<BidderCount> = Outlet::new("out");
    let mut table = Counts::new();
    let mut kinds = Kinds::new();
    for received in run.records(out) {
        let kind = RowKind::parse(received.headers.get_str(RowKind::HEADER).unwrap()).unwrap();
        *kinds.entry(kind.as_str()).or_default() += 1;
        let row = received.value;
        let key = (row.bidder, row.starts);
        if kind.is_retraction() {
            assert_eq!(table.remove(&key), Some(row.bids), "{kind:?} {key:?}");
        } else {
            assert_eq!(table.insert(key, row.bids), None, "{kind:?} {key:?}");
        }
    }
    (table, kinds)
}

#[tokio::test]
async fn rows_within_the_allowed_lateness_update_their_windows_result() -> anyhow::Result<()> {
    let sql = "SELECT bidder, COUNT(*) AS bids, \
                      TUMBLE_START(date_time, INTERVAL '10' SECOND) AS starts \
               FROM bids GROUP BY bidder, TUMBLE(date_time, INTERVAL '10' SECOND)";
    let mut expected: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for bid in bids() {
        *expected
            .entry((bid.bidder, bid.date_time / 10_000 * 10_000))
            .or_default() += 1;
    }
    // The bid at 195 s counts; the one at 5 s is past the lateness and dropped.
    *expected.get_mut(&(0, 190_000)).unwrap() += 1;
    let windows = expected.len();
    let lateness = Duration::from_secs(100);
    for sql in [
        // A late result after each late row.
        format!("{sql} EMIT WITHOUT DELAY AFTER WATERMARK"),
        // A late result a second after the first late row (of processing time).
        format!("{sql} EMIT WITH DELAY '1' SECOND AFTER WATERMARK"),
        // Without EMIT, as WITHOUT DELAY.
        sql.to_owned(),
    ] {
        let (table, kinds, late) = with_late_bids(&sql, lateness).await?;
        assert_eq!(table, expected, "{sql}");
        assert_eq!(kinds["+I"], windows, "{sql}: one first result per window");
        assert_eq!((kinds["-U"], kinds["+U"]), (1, 1), "{sql}: {kinds:?}");
        assert_eq!(late, 1, "{sql}: the bid at 5 s is counted as late");
    }
    Ok(())
}

#[tokio::test]
async fn window_table_functions_group_as_the_group_window_functions_do() -> anyhow::Result<()> {
    let out: Outlet<BidderTotal> = Outlet::new("out");
    let mut results = Vec::new();
    for sql in [
        "SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, \
                HOP_START(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS starts, \
                HOP_END(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS ends \
         FROM bids GROUP BY bidder, HOP(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
        // Flink's window table function, as its Nexmark queries are written today.
        "SELECT bidder, COUNT(*) AS bids, SUM(price) AS total, window_start AS starts, \
                window_end AS ends \
         FROM TABLE(HOP(TABLE bids, DESCRIPTOR(date_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) \
         GROUP BY bidder, window_start, window_end",
        // Its arguments by name, and an alias.
        "SELECT B.bidder, COUNT(*) AS bids, SUM(B.price) AS total, B.window_start AS starts, \
                B.window_end AS ends \
         FROM TABLE(HOP(DATA => TABLE bids, TIMECOL => DESCRIPTOR(date_time), \
                        SLIDE => INTERVAL '5' SECOND, SIZE => INTERVAL '10' SECOND)) B \
         GROUP BY B.bidder, B.window_start, B.window_end",
    ] {
        let run = TestRun::new(streamlet(sql, "BidderTotal"))
            .input(BIDS, bids())
            .run()
            .await?;
        let mut streamed = run.output(out);
        streamed.sort_by_key(|total| (total.bidder, total.starts));
        results.push(streamed);
    }
    assert_eq!(
        results[0].len(),
        3 * 43,
        "3 bidders, 43 windows of 10 s every 5 s"
    );
    assert_eq!(results[1], results[0]);
    assert_eq!(results[2], results[0]);
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Range {
    bidder: i64,
    spread: Option<f64>,
    range: Option<i64>,
    starts: i64,
}

/// The app's own aggregate: the highest value less the lowest.
fn range_function() -> runnel_sql::datafusion::expr::AggregateUDF {
    use runnel_sql::datafusion::arrow::array::{Array, ArrayRef, Int64Array};
    use runnel_sql::datafusion::arrow::datatypes::DataType;
    use runnel_sql::datafusion::common::{Result, ScalarValue};
    use runnel_sql::datafusion::expr::{Accumulator, Volatility, create_udaf};

    #[derive(Debug, Default)]
    struct Range {
        bounds: Option<(i64, i64)>,
    }
    impl Range {
        fn see(&mut self, low: i64, high: i64) {
            self.bounds = Some(match self.bounds {
                Some((least, most)) => (least.min(low), most.max(high)),
                None => (low, high),
            });
        }
    }
    impl Accumulator for Range {
        fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
            let values = values[0].as_any().downcast_ref::<Int64Array>().unwrap();
            for value in values.iter().flatten() {
                self.see(value, value);
            }
            Ok(())
        }
        fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
            let lows = states[0].as_any().downcast_ref::<Int64Array>().unwrap();
            let highs = states[1].as_any().downcast_ref::<Int64Array>().unwrap();
            for row in 0..lows.len() {
                if lows.is_valid(row) {
                    self.see(lows.value(row), highs.value(row));
                }
            }
            Ok(())
        }
        fn state(&mut self) -> Result<Vec<ScalarValue>> {
            let (low, high) = self.bounds.unzip();
            Ok(vec![ScalarValue::Int64(low), ScalarValue::Int64(high)])
        }
        fn evaluate(&mut self) -> Result<ScalarValue> {
            Ok(ScalarValue::Int64(
                self.bounds.map(|(low, high)| high - low),
            ))
        }
        fn size(&self) -> usize {
            std::mem::size_of_val(self)
        }
    }
    create_udaf(
        "price_range",
        vec![DataType::Int64],
        Arc::new(DataType::Int64),
        Volatility::Immutable,
        Arc::new(|_| Ok(Box::new(Range::default()))),
        Arc::new(vec![DataType::Int64, DataType::Int64]),
    )
}

#[tokio::test]
async fn datafusions_other_aggregates_and_the_apps_own_run_in_windows() -> anyhow::Result<()> {
    let sql = "SELECT bidder, stddev(price) AS spread, price_range(price) AS range, \
                      HOP_START(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS starts \
               FROM bids GROUP BY bidder, HOP(date_time, INTERVAL '5' SECOND, INTERVAL '10' SECOND)";
    let functions = runnel_sql::Functions::standard().with_aggregate(range_function());
    let query = Query::plan_with(sql, &[bids_table()], "Range", &functions)?;
    let run = TestRun::new(SqlStreamlet::new(Arc::new(query)))
        .input(BIDS, bids())
        .run()
        .await?;
    let out: Outlet<Range> = Outlet::new("out");
    let mut streamed = run.output(out);
    streamed.sort_by_key(|range| (range.bidder, range.starts));

    // Every window of 10 s starting every 5 s: the sample standard deviation and the range.
    let mut prices: BTreeMap<(i64, i64), Vec<i64>> = BTreeMap::new();
    for bid in bids() {
        let last = bid.date_time - bid.date_time.rem_euclid(5_000);
        for start in [last - 5_000, last] {
            prices
                .entry((bid.bidder, start))
                .or_default()
                .push(bid.price);
        }
    }
    assert_eq!(streamed.len(), prices.len());
    for (range, ((bidder, starts), prices)) in streamed.iter().zip(&prices) {
        assert_eq!((range.bidder, range.starts), (*bidder, *starts));
        let n = prices.len() as f64;
        let mean = prices.iter().sum::<i64>() as f64 / n;
        let spread = (prices
            .iter()
            .map(|p| (*p as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0))
            .sqrt();
        match range.spread {
            Some(streamed) => assert!((streamed - spread).abs() < 1e-9, "{range:?}: {spread}"),
            None => assert_eq!(prices.len(), 1, "{range:?}"),
        }
        let expected = prices.iter().max().unwrap() - prices.iter().min().unwrap();
        assert_eq!(range.range, Some(expected), "{range:?}");
    }
    Ok(())
}
