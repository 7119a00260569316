//! SQL streamlets that join two inlets on the test kit: a regular inner join (with the
//! join condition in `ON` or in `WHERE`, and filters on either side), a join with a
//! condition beyond its keys, a join of two group windows, and outer joins with and
//! without a time bound; each checked against the same join computed over the whole input
//! at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use apache_avro::AvroSchema;
use runnel_host::testkit::TestRun;
use runnel_sql::datafusion::arrow::array::{Array, BooleanArray, Int64Array};
use runnel_sql::datafusion::arrow::datatypes::DataType;
use runnel_sql::datafusion::expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use runnel_sql::{Functions, Query, RowKind, SqlStreamlet, Table};
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::{Inlet, Outlet};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Person {
    id: i64,
    name: String,
    state: String,
    date_time: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Auction {
    id: i64,
    seller: i64,
    category: i64,
    reserve: i64,
    date_time: i64,
}

const PERSONS: Inlet<Person> = Inlet::new("persons");
const AUCTIONS: Inlet<Auction> = Inlet::new("auctions");

const STATES: [&str; 4] = ["OR", "ID", "CA", "NY"];

/// 60 persons registering one every 2 s, and 300 auctions, one every 0.5 s, by sellers up
/// to 5 persons ahead of the last registered (so some auctions come before their seller).
fn persons() -> Vec<Person> {
    (0..60)
        .map(|id| Person {
            id,
            name: format!("p{id}"),
            state: STATES[(id % 4) as usize].into(),
            date_time: id * 2_000,
        })
        .collect()
}

fn auctions() -> Vec<Auction> {
    (0..300)
        .map(|n| Auction {
            id: 1_000 + n,
            seller: (n / 4 + n % 5).min(59),
            category: n % 3,
            reserve: n * 10,
            date_time: n * 500,
        })
        .collect()
}

fn streamlet(sql: &str, record: &str) -> SqlStreamlet {
    let table = |name, schema: apache_avro::Schema| {
        Table::from_avro(name, &serde_json::to_value(schema).unwrap()).unwrap()
    };
    let tables = [
        table("persons", Person::get_schema()),
        table("auctions", Auction::get_schema()),
    ];
    let query = Query::plan(sql, &tables, record).unwrap_or_else(|error| panic!("{error}"));
    assert!(query.is_stateful());
    assert_eq!(query.inputs().len(), 2);
    SqlStreamlet::new(Arc::new(query))
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct Suggestion {
    name: String,
    state: String,
    id: i64,
}

/// Nexmark q3's shape: who sells in category 1 in Oregon, Idaho or California.
fn expected_suggestions() -> BTreeSet<Suggestion> {
    let mut expected = BTreeSet::new();
    for auction in auctions().iter().filter(|auction| auction.category == 1) {
        for person in persons()
            .iter()
            .filter(|person| person.id == auction.seller)
        {
            if ["OR", "ID", "CA"].contains(&person.state.as_str()) {
                expected.insert(Suggestion {
                    name: person.name.clone(),
                    state: person.state.clone(),
                    id: auction.id,
                });
            }
        }
    }
    expected
}

async fn suggestions(sql: &str) -> anyhow::Result<Vec<Suggestion>> {
    joined(sql, "Suggestion").await
}

#[tokio::test]
async fn an_inner_join_matches_each_pair_once_whichever_comes_first() -> anyhow::Result<()> {
    let joined = suggestions(
        "SELECT P.name, P.state, A.id \
         FROM auctions AS A INNER JOIN persons AS P ON A.seller = P.id \
         WHERE A.category = 1 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')",
    )
    .await?;
    let expected = expected_suggestions();
    assert!(expected.len() > 40, "{}", expected.len());
    assert_eq!(joined.len(), expected.len(), "each pair once");
    assert_eq!(joined.into_iter().collect::<BTreeSet<_>>(), expected);
    Ok(())
}

#[tokio::test]
async fn a_join_written_in_where_joins_by_its_equality() -> anyhow::Result<()> {
    let joined = suggestions(
        "SELECT P.name, P.state, A.id FROM auctions A, persons P \
         WHERE A.seller = P.id AND A.category = 1 AND P.state IN ('OR', 'ID', 'CA')",
    )
    .await?;
    assert_eq!(
        joined.into_iter().collect::<BTreeSet<_>>(),
        expected_suggestions()
    );
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct Early {
    id: i64,
    auction: i64,
}

#[tokio::test]
async fn a_condition_beyond_the_keys_filters_the_pairs() -> anyhow::Result<()> {
    // Auctions opened within 3 s after their seller registered.
    let run = TestRun::new(streamlet(
        "SELECT P.id, A.id AS auction FROM persons P JOIN auctions A \
         ON P.id = A.seller AND A.date_time BETWEEN P.date_time AND P.date_time + 3000",
        "Early",
    ))
    .input(PERSONS, persons())
    .input(AUCTIONS, auctions())
    .run()
    .await?;
    let out: Outlet<Early> = Outlet::new("out");
    let joined: BTreeSet<Early> = run.output(out).into_iter().collect();
    let mut expected = BTreeSet::new();
    for person in persons() {
        for auction in auctions() {
            let within = (person.date_time..=person.date_time + 3_000).contains(&auction.date_time);
            if auction.seller == person.id && within {
                expected.insert(Early {
                    id: person.id,
                    auction: auction.id,
                });
            }
        }
    }
    assert!(expected.len() > 10, "{}", expected.len());
    assert_eq!(joined, expected);
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct NewSeller {
    id: i64,
    name: String,
    starttime: i64,
}

#[tokio::test]
async fn two_group_windows_join_on_their_bounds() -> anyhow::Result<()> {
    // Nexmark q8 (Flink's): persons who opened an auction in the 10 s they registered in.
    let sql = "SELECT P.id, P.name, P.starttime
        FROM (
          SELECT P.id, P.name,
                 TUMBLE_START(P.date_time, INTERVAL '10' SECOND) AS starttime,
                 TUMBLE_END(P.date_time, INTERVAL '10' SECOND) AS endtime
          FROM persons P
          GROUP BY P.id, P.name, TUMBLE(P.date_time, INTERVAL '10' SECOND)
        ) P
        JOIN (
          SELECT A.seller,
                 TUMBLE_START(A.date_time, INTERVAL '10' SECOND) AS starttime,
                 TUMBLE_END(A.date_time, INTERVAL '10' SECOND) AS endtime
          FROM auctions A
          GROUP BY A.seller, TUMBLE(A.date_time, INTERVAL '10' SECOND)
        ) A
        ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime";
    let run = TestRun::new(streamlet(sql, "NewSeller"))
        .input(PERSONS, persons())
        .input(AUCTIONS, auctions())
        .run()
        .await?;
    let out: Outlet<NewSeller> = Outlet::new("out");
    let joined = run.output(out);
    let mut expected = BTreeSet::new();
    for person in persons() {
        let window = person.date_time / 10_000 * 10_000;
        let opened = auctions().iter().any(|auction| {
            auction.seller == person.id && auction.date_time / 10_000 * 10_000 == window
        });
        if opened {
            expected.insert(NewSeller {
                id: person.id,
                name: person.name.clone(),
                starttime: window,
            });
        }
    }
    assert!(expected.len() > 10, "{}", expected.len());
    assert_eq!(
        joined.len(),
        expected.len(),
        "one row per person and window"
    );
    assert_eq!(joined.into_iter().collect::<BTreeSet<_>>(), expected);
    Ok(())
}

/// Persons and the auctions they opened within 3 s of registering, as pairs of ids: what
/// an outer join over them gives, computed over the whole input at once. `keep` says which
/// side's rows that match nothing are kept, with `None` for the other side.
fn opened_within_3_s(keep: [bool; 2]) -> BTreeSet<(Option<i64>, Option<i64>)> {
    let within = |person: &Person, auction: &Auction| {
        auction.seller == person.id
            && (person.date_time..=person.date_time + 3_000).contains(&auction.date_time)
    };
    let mut expected = BTreeSet::new();
    for person in persons() {
        for auction in auctions().iter().filter(|auction| within(&person, auction)) {
            expected.insert((Some(person.id), Some(auction.id)));
        }
        if keep[0] && !auctions().iter().any(|auction| within(&person, auction)) {
            expected.insert((Some(person.id), None));
        }
    }
    for auction in auctions() {
        if keep[1] && !persons().iter().any(|person| within(person, &auction)) {
            expected.insert((None, Some(auction.id)));
        }
    }
    expected
}

/// The query with `join` between persons and auctions, the auction's id named `auction`.
fn outer_join(join: &str) -> String {
    format!(
        "SELECT P.id, A.id AS auction FROM persons P {join} auctions A \
         ON P.id = A.seller AND A.date_time BETWEEN P.date_time AND P.date_time + 3000"
    )
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct PersonOrNot {
    id: i64,
    auction: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct AuctionOrNot {
    id: Option<i64>,
    auction: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, AvroSchema)]
struct EitherOrBoth {
    id: Option<i64>,
    auction: Option<i64>,
}

/// Runs `sql` over all persons and auctions, reading its results as `T`.
async fn joined<T>(sql: &str, record: &str) -> anyhow::Result<Vec<T>>
where
    T: for<'de> Deserialize<'de> + Serialize + AvroSchema + Clone + Send + Sync + 'static,
{
    let run = TestRun::new(streamlet(sql, record))
        .input(PERSONS, persons())
        .input(AUCTIONS, auctions())
        .run()
        .await?;
    let out: Outlet<T> = Outlet::new("out");
    Ok(run.output(out))
}

#[tokio::test]
async fn a_left_join_emits_each_unmatched_row_with_nulls_once_its_time_has_passed()
-> anyhow::Result<()> {
    let rows: Vec<PersonOrNot> = joined(&outer_join("LEFT JOIN"), "PersonOrNot").await?;
    let got: Vec<_> = rows
        .into_iter()
        .map(|row| (Some(row.id), row.auction))
        .collect();
    let expected = opened_within_3_s([true, false]);
    let padded = expected.iter().filter(|(_, auction)| auction.is_none());
    assert!(padded.count() > 10, "{expected:?}");
    assert_eq!(got.len(), expected.len(), "each row once: {got:?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected);
    Ok(())
}

#[tokio::test]
async fn a_right_join_keeps_the_right_sides_unmatched_rows() -> anyhow::Result<()> {
    let rows: Vec<AuctionOrNot> = joined(&outer_join("RIGHT JOIN"), "AuctionOrNot").await?;
    let got: Vec<_> = rows
        .into_iter()
        .map(|row| (row.id, Some(row.auction)))
        .collect();
    let expected = opened_within_3_s([false, true]);
    assert!(expected.iter().any(|(id, _)| id.is_none()), "{expected:?}");
    assert_eq!(got.len(), expected.len(), "each row once: {got:?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected);
    Ok(())
}

#[tokio::test]
async fn a_full_join_keeps_both_sides_unmatched_rows() -> anyhow::Result<()> {
    let rows: Vec<EitherOrBoth> = joined(&outer_join("FULL JOIN"), "EitherOrBoth").await?;
    let got: Vec<_> = rows.into_iter().map(|row| (row.id, row.auction)).collect();
    let expected = opened_within_3_s([true, true]);
    assert_eq!(got.len(), expected.len(), "each row once: {got:?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected);
    Ok(())
}

/// The persons but every seventh (whose auctions find no seller), and the auctions but
/// those of every eleventh person (who stay without one).
fn some_persons_and_auctions() -> (Vec<Person>, Vec<Auction>) {
    let persons = persons().into_iter().filter(|person| person.id % 7 != 3);
    let auctions = auctions()
        .into_iter()
        .filter(|auction| auction.seller % 11 != 5);
    (persons.collect(), auctions.collect())
}

/// Persons and the auctions they opened, as pairs of ids, by an outer join without a time
/// bound computed over the whole input at once; `keep` as in [`opened_within_3_s`].
fn opened(keep: [bool; 2]) -> Pairs {
    let (persons, auctions) = some_persons_and_auctions();
    let mut expected = BTreeSet::new();
    for person in &persons {
        let theirs: Vec<_> = auctions
            .iter()
            .filter(|auction| auction.seller == person.id)
            .collect();
        for auction in &theirs {
            expected.insert((Some(person.id), Some(auction.id)));
        }
        if keep[0] && theirs.is_empty() {
            expected.insert((Some(person.id), None));
        }
    }
    for auction in &auctions {
        if keep[1] && !persons.iter().any(|person| person.id == auction.seller) {
            expected.insert((None, Some(auction.id)));
        }
    }
    expected
}

/// Pairs of a person's and an auction's id, either missing where an outer join pads.
type Pairs = BTreeSet<(Option<i64>, Option<i64>)>;

/// Runs `sql` over [`some_persons_and_auctions`], both arriving in batches by their time,
/// two seconds' worth a second, and folds its changes, each as its `runnel.row.kind`
/// header says, into the table they make, each row as `ids` reads it; also returns how
/// many changes of each kind came.
async fn folded<T, K: Ord + std::fmt::Debug>(
    sql: &str,
    record: &str,
    ids: impl Fn(T) -> K,
) -> anyhow::Result<(BTreeSet<K>, BTreeMap<&'static str, usize>)>
where
    T: for<'de> Deserialize<'de> + Serialize + AvroSchema + Clone + Send + Sync + 'static,
{
    let (persons, auctions) = some_persons_and_auctions();
    let mut run = TestRun::new(streamlet(sql, record));
    for second in 0..80 {
        let due = |time: i64| (second * 2_000..(second + 1) * 2_000).contains(&time);
        let persons = persons.iter().filter(|person| due(person.date_time));
        let auctions = auctions.iter().filter(|auction| due(auction.date_time));
        run = run
            .at(second * 1_000)
            .input(PERSONS, persons.cloned())
            .input(AUCTIONS, auctions.cloned());
    }
    let run = run.run().await?;
    let out: Outlet<T> = Outlet::new("out");
    let mut table = BTreeSet::new();
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    for received in run.records(out) {
        let kind = received.headers.get_str(RowKind::HEADER).expect("a kind");
        let kind = RowKind::parse(kind).expect("a known kind");
        *kinds.entry(kind.as_str()).or_default() += 1;
        let row = ids(received.value);
        if kind.is_retraction() {
            assert!(
                table.remove(&row),
                "{kind:?} of a row not in the table: {row:?}"
            );
        } else {
            let described = format!("{kind:?} of a row in the table: {row:?}");
            assert!(table.insert(row), "{described}");
        }
    }
    Ok((table, kinds))
}

/// Persons and auctions joined by seller with `join`, without a time bound: `persons P
/// {join} auctions A`, or with `auctions_first`, `auctions A {join} persons P`.
fn outer_join_for_good(join: &str, auctions_first: bool) -> String {
    let from = match auctions_first {
        true => format!("auctions A {join} persons P"),
        false => format!("persons P {join} auctions A"),
    };
    format!("SELECT P.id, A.id AS auction FROM {from} ON P.id = A.seller")
}

#[tokio::test]
async fn a_left_join_without_a_time_bound_takes_back_a_padded_row_when_it_matches()
-> anyhow::Result<()> {
    // Most auctions come before their seller registers: each is padded, then taken back.
    let (table, kinds) = folded(
        &outer_join_for_good("LEFT JOIN", true),
        "AuctionOrNot",
        |row: AuctionOrNot| (row.id, Some(row.auction)),
    )
    .await?;
    let expected = opened([false, true]);
    assert!(expected.iter().any(|(id, _)| id.is_none()), "{expected:?}");
    assert_eq!(table, expected);
    assert!(kinds["-D"] > 100, "{kinds:?}");
    assert_eq!(kinds["+I"] - kinds["-D"], expected.len(), "{kinds:?}");
    Ok(())
}

#[tokio::test]
async fn a_right_join_without_a_time_bound_keeps_the_right_sides_rows() -> anyhow::Result<()> {
    let (table, kinds) = folded(
        &outer_join_for_good("RIGHT JOIN", false),
        "AuctionOrNot",
        |row: AuctionOrNot| (row.id, Some(row.auction)),
    )
    .await?;
    assert_eq!(table, opened([false, true]));
    assert!(kinds["-D"] > 100, "{kinds:?}");
    // And the other way round: a person without auctions so far is padded.
    let (table, _) = folded(
        &outer_join_for_good("RIGHT JOIN", true),
        "PersonOrNot",
        |row: PersonOrNot| (Some(row.id), row.auction),
    )
    .await?;
    let expected = opened([true, false]);
    assert!(expected.contains(&(Some(5), None)), "{expected:?}");
    assert_eq!(table, expected);
    Ok(())
}

#[tokio::test]
async fn a_full_join_without_a_time_bound_settles_on_the_whole_inputs_join() -> anyhow::Result<()> {
    let (table, kinds) = folded(
        &outer_join_for_good("FULL JOIN", false),
        "EitherOrBoth",
        |row: EitherOrBoth| (row.id, row.auction),
    )
    .await?;
    assert_eq!(table, opened([true, true]));
    assert!(kinds["-D"] > 10, "{kinds:?}");
    Ok(())
}

#[tokio::test]
async fn an_inner_join_without_a_time_bound_does_not_update() -> anyhow::Result<()> {
    let sql = outer_join_for_good("JOIN", false);
    let table = |name, schema: apache_avro::Schema| {
        Table::from_avro(name, &serde_json::to_value(schema).unwrap()).unwrap()
    };
    let tables = [
        table("persons", Person::get_schema()),
        table("auctions", Auction::get_schema()),
    ];
    assert!(!Query::plan(&sql, &tables, "EitherOrBoth")?.is_updating());
    assert!(
        Query::plan(&outer_join("LEFT JOIN"), &tables, "PersonOrNot").map(|q| !q.is_updating())?
    );
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct PersonCategory {
    id: i64,
    category: Option<i64>,
    n: Option<i64>,
}

#[tokio::test]
async fn a_join_of_updating_rows_takes_back_the_pairs_of_what_they_replace() -> anyhow::Result<()> {
    // Each person with the categories 0 and 1 they opened just one auction in: as a
    // count rises, its pair is taken back; a person left without a pair (none yet, or
    // the last one's count rose) is padded, taken back when one comes.
    let sql = "SELECT P.id, C.category, C.n FROM persons P LEFT JOIN \
               (SELECT seller, category, COUNT(*) AS n FROM auctions GROUP BY seller, category) C \
               ON P.id = C.seller AND C.n < 2 AND C.category < 2";
    let (table, kinds) = folded(sql, "PersonCategory", |row: PersonCategory| {
        (row.id, row.category, row.n)
    })
    .await?;
    let (persons, auctions) = some_persons_and_auctions();
    let mut expected = BTreeSet::new();
    for person in &persons {
        let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
        for auction in auctions
            .iter()
            .filter(|auction| auction.seller == person.id)
        {
            *counts.entry(auction.category).or_default() += 1;
        }
        counts.retain(|category, n| *n < 2 && *category < 2);
        for (category, n) in &counts {
            expected.insert((person.id, Some(*category), Some(*n)));
        }
        if counts.is_empty() {
            expected.insert((person.id, None, None));
        }
    }
    assert!(expected.iter().any(|(_, category, _)| category.is_none()));
    assert_eq!(table, expected);
    assert!(kinds["-D"] > 15, "{kinds:?}");
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct CategoryOrPerson {
    id: Option<i64>,
    seller: Option<i64>,
    category: Option<i64>,
    n: Option<i64>,
}

#[tokio::test]
async fn a_full_join_of_updating_rows_pads_both_sides_as_they_stand() -> anyhow::Result<()> {
    // As above, persons in New York left out, and each count that pairs with no person
    // (too high, of category 2, or of a seller in New York or never registered) padded.
    // The updating side on the left, this time.
    let sql = "SELECT P.id, C.seller, C.category, C.n FROM \
               (SELECT seller, category, COUNT(*) AS n FROM auctions GROUP BY seller, category) C \
               FULL JOIN persons P \
               ON P.id = C.seller AND C.n < 2 AND C.category < 2 AND P.state <> 'NY'";
    let (table, kinds) = folded(sql, "CategoryOrPerson", |row: CategoryOrPerson| {
        (row.id, row.seller, row.category, row.n)
    })
    .await?;
    let (persons, auctions) = some_persons_and_auctions();
    let mut counts: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for auction in &auctions {
        *counts
            .entry((auction.seller, auction.category))
            .or_default() += 1;
    }
    let pairs = |seller: i64, category: i64, n: i64| {
        let seller = persons.iter().find(|person| person.id == seller);
        n < 2 && category < 2 && seller.is_some_and(|person| person.state != "NY")
    };
    let mut expected = BTreeSet::new();
    for (&(seller, category), &n) in &counts {
        let person = pairs(seller, category, n).then_some(seller);
        expected.insert((person, Some(seller), Some(category), Some(n)));
    }
    for person in &persons {
        let paired = counts
            .iter()
            .any(|(&(seller, category), &n)| seller == person.id && pairs(seller, category, n));
        if !paired {
            expected.insert((Some(person.id), None, None, None));
        }
    }
    assert!(expected.iter().any(|(id, ..)| id.is_none()));
    assert_eq!(table, expected);
    assert!(kinds["-D"] > 50, "{kinds:?}");
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct SellerOrNot {
    seller: i64,
    n: i64,
    id: Option<i64>,
}

#[tokio::test]
async fn an_outer_join_pads_updating_rows_and_takes_the_padding_back_with_them()
-> anyhow::Result<()> {
    // Every seller's count of auctions, with the seller where registered: a count of an
    // unregistered seller is padded, and replaced padded as it rises.
    let sql = "SELECT C.seller, C.n, P.id FROM \
               (SELECT seller, COUNT(*) AS n FROM auctions GROUP BY seller) C \
               LEFT JOIN persons P ON C.seller = P.id";
    let (table, kinds) = folded(sql, "SellerOrNot", |row: SellerOrNot| {
        (row.seller, row.n, row.id)
    })
    .await?;
    let (persons, auctions) = some_persons_and_auctions();
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for auction in &auctions {
        *counts.entry(auction.seller).or_default() += 1;
    }
    let registered = |seller: i64| persons.iter().any(|person| person.id == seller);
    let expected: BTreeSet<_> = counts
        .into_iter()
        .map(|(seller, n)| (seller, n, registered(seller).then_some(seller)))
        .collect();
    assert!(expected.iter().any(|(_, _, id)| id.is_none()));
    assert_eq!(table, expected);
    assert!(kinds["-D"] > 100, "{kinds:?}");
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct PersonCount {
    id: i64,
    n: i64,
}

#[tokio::test]
async fn a_join_of_a_windows_early_results_takes_back_the_results_they_replace()
-> anyhow::Result<()> {
    // Each seller's count of auctions in one long window, sent after every auction (EMIT),
    // joined to the seller: each new count takes the pair of the one before back.
    let sql = "SELECT P.id, C.n FROM persons P JOIN \
               (SELECT seller, COUNT(*) AS n FROM auctions \
                GROUP BY seller, TUMBLE(date_time, INTERVAL '1000' SECOND)) C \
               ON P.id = C.seller \
               EMIT WITHOUT DELAY BEFORE WATERMARK";
    let (table, kinds) = folded(sql, "PersonCount", |row: PersonCount| (row.id, row.n)).await?;
    let (persons, auctions) = some_persons_and_auctions();
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for auction in &auctions {
        *counts.entry(auction.seller).or_default() += 1;
    }
    let registered = |seller: &i64| persons.iter().any(|person| person.id == *seller);
    let expected: BTreeSet<_> = counts
        .into_iter()
        .filter(|(seller, _)| registered(seller))
        .collect();
    assert!(expected.iter().any(|(_, n)| *n > 2), "{expected:?}");
    assert_eq!(table, expected);
    assert!(kinds["-D"] > 50, "{kinds:?}");
    Ok(())
}

/// How far ahead in event time the persons were read of the auctions, as the query's own
/// filters saw each input's rows go by.
#[derive(Debug, Default)]
struct ReadAhead {
    persons: (usize, i64),
    auctions: (usize, i64),
    widest: i64,
}

/// `name(BIGINT) -> BOOLEAN`, always true, noting each row's time in `read`.
fn noting(name: &str, read: Arc<Mutex<ReadAhead>>, persons: bool) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Int64],
        DataType::Boolean,
        Volatility::Immutable,
        Arc::new(move |arguments: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(arguments)?;
            let times = arrays[0].as_any().downcast_ref::<Int64Array>().unwrap();
            let latest = times.iter().flatten().max().unwrap_or(i64::MIN);
            let mut read = read.lock().unwrap();
            let side = if persons {
                &mut read.persons
            } else {
                &mut read.auctions
            };
            side.0 += times.len();
            side.1 = side.1.max(latest);
            read.widest = read.widest.max(read.persons.1 - read.auctions.1);
            Ok(ColumnarValue::Array(Arc::new(BooleanArray::from(
                vec![true; times.len()],
            ))))
        }),
    )
}

/// How far ahead in event time a join read its persons of its auctions, with `watermarks`,
/// over a backlog of a person a second for 4,000 s and four auctions a second.
async fn persons_read_ahead(watermarks: Watermarks) -> anyhow::Result<i64> {
    let persons: Vec<Person> = (0..4_000)
        .map(|id| Person {
            id,
            name: String::new(),
            state: String::new(),
            date_time: id * 1_000,
        })
        .collect();
    let auctions: Vec<Auction> = (0..16_000)
        .map(|n| Auction {
            id: n,
            seller: n / 4,
            category: 0,
            reserve: 0,
            date_time: n * 250,
        })
        .collect();
    let read = Arc::new(Mutex::new(ReadAhead::default()));
    let functions = Functions::standard()
        .with_scalar(noting("person_read", read.clone(), true))
        .with_scalar(noting("auction_read", read.clone(), false));
    let tables = [
        Table::from_avro("persons", &serde_json::to_value(Person::get_schema())?)?,
        Table::from_avro("auctions", &serde_json::to_value(Auction::get_schema())?)?,
    ];
    let query = Query::plan_with(
        "SELECT P.id, A.id AS auction FROM persons P JOIN auctions A \
         ON P.id = A.seller AND A.date_time BETWEEN P.date_time AND P.date_time + 3000 \
         WHERE person_read(P.date_time) AND auction_read(A.date_time)",
        &tables,
        "Early",
        &functions,
    )?;
    let run = TestRun::new(SqlStreamlet::new(Arc::new(query)).watermarks(watermarks))
        .input(PERSONS, persons)
        .input(AUCTIONS, auctions)
        .run()
        .await?;
    let out: Outlet<Early> = Outlet::new("out");
    assert_eq!(
        run.output(out).len(),
        16_000,
        "every auction finds its seller"
    );
    let read = read.lock().unwrap();
    // Each filter ran on its own input, before the join.
    assert_eq!((read.persons.0, read.auctions.0), (4_000, 16_000));
    Ok(read.widest)
}

#[tokio::test]
async fn a_time_bounded_join_reads_its_inputs_in_step_over_a_backlog() -> anyhow::Result<()> {
    let widest = persons_read_ahead(Watermarks::default()).await?;
    // Within the drift (10 s) and one batch of persons (at most 1,024, one a second).
    assert!(
        widest <= 10_000 + 1_024_000,
        "the persons were read {} s ahead of the auctions",
        widest / 1_000
    );
    // Unaligned, each input is read as it comes: the persons, four times sparser, run ahead.
    let widest = persons_read_ahead(Watermarks::default().unaligned()).await?;
    assert!(
        widest > 2_000_000,
        "unaligned, the persons were read only {} s ahead of the auctions",
        widest / 1_000
    );
    Ok(())
}
