//! Measures the embedded log on one partition with 100-byte records: the durable append rate
//! with `FsyncPolicy::Always` (pipelined sends, so the group commit batches them), and the
//! read-back rate through the `Consumer` API.
//!
//! ```text
//! cargo run --release -p runnel-embedded-log --example log_bench -- [records] [runs]
//! ```
//!
//! Defaults: 2,000,000 records, 3 runs; prints every run and the median. The log lives in a
//! temporary directory under `$RUNNEL_BENCH_DIR` (default: the system temporary directory),
//! which should be on the disk being measured, not a tmpfs.

use std::time::{Duration, Instant};

use bytes::Bytes;
use runnel_backend::{Backend, ConsumerConfig, ProducerConfig, Record, TopicSpec};
use runnel_embedded_log::{EmbeddedBackend, FsyncPolicy, LogConfig};

const VALUE_BYTES: usize = 100;
const POLL_RECORDS: usize = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().map_or(Ok(2_000_000), |arg| arg.parse())?;
    let runs: usize = args.next().map_or(Ok(3), |arg| arg.parse())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut appends = Vec::new();
    let mut reads = Vec::new();
    for run in 1..=runs {
        let (append, read) = runtime.block_on(measure(records))?;
        let append_rate = records as f64 / append.as_secs_f64();
        let read_rate = records as f64 / read.as_secs_f64();
        println!(
            "run {run}: append {:>10.0} records/s ({:.1} MB/s), read {:>10.0} records/s",
            append_rate,
            append_rate * VALUE_BYTES as f64 / 1e6,
            read_rate
        );
        appends.push(append_rate);
        reads.push(read_rate);
    }
    println!(
        "median of {runs} runs, {records} records of {VALUE_BYTES} bytes, fsync always: append {:.0} records/s, read {:.0} records/s",
        median(&mut appends),
        median(&mut reads)
    );
    Ok(())
}

/// Appends `records` records durably, then reads them back; returns both durations.
async fn measure(records: u64) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let directory = match std::env::var_os("RUNNEL_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base)?,
        None => tempfile::tempdir()?,
    };
    let config = LogConfig::default().with_fsync(FsyncPolicy::Always);
    let backend = EmbeddedBackend::open(directory.path(), config)?;
    backend.create_topic(&TopicSpec::new("bench", 1)).await?;
    let producer = backend.producer(&ProducerConfig::default()).await?;
    let value = Bytes::from(vec![b'x'; VALUE_BYTES]);

    let started = Instant::now();
    let mut last = None;
    for i in 0..records {
        let record = Record::new(value.clone()).with_timestamp(i as i64);
        // Receipts are not awaited one by one: that is what pipelining means. Dropping one
        // does not cancel its send, and `flush` waits for all of them.
        last = Some(producer.send("bench", 0, record).await?);
    }
    producer.flush().await?;
    let append = started.elapsed();
    let last_offset = last.expect("at least one record").await?;
    assert_eq!(last_offset, records - 1);
    let status = backend.partition_status("bench", 0)?;
    println!(
        "  {} batches, {} syncs, {:.0} records per sync",
        status.batches_written,
        status.syncs,
        records as f64 / status.syncs.max(1) as f64
    );

    let consumer = backend
        .consumer(&ConsumerConfig::new("bench", ["bench"]))
        .await?;
    let started = Instant::now();
    let mut read = 0u64;
    let mut bytes = 0usize;
    while read < records {
        let polled = consumer.poll(POLL_RECORDS).await?;
        read += polled.len() as u64;
        bytes += polled
            .iter()
            .map(|consumed| consumed.record.value_len())
            .sum::<usize>();
    }
    let read_time = started.elapsed();
    assert_eq!((read, bytes), (records, records as usize * VALUE_BYTES));
    consumer.close().await?;
    Ok((append, read_time))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
