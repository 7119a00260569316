//! Nexmark q0, q1 and q2 as SQL streamlets against the hand-written streamlets: the work
//! each does per event, the same bids in, the same results out.
//!
//! ```text
//! cargo bench -p runnel-nexmark --bench sql -- [ROUNDS] [BIDS]
//! ```
//!
//! The bids are the reference generator's, Avro encoded as the topic holds them. Per event,
//! the hand-written side does what its `Processor` does (decode a `Bid` with the port's
//! codec, compute, encode the result), and the SQL side what its streamlet does (the query
//! of the blueprint `crates/nexmark/blueprints/<q>-sql.toml`, planned as the app plans it,
//! over batches of 1,024 records: decode into Arrow columns, filter and compute, encode the
//! results). The host's work around them (reading the log, committing, sending) is the same
//! for both and not in these figures. The two sides alternate, one round each at a time;
//! the medians and the ratio of the medians are printed.

use std::time::Instant;

use runnel::prelude::*;
use runnel::sql::{Query, Table};
use runnel_blueprint::descriptor::Format;
use runnel_codec::Codec;
use runnel_nexmark::generator::{Generator, GeneratorConfig};
use runnel_nexmark::model::Bid;
use runnel_nexmark::queries::{q1, q2};

/// Records the SQL streamlet takes into one batch at most.
const BATCH: usize = 1024;

fn main() {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| !argument.starts_with('-'))
        .collect();
    let rounds: usize = arguments.first().map_or(11, |n| n.parse().expect("ROUNDS"));
    let count: u64 = arguments
        .get(1)
        .map_or(200_000, |n| n.parse().expect("BIDS"));
    let bids = Generator::new(GeneratorConfig::default())
        .expect("the default config")
        .streams(count * 50 / 46)
        .bids;
    let codec = Codec::<Bid>::new(Format::Avro);
    let encoded: Vec<Vec<u8>> = bids.iter().map(|bid| codec.encode(bid).unwrap()).collect();
    println!(
        "{} bids, {rounds} rounds; ns per event, medians",
        encoded.len()
    );
    println!("| query | hand-written | SQL | SQL over hand-written |");
    println!("|---|---|---|---|");
    for query in ["q0", "q1", "q2"] {
        let sql = planned(query);
        let mut hand = Vec::new();
        let mut planned = Vec::new();
        for _ in 0..rounds {
            hand.push(time(&encoded, |records| hand_written(query, records)));
            planned.push(time(&encoded, |records| in_sql(&sql, records)));
        }
        let (hand, planned) = (median(hand), median(planned));
        println!(
            "| {query} | {hand:.0} | {planned:.0} | {:.2}x |",
            planned / hand
        );
    }
}

/// The query of `<query>-sql.toml`, planned over the bids' schema.
fn planned(query: &str) -> Query {
    let path = format!("{}/blueprints/{query}-sql.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the blueprint");
    let blueprint = runnel_blueprint::parse(std::path::Path::new(&path), &text)
        .blueprint
        .expect("a valid blueprint");
    let sql = blueprint
        .streamlet(query)
        .and_then(|streamlet| streamlet.sql.clone())
        .expect("the SQL streamlet");
    let schema = serde_json::to_value(Bid::get_schema()).unwrap();
    let bids = Table::from_avro("bids", &schema).unwrap();
    Query::plan(
        &sql.query,
        &[bids],
        sql.record_name.as_deref().unwrap_or("Out"),
    )
    .unwrap()
}

/// What the hand-written streamlet does per record; returns the results' total length.
fn hand_written(query: &str, records: &[Vec<u8>]) -> usize {
    let bids = Codec::<Bid>::new(Format::Avro);
    let prices = Codec::<q2::AuctionPrice>::new(Format::Avro);
    let mut written = 0;
    for record in records {
        let bid = bids.decode(record, None).unwrap();
        written += match query {
            "q0" => bids.encode_bytes(&bid).unwrap().len(),
            "q1" => bids
                .encode_bytes(&Bid {
                    price: q1::dollars_to_euros(bid.price),
                    ..bid
                })
                .unwrap()
                .len(),
            _ if bid.auction % q2::AUCTION_SKIP == 0 => prices
                .encode_bytes(&q2::AuctionPrice {
                    auction: bid.auction,
                    price: bid.price,
                })
                .unwrap()
                .len(),
            _ => 0,
        };
    }
    written
}

/// What the SQL streamlet does, batch by batch; returns the results' total length.
fn in_sql(query: &Query, records: &[Vec<u8>]) -> usize {
    let mut written = 0;
    for chunk in records.chunks(BATCH) {
        let slices: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        let processed = query.process("bids", &slices);
        assert!(processed.rejected.is_empty());
        written += processed
            .results
            .iter()
            .map(|(_, bytes)| bytes.len())
            .sum::<usize>();
    }
    written
}

/// Nanoseconds per record of one pass.
fn time(records: &[Vec<u8>], pass: impl Fn(&[Vec<u8>]) -> usize) -> f64 {
    let start = Instant::now();
    std::hint::black_box(pass(records));
    start.elapsed().as_nanos() as f64 / records.len() as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
