//! Verification time against blueprint size: generated blueprints of 100 to 10,000
//! streamlets, each with as many topics, verified well-formed and again with every port path
//! misspelt.
//!
//! The app has three streamlet types: `source` (outlet `out`), `stage` (inlets `a`, `b`,
//! outlet `out`) and a Reading schema on every port. Instance `s00000` is the source; every
//! other instance is a stage whose `a` reads the previous instance's topic and whose `b`
//! reads the one before (fan-out of two on every topic); every 100th stage instead reads a
//! topic ten instances further down on `b`, closing a cycle. Instance names differ in a few
//! digits, the hardest case for "did you mean" searches.
//!
//! The misspelt variant writes every port path wrong: on even topics the port (`s00012.outt`,
//! `s00013.aa`), on odd topics the instance (`s00012x.out`), so each diagnostic searches for
//! the port or instance meant.
//!
//! For each size it prints the median time of `verify` and of rendering the human report,
//! the time per streamlet, and how the time grew from the size before relative to the size
//! (`growth` = time ratio / size ratio): about 1 is linear growth; a quadratic algorithm
//! would show the size ratio itself (2 to 2.5 here).
//!
//! `cargo bench -p runnel-blueprint --bench verify -- [runs] [sizes] [valid|misspelt]`
//! (default 7 runs per size, sizes 100,200,500,1000,2000,5000,10000, both variants).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use runnel_blueprint::descriptor::AppDescriptor;
use runnel_blueprint::{Severity, render_human, verify};

const SIZES: &[usize] = &[100, 200, 500, 1_000, 2_000, 5_000, 10_000];

fn descriptor() -> AppDescriptor {
    let schema = r#"{"format": "avro", "name": "bench.Reading", "definition": {"type": "record",
        "name": "Reading", "namespace": "bench", "fields": [{"name": "sensor", "type": "string"},
        {"name": "value", "type": "double"}]}}"#;
    let port = |name: &str| format!(r#"{{"name": "{name}", "schema": {schema}}}"#);
    let json = format!(
        r#"{{"descriptor-version": 1, "app": "bench", "streamlets": [
            {{"type": "source", "outlets": [{out}]}},
            {{"type": "stage", "inlets": [{a}, {b}], "outlets": [{out}]}}
        ]}}"#,
        out = port("out"),
        a = port("a"),
        b = port("b"),
    );
    AppDescriptor::from_json(&json).expect("the benchmark's descriptor")
}

/// The topic stage `index`'s inlet `b` reads: two back, or ten ahead on every 100th stage.
fn b_source(index: usize, streamlets: usize) -> usize {
    if index % 100 == 50 && index + 10 < streamlets {
        index + 10
    } else {
        index.saturating_sub(2)
    }
}

/// A blueprint of `streamlets` instances and as many topics, its port paths misspelt or not.
fn blueprint(streamlets: usize, misspelt: bool) -> String {
    let name = |index: usize| format!("s{index:05}");
    let mut text = String::from("name = \"bench\"\n\n[streamlets]\n");
    for index in 0..streamlets {
        let kind = if index == 0 { "source" } else { "stage" };
        let _ = writeln!(text, "{} = \"{kind}\"", name(index));
    }
    let mut consumers: Vec<Vec<(usize, &str)>> = vec![Vec::new(); streamlets];
    for index in 1..streamlets {
        consumers[index - 1].push((index, "a"));
        consumers[b_source(index, streamlets)].push((index, "b"));
    }
    for (topic, readers) in consumers.iter().enumerate() {
        let path = |instance: usize, port: &str| match (misspelt, topic % 2) {
            (false, _) => format!("\"{}.{port}\"", name(instance)),
            (true, 0) => format!("\"{}.{port}{}\"", name(instance), &port[..1]),
            (true, _) => format!("\"{}x.{port}\"", name(instance)),
        };
        let readers: Vec<String> = readers.iter().map(|&(i, port)| path(i, port)).collect();
        let _ = write!(
            text,
            "\n[topics.t{topic:05}]\nproducers = [{}]\nconsumers = [{}]\n",
            path(topic, "out"),
            readers.join(", ")
        );
    }
    text
}

/// The median of `runs` timings of `work`, and what the last run returned.
fn median<T>(runs: usize, mut work: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let result = work();
        times.push(start.elapsed());
        last = Some(result);
    }
    times.sort();
    (times[times.len() / 2], last.expect("at least one run"))
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let runs: usize = args
        .first()
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(7)
        .max(1);
    let sizes: Vec<usize> = args.get(1).map_or_else(
        || SIZES.to_vec(),
        |list| list.split(',').filter_map(|n| n.parse().ok()).collect(),
    );
    let descriptor = descriptor();
    let file = Path::new("blueprint.toml");
    println!("median of {runs} runs per size");
    println!(
        "{:<9} {:>10} {:>9} {:>10} {:>13} {:>7} {:>10} {:>8} {:>8}",
        "paths",
        "streamlets",
        "KiB",
        "verify ms",
        "µs/streamlet",
        "growth",
        "report ms",
        "errors",
        "warnings"
    );
    let variants: &[bool] = match args.get(2).map(String::as_str) {
        Some("valid") => &[false],
        Some("misspelt") => &[true],
        _ => &[false, true],
    };
    for &misspelt in variants {
        let mut previous: Option<(usize, Duration)> = None;
        for &streamlets in &sizes {
            let text = blueprint(streamlets, misspelt);
            let (verify_time, verification) = median(runs, || verify(file, &text, &descriptor));
            let (report_time, _) = median(runs, || {
                render_human(&verification.diagnostics, &text).len()
            });
            let growth = previous.map_or_else(
                || "-".to_owned(),
                |(size, time)| {
                    let times = verify_time.as_secs_f64() / time.as_secs_f64();
                    format!("{:.2}", times / (streamlets as f64 / size as f64))
                },
            );
            previous = Some((streamlets, verify_time));
            println!(
                "{:<9} {:>10} {:>9} {:>10.2} {:>13.2} {:>7} {:>10.2} {:>8} {:>8}",
                if misspelt { "misspelt" } else { "valid" },
                streamlets,
                text.len() / 1024,
                verify_time.as_secs_f64() * 1e3,
                verify_time.as_secs_f64() * 1e6 / streamlets as f64,
                growth,
                report_time.as_secs_f64() * 1e3,
                verification.count(Severity::Error),
                verification.count(Severity::Warning),
            );
        }
    }
}
