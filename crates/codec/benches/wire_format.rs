//! What the Confluent wire format costs per record: encoding and decoding a sensor-data
//! `Metric` as plain Avro (the value alone, as Runnel writes without a schema registry)
//! against the wire format (the magic byte and a 4-byte schema id first, as with one), and
//! decoding a value written with an older schema, resolved to the reader's: by the codec,
//! and by apache-avro's resolution (what the codec did before, for comparison).
//!
//! Each round encodes or decodes `records` values (distinct device ids and numbers, so no
//! branch is always taken) and takes the time per record; the table shows the median of the
//! rounds and the ratio to the plain row of the same operation. Every variant runs in every
//! round, one after another (backwards in every other round), so the machine's noise falls
//! on all of them alike.
//!
//! `cargo bench -p runnel-codec --bench wire_format -- [rounds] [records]` (default 11
//! rounds of 200,000 records).

use std::hint::black_box;
use std::time::Instant;

use apache_avro::AvroSchema;
use runnel_blueprint::descriptor::Format;
use runnel_codec::{Codec, schema_descriptor};
use serde::{Deserialize, Serialize};

/// The sensor-data example's metric, as written today.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(name = "Metric")]
#[serde(rename = "Metric")]
struct Metric {
    device_id: String,
    timestamp: i64,
    sequence: i64,
    name: String,
    value: f64,
}

/// The same metric as an earlier version wrote it: no sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(name = "Metric")]
#[serde(rename = "Metric")]
struct OlderMetric {
    device_id: String,
    timestamp: i64,
    name: String,
    value: f64,
}

/// `Metric` with a default for `sequence`, so it reads the older records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(name = "Metric")]
#[serde(rename = "Metric")]
struct EvolvedMetric {
    device_id: String,
    timestamp: i64,
    #[avro(default = "0")]
    #[serde(default)]
    sequence: i64,
    name: String,
    value: f64,
}

fn metric(index: usize) -> Metric {
    Metric {
        device_id: format!("c75cb448-df0e-4692-8e06-0321b7{index:06}"),
        timestamp: 1_700_000_000_000 + index as i64,
        sequence: index as i64,
        name: ["power", "rotor-speed", "wind-speed"][index % 3].to_owned(),
        value: 1000.0 + index as f64 / 7.0,
    }
}

/// Nanoseconds per record of `work` over `records` records.
fn per_record(records: usize, mut work: impl FnMut(usize)) -> f64 {
    let started = Instant::now();
    for index in 0..records {
        work(index);
    }
    started.elapsed().as_nanos() as f64 / records as f64
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let arguments: Vec<String> = std::env::args()
        .skip(1)
        .filter(|argument| !argument.starts_with("--"))
        .collect();
    let rounds: usize = arguments.first().map_or(11, |a| a.parse().expect("rounds"));
    let records: usize = arguments
        .get(1)
        .map_or(200_000, |a| a.parse().expect("records"));

    let values: Vec<Metric> = (0..records).map(metric).collect();
    let plain = Codec::<Metric>::new(Format::Avro);
    let framed = Codec::<Metric>::new(Format::Avro).with_registry_id(7);
    let plain_bytes: Vec<_> = values
        .iter()
        .map(|v| plain.encode_bytes(v).unwrap())
        .collect();
    let framed_bytes: Vec<_> = values
        .iter()
        .map(|v| framed.encode_bytes(v).unwrap())
        .collect();
    let metric_schema = schema_descriptor::<Metric>(Format::Avro).definition;
    let mut framed_reader = Codec::<Metric>::new(Format::Avro).framed_by_registry();
    framed_reader.add_registry_schema(7, &metric_schema);

    // Older records, read by the evolved type: resolved through apache-avro's resolution.
    let older = Codec::<OlderMetric>::new(Format::Avro);
    let older_values: Vec<OlderMetric> = values
        .iter()
        .map(|v| OlderMetric {
            device_id: v.device_id.clone(),
            timestamp: v.timestamp,
            name: v.name.clone(),
            value: v.value,
        })
        .collect();
    let older_schema = schema_descriptor::<OlderMetric>(Format::Avro).definition;
    let older_plain: Vec<_> = older_values
        .iter()
        .map(|v| older.encode_bytes(v).unwrap())
        .collect();
    let older_framed_writer = Codec::<OlderMetric>::new(Format::Avro).with_registry_id(3);
    let older_framed: Vec<_> = older_values
        .iter()
        .map(|v| older_framed_writer.encode_bytes(v).unwrap())
        .collect();
    let older_fingerprint = older.fingerprint().unwrap().clone();
    let header_reader = Codec::<EvolvedMetric>::new(Format::Avro).with_writer_schema(&older_schema);
    // What the codec did before it resolved on its direct path: apache-avro's resolution
    // into a generic value, then serde from that value.
    let (older_avro, evolved_avro) = (OlderMetric::get_schema(), EvolvedMetric::get_schema());
    let mut registry_reader = Codec::<EvolvedMetric>::new(Format::Avro).framed_by_registry();
    registry_reader.add_registry_schema(3, &older_schema);

    type Variant<'a> = (&'static str, &'static str, Box<dyn FnMut(usize) + 'a>);
    let mut variants: Vec<Variant<'_>> = vec![
        (
            "encode",
            "plain Avro",
            Box::new(|i| {
                black_box(plain.encode_bytes(&values[i]).unwrap());
            }),
        ),
        (
            "encode",
            "wire format",
            Box::new(|i| {
                black_box(framed.encode_bytes(&values[i]).unwrap());
            }),
        ),
        (
            "decode",
            "plain Avro",
            Box::new(|i| {
                black_box(plain.decode(&plain_bytes[i], None).unwrap());
            }),
        ),
        (
            "decode",
            "wire format",
            Box::new(|i| {
                black_box(framed_reader.decode(&framed_bytes[i], None).unwrap());
            }),
        ),
        (
            "decode an older schema",
            "plain Avro, header",
            Box::new(|i| {
                black_box(
                    header_reader
                        .decode(&older_plain[i], Some(&older_fingerprint))
                        .unwrap(),
                );
            }),
        ),
        (
            "decode an older schema",
            "wire format",
            Box::new(|i| {
                black_box(registry_reader.decode(&older_framed[i], None).unwrap());
            }),
        ),
        (
            "decode an older schema",
            "plain Avro, through apache-avro's resolution",
            Box::new(|i| {
                let mut input = &older_plain[i][..];
                let resolved =
                    apache_avro::from_avro_datum(&older_avro, &mut input, Some(&evolved_avro))
                        .unwrap();
                black_box(apache_avro::from_value::<EvolvedMetric>(&resolved).unwrap());
            }),
        ),
    ];
    let mut samples = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds {
        // Every other round runs the variants backwards, so none always follows the same one.
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for index in order {
            let work = &mut variants[index].2;
            samples[index].push(per_record(records, work));
        }
    }
    println!("{rounds} rounds of {records} records; ns per record, median of the rounds\n");
    println!("| operation | format | bytes per record | ns per record | ratio to plain |");
    println!("|---|---|---|---|---|");
    let mut baseline = 0.0;
    for (index, (operation, format, _)) in variants.iter().enumerate() {
        let ns = median(&mut samples[index]);
        if index % 2 == 0 && index < 6 {
            baseline = ns;
        }
        let bytes = match (index % 2, index / 2) {
            (1, 2) => older_framed[0].len(),
            (_, 2 | 3) => older_plain[0].len(),
            (0, _) => plain_bytes[0].len(),
            _ => framed_bytes[0].len(),
        };
        println!(
            "| {operation} | {format} | {bytes} | {ns:.0} | {:.2} |",
            ns / baseline
        );
    }
}
