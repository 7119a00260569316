//! Exactly-once through the host: a copying streamlet is killed (its Tokio runtime shut
//! down, so the streamlet and its committer stop mid-step, as in a crash) and restarted
//! several times mid-stream; the committed output holds
//! every input exactly once, in input order per partition. Runs on `MemoryBackend` and on
//! the embedded log, which both honour the `TransactionalProducer` contract (on the embedded
//! log the killed instance's transaction stays open in the log until the restarted one
//! fences it); `docs/kafka.md` says why the Kafka brokers available to tests cannot show
//! this.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec, partition_for_key,
};
use runnel_embedded_log::{EmbeddedBackend, LogConfig};
use runnel_host::HostSettings;
use runnel_streamlet::prelude::*;
use tokio::sync::watch;

use crate::hosting;
use crate::model::{IN, Reading, reading};

const INPUTS: usize = 3_000;
const KILLS: usize = 5;
const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());

/// Copies readings one by one, slowly enough to be killed mid-stream.
struct SlowCopy;

impl Streamlet for SlowCopy {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).exactly_once()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        while let Some(message) = input.next().await? {
            tokio::time::sleep(Duration::from_micros(200)).await;
            output.send(message.value()).await?;
            message.commit();
        }
        Ok(())
    }
}

fn encode(value: &Reading) -> Vec<u8> {
    let mut buffer = Vec::new();
    apache_avro::write_avro_datum_ref(&<Reading as AvroSchema>::get_schema(), value, &mut buffer)
        .unwrap();
    buffer
}

fn decode(bytes: &[u8]) -> Reading {
    let value = apache_avro::from_avro_datum(
        &<Reading as AvroSchema>::get_schema(),
        &mut &bytes[..],
        None,
    )
    .unwrap();
    apache_avro::from_value(&value).unwrap()
}

/// Starts an instance on a runtime of its own, which the test shuts down to kill it.
fn start(
    backend: &Arc<dyn Backend>,
    ended: watch::Receiver<bool>,
) -> (tokio::runtime::Runtime, tokio::task::JoinHandle<Result<()>>) {
    let settings = HostSettings {
        commit_interval: Duration::from_millis(20),
        ..HostSettings::default()
    };
    let wiring = hosting::wiring("copy", ended, settings, Some("app.copy.0"));
    hosting::start_killable(SlowCopy, backend.clone(), wiring)
}

/// Output records appended so far (on the embedded log also those of open and aborted
/// transactions, and markers): only to time the kills.
async fn outputs(backend: &Arc<dyn Backend>) -> usize {
    let ends = backend.offsets("out").await.unwrap();
    ends.iter().map(|partition| partition.end as usize).sum()
}

async fn wait_for_outputs(backend: &Arc<dyn Backend>, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while outputs(backend).await < count {
        assert!(
            Instant::now() < deadline,
            "fewer than {count} outputs were written"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The committed output, per partition in offset order, as a fresh read-committed reader
/// sees it (waiting a little past `count` records for any duplicate).
async fn read_committed(backend: &Arc<dyn Backend>, count: usize) -> BTreeMap<u32, Vec<f64>> {
    let reader = backend
        .consumer(&ConsumerConfig::new("check", ["out"]))
        .await
        .unwrap();
    let mut copied: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut read = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let settle = if read < count {
            Duration::from_secs(5)
        } else {
            Duration::from_millis(500)
        };
        let Ok(polled) = tokio::time::timeout(settle, reader.poll(1000)).await else {
            if read >= count || Instant::now() > deadline {
                break;
            }
            continue;
        };
        for record in polled.unwrap() {
            copied.entry(record.partition).or_default().push(
                decode(
                    record
                        .record
                        .value
                        .as_deref()
                        .expect("copies are never null"),
                )
                .celsius,
            );
            read += 1;
        }
    }
    reader.close().await.unwrap();
    copied
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_and_restarted_commits_every_input_exactly_once_in_order() {
    copy_killed_and_restarted(Arc::new(MemoryBackend::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_and_restarted_on_the_embedded_log_commits_every_input_exactly_once() {
    let directory = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(directory.path(), LogConfig::default()).unwrap();
    copy_killed_and_restarted(Arc::new(backend)).await;
}

async fn copy_killed_and_restarted(backend: Arc<dyn Backend>) {
    for topic in ["in", "out", "dead"] {
        backend
            .create_topic(&TopicSpec::new(topic, 2))
            .await
            .unwrap();
    }
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let mut expected: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for i in 0..INPUTS {
        let value = reading(&format!("sensor-{}", i % 10), i as f64);
        let partition = partition_for_key(value.sensor.as_bytes(), 2);
        expected.entry(partition).or_default().push(value.celsius);
        let record = Record::new(encode(&value)).with_key(value.sensor.clone());
        drop(producer.send("in", partition, record).await.unwrap());
    }
    producer.flush().await.unwrap();

    let (end, ended) = watch::channel(false);
    let mut written_at_kills = Vec::new();
    for kill in 1..=KILLS {
        let (runtime, _running) = start(&backend, ended.clone());
        wait_for_outputs(&backend, kill * INPUTS / (KILLS + 3)).await;
        // A crash: every task of the instance, its committer included, stops where it is.
        runtime.shutdown_background();
        written_at_kills.push(outputs(&backend).await);
    }
    assert!(
        written_at_kills.iter().all(|&count| count < INPUTS),
        "every kill happened mid-stream: {written_at_kills:?}"
    );

    end.send_replace(true);
    let (runtime, last) = start(&backend, ended);
    tokio::time::timeout(Duration::from_secs(120), last)
        .await
        .expect("the last run finishes")
        .unwrap()
        .unwrap();
    runtime.shutdown_background();

    let copied = read_committed(&backend, INPUTS).await;
    for (partition, inputs) in &expected {
        let outputs = copied.get(partition).cloned().unwrap_or_default();
        let first_difference = inputs
            .iter()
            .zip(&outputs)
            .position(|(input, output)| input != output);
        assert!(
            outputs.len() == inputs.len() && first_difference.is_none(),
            "partition {partition}: {} inputs, {} outputs, first difference at position {:?}",
            inputs.len(),
            outputs.len(),
            first_difference
        );
    }
    let ends: Vec<Option<u64>> = expected.values().map(|v| Some(v.len() as u64)).collect();
    assert_eq!(backend.committed("app.copy.in", "in").await.unwrap(), ends);
}
