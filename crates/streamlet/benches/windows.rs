//! Single-threaded throughput of the window engine: a keyed count in event-time windows,
//! with watermarks generated per partition, measured as records per second on one core.
//!
//! Each record is what `WindowedAggregate` does per input: extract the key (an owned
//! `String`, as a key function returns), add the element to its windows, account its
//! timestamp in the watermark holder (3 partitions, 4 s bound) and let the watermark fire
//! windows. Decoding and the log are not included: see the `pipeline` benchmark of the
//! `runnel` crate for those. Inputs are generated beforehand: 10,000 keys in pseudo-random
//! order, event time advancing at `rate` records per second of event time, and one record
//! in ten up to 3 s out of order (within the bound, so none is late).
//!
//! `cargo bench -p runnel-streamlet --bench windows -- [records] [runs] [rate] [only]`
//! (defaults 20,000,000, 5 and 1,000,000; `only` runs the configurations whose name
//! contains it, such as `100`).

use std::time::{Duration, Instant};

use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::{Added, Count, WindowOperator, WindowSpec};

const KEYS: usize = 10_000;

struct Input {
    key: u32,
    timestamp: i64,
    partition: u32,
}

fn inputs(records: usize, rate: u64) -> Vec<Input> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..records)
        .map(|i| {
            let random = next();
            let on_time = 1_700_000_000_000 + (i as u64 * 1_000 / rate) as i64;
            let disorder = if random % 10 == 0 {
                (random >> 8) % 3_000
            } else {
                0
            };
            Input {
                key: ((random >> 32) % KEYS as u64) as u32,
                timestamp: on_time - disorder as i64,
                partition: (i % 3) as u32,
            }
        })
        .collect()
}

/// One pass over the inputs; returns the time taken and the panes fired.
fn run(spec: WindowSpec, keys: &[String], inputs: &[Input]) -> (Duration, usize) {
    let mut operator = WindowOperator::new(spec, Count::<()>::new());
    let mut watermarks = WatermarkHolder::new(Watermarks::bounded(Duration::from_secs(4)));
    for partition in 0..3 {
        watermarks.add_partition(partition, 0);
    }
    let mut panes = Vec::with_capacity(8_192);
    let (mut fired, mut late) = (0, 0);
    let started = Instant::now();
    for input in inputs {
        let key = keys[input.key as usize].clone();
        if operator.add(key, input.timestamp, &(), 0, &mut panes) == Added::Late {
            late += 1;
        }
        if let Some(watermark) = watermarks.observe(input.partition, input.timestamp, 0) {
            operator.advance_watermark(watermark, 0, &mut panes);
        }
        if panes.len() >= 4_096 {
            fired += panes.len();
            panes.clear();
        }
    }
    operator.advance_watermark(watermarks.finish(), 0, &mut panes);
    let elapsed = started.elapsed();
    fired += panes.len();
    assert_eq!(late, 0, "inputs within the bound are never late");
    (elapsed, fired)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let records = args.first().copied().unwrap_or(20_000_000) as usize;
    let runs = args.get(1).copied().unwrap_or(5).max(1) as usize;
    let rate = args.get(2).copied().unwrap_or(1_000_000).max(1);
    let only = std::env::args().nth(4).unwrap_or_default();
    let keys: Vec<String> = (0..KEYS).map(|k| format!("device-{k:05}")).collect();
    let inputs = inputs(records, rate);
    println!(
        "{records} records, {KEYS} keys, {rate} records per second of event time ({} s), \
         watermarks 4 s behind on 3 partitions, {runs} runs, one thread",
        records as u64 / rate
    );
    let ten = Duration::from_secs(10);
    let configurations = [
        ("tumbling 10 s", WindowSpec::tumbling(ten)),
        (
            "sliding 10 s / 2 s",
            WindowSpec::sliding(ten, Duration::from_secs(2)),
        ),
        (
            "sliding 10 s / 1 s",
            WindowSpec::sliding(ten, Duration::from_secs(1)),
        ),
        (
            "sliding 10 s / 500 ms",
            WindowSpec::sliding(ten, Duration::from_millis(500)),
        ),
        (
            "sliding 10 s / 200 ms",
            WindowSpec::sliding(ten, Duration::from_millis(200)),
        ),
        (
            "sliding 10 s / 100 ms",
            WindowSpec::sliding(ten, Duration::from_millis(100)),
        ),
    ];
    for (name, spec) in configurations {
        if !name.contains(only.as_str()) {
            continue;
        }
        let mut rates = Vec::with_capacity(runs);
        let mut fired = 0;
        for _ in 0..runs {
            let (elapsed, panes) = run(spec, &keys, &inputs);
            fired = panes;
            rates.push(records as f64 / elapsed.as_secs_f64());
        }
        let each: Vec<String> = rates.iter().map(|r| format!("{:.0}", r)).collect();
        rates.sort_by(f64::total_cmp);
        println!(
            "{name:<22} median {:>11.0} records/s   panes {fired:>9}   runs {}",
            rates[runs / 2],
            each.join(" ")
        );
    }
}
