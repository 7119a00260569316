//! SQL aggregates without a window on the test kit: their results update, each record
//! saying how in its `runnel.row.kind` header, and the changes folded in order give the
//! same table as the aggregation computed over the whole input at once, also when an
//! aggregate reads another's updating results.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use apache_avro::AvroSchema;
use runnel_host::testkit::TestRun;
use runnel_sql::{Query, RowKind, SqlStreamlet, Table};
use runnel_streamlet::{Data, Inlet, Outlet};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Bid {
    auction: i64,
    price: i64,
    date_time: i64,
}

const BIDS: Inlet<Bid> = Inlet::new("bids");

/// 500 bids on 9 auctions, prices rising and falling.
fn bids() -> Vec<Bid> {
    (0..500)
        .map(|n| Bid {
            auction: n * 7 % 9,
            price: (n * 37) % 101 + n / 10,
            date_time: n * 100,
        })
        .collect()
}

/// Runs `sql` over the bids and folds its changes into a table keyed by `key`; also
/// returns how many changes of each kind came.
async fn table<T: Data + Debug + PartialEq, K: Ord + Debug>(
    sql: &str,
    record: &str,
    key: impl Fn(&T) -> K,
) -> (BTreeMap<K, T>, BTreeMap<&'static str, usize>) {
    let table =
        Table::from_avro("bids", &serde_json::to_value(Bid::get_schema()).unwrap()).unwrap();
    let query = Query::plan(sql, &[table], record).unwrap();
    assert!(query.is_updating());
    // Fifty bids a second of processing time, so the streamlet reads them in batches.
    let mut run = TestRun::new(SqlStreamlet::new(Arc::new(query)));
    for (second, chunk) in bids().chunks(50).enumerate() {
        run = run.at(second as i64 * 1_000).input(BIDS, chunk.to_vec());
    }
    let run = run.run().await.unwrap();
    let out: Outlet<T> = Outlet::new("out");
    let mut folded = BTreeMap::new();
    let mut kinds = BTreeMap::new();
    for received in run.records(out) {
        let kind = received.headers.get_str(RowKind::HEADER).expect("a kind");
        let kind = RowKind::parse(kind).expect("a known kind");
        *kinds.entry(kind.as_str()).or_default() += 1;
        let row = received.value;
        if kind.is_retraction() {
            assert_eq!(folded.remove(&key(&row)).as_ref(), Some(&row), "{kind:?}");
        } else {
            assert!(folded.insert(key(&row), row).is_none(), "{kind:?}");
        }
    }
    (folded, kinds)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct AuctionBids {
    auction: i64,
    bids: i64,
    highest: Option<i64>,
    mean: Option<f64>,
}

#[tokio::test]
async fn an_aggregate_without_a_window_updates_each_groups_result() {
    let (table, kinds) = table(
        "SELECT auction, COUNT(*) AS bids, MAX(price) AS highest, AVG(price) AS mean \
         FROM bids GROUP BY auction",
        "AuctionBids",
        |row: &AuctionBids| row.auction,
    )
    .await;
    let mut expected: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for bid in bids() {
        expected.entry(bid.auction).or_default().push(bid.price);
    }
    let expected: BTreeMap<i64, AuctionBids> = expected
        .into_iter()
        .map(|(auction, prices)| {
            let row = AuctionBids {
                auction,
                bids: prices.len() as i64,
                highest: prices.iter().copied().max(),
                mean: Some(prices.iter().sum::<i64>() as f64 / prices.len() as f64),
            };
            (auction, row)
        })
        .collect();
    assert_eq!(table, expected);
    assert_eq!(kinds["+I"], 9, "one insert per auction");
    assert!(kinds["-U"] > 9 && kinds["-U"] == kinds["+U"], "{kinds:?}");
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Spread {
    parity: i64,
    auctions: i64,
    lowest: Option<i64>,
    total: Option<i64>,
}

#[tokio::test]
async fn an_aggregate_over_updating_results_takes_back_what_they_replace() {
    // Each auction's highest price so far, and per parity of the auction the lowest of
    // those and their sum: as an auction's highest rises, the old one is taken back.
    let (table, kinds) = table(
        "SELECT auction % 2 AS parity, COUNT(*) AS auctions, MIN(highest) AS lowest, \
                SUM(highest) AS total \
         FROM (SELECT auction, MAX(price) AS highest FROM bids GROUP BY auction) h \
         GROUP BY auction % 2",
        "Spread",
        |row: &Spread| row.parity,
    )
    .await;
    let mut highest: BTreeMap<i64, i64> = BTreeMap::new();
    for bid in bids() {
        let top = highest.entry(bid.auction).or_insert(bid.price);
        *top = (*top).max(bid.price);
    }
    let mut expected: BTreeMap<i64, Spread> = BTreeMap::new();
    for (auction, top) in highest {
        let parity = auction % 2;
        let row = expected.entry(parity).or_insert(Spread {
            parity,
            auctions: 0,
            lowest: None,
            total: Some(0),
        });
        row.auctions += 1;
        row.lowest = Some(row.lowest.map_or(top, |lowest| lowest.min(top)));
        row.total = row.total.map(|total| total + top);
    }
    assert_eq!(table, expected);
    assert!(kinds["-U"] > 2, "{kinds:?}");
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Deviation {
    parity: i64,
    spread: Option<f64>,
}

#[tokio::test]
async fn datafusions_aggregates_take_back_values_over_updating_rows() {
    // The standard deviation of each auction's highest price so far, per parity: DataFusion's
    // accumulator takes the replaced highest back.
    let (table, _) = table(
        "SELECT auction % 2 AS parity, stddev_pop(highest) AS spread \
         FROM (SELECT auction, MAX(price) AS highest FROM bids GROUP BY auction) h \
         GROUP BY auction % 2",
        "Deviation",
        |row: &Deviation| row.parity,
    )
    .await;
    let mut highest: BTreeMap<i64, i64> = BTreeMap::new();
    for bid in bids() {
        let top = highest.entry(bid.auction).or_insert(bid.price);
        *top = (*top).max(bid.price);
    }
    for parity in [0, 1] {
        let tops: Vec<f64> = highest
            .iter()
            .filter(|(auction, _)| *auction % 2 == parity)
            .map(|(_, top)| *top as f64)
            .collect();
        let mean = tops.iter().sum::<f64>() / tops.len() as f64;
        let spread =
            (tops.iter().map(|top| (top - mean).powi(2)).sum::<f64>() / tops.len() as f64).sqrt();
        let streamed = table[&parity].spread.unwrap();
        assert!(
            (streamed - spread).abs() < 1e-6,
            "parity {parity}: {streamed} against {spread}"
        );
    }
}
