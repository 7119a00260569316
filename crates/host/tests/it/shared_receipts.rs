//! Receipts shared by many records (a produce request's delivery reports, as the Kafka and
//! embedded backplanes give them): however their outcomes arrive, a failed delivery in the
//! middle of a batch stops the commits before its input, with every later record
//! acknowledged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, Producer, ProducerConfig,
    Receipt, ReceiptSource, Record, TopicCreation, TopicInfo, TopicSpec,
};
use runnel_host::HostSettings;
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::hosting;
use crate::model::{IN, OUT, reading};

/// The outcomes of every record sent, reported by the test in any order: one source for
/// every receipt, indexed by the record's offset.
#[derive(Debug, Default)]
struct Reports {
    state: Mutex<Reported>,
}

/// The outcomes reported so far, by index, and the tasks waiting for more.
#[derive(Debug, Default)]
struct Reported {
    outcomes: HashMap<u32, Result<u64, String>>,
    waiters: Vec<Waker>,
}

impl Reports {
    fn report(&self, index: u32, outcome: Result<u64, String>) {
        let waiters = {
            let mut state = self.state.lock().unwrap();
            state.outcomes.insert(index, outcome);
            std::mem::take(&mut state.waiters)
        };
        for waker in waiters {
            waker.wake();
        }
    }
}

impl ReceiptSource for Reports {
    fn poll_receipt(&self, index: u32, cx: &mut Context<'_>) -> Poll<runnel_backend::Result<u64>> {
        let mut state = self.state.lock().unwrap();
        match state.outcomes.get(&index) {
            Some(Ok(offset)) => Poll::Ready(Ok(*offset)),
            Some(Err(reason)) => Poll::Ready(Err(runnel_backend::Error::Produce {
                topic: "out".into(),
                partition: 0,
                source: reason.clone().into(),
            })),
            None => {
                state.waiters.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[derive(Debug, Clone)]
struct SharedBackend {
    memory: MemoryBackend,
    reports: Arc<Reports>,
}

#[derive(Debug)]
struct SharedProducer {
    inner: Arc<dyn Producer>,
    reports: Arc<Reports>,
}

#[async_trait]
impl Producer for SharedProducer {
    async fn send(
        &self,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> runnel_backend::Result<Receipt> {
        let offset = self.inner.send(topic, partition, record).await?.await?;
        Ok(Receipt::shared(self.reports.clone(), offset as u32))
    }

    async fn flush(&self) -> runnel_backend::Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Backend for SharedBackend {
    async fn create_topic(&self, spec: &TopicSpec) -> runnel_backend::Result<TopicCreation> {
        self.memory.create_topic(spec).await
    }
    async fn topic(&self, name: &str) -> runnel_backend::Result<Option<TopicInfo>> {
        self.memory.topic(name).await
    }
    async fn offsets(&self, topic: &str) -> runnel_backend::Result<Vec<PartitionOffsets>> {
        self.memory.offsets(topic).await
    }
    async fn committed(
        &self,
        group: &str,
        topic: &str,
    ) -> runnel_backend::Result<Vec<Option<u64>>> {
        self.memory.committed(group, topic).await
    }
    async fn producer(&self, config: &ProducerConfig) -> runnel_backend::Result<Arc<dyn Producer>> {
        Ok(Arc::new(SharedProducer {
            inner: self.memory.producer(config).await?,
            reports: self.reports.clone(),
        }))
    }
    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        self.memory.consumer(config).await
    }
}

/// The Avro bytes of a reading, as an outlet writes them.
fn encode(value: &crate::model::Reading) -> Vec<u8> {
    let mut buffer = Vec::new();
    apache_avro::write_avro_datum_ref(
        &<crate::model::Reading as AvroSchema>::get_schema(),
        value,
        &mut buffer,
    )
    .unwrap();
    buffer
}

#[tokio::test]
async fn a_failed_delivery_in_the_middle_of_a_batch_stops_the_commits_before_its_input() {
    const INPUTS: u32 = 100;
    const FAILED: u32 = 40;
    let memory = MemoryBackend::new();
    for topic in ["in", "out", "dead"] {
        memory
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let producer = memory.producer(&ProducerConfig::default()).await.unwrap();
    for i in 0..INPUTS {
        let value = encode(&reading("x", f64::from(i)));
        drop(producer.send("in", 0, Record::new(value)).await.unwrap());
    }
    let reports = Arc::new(Reports::default());
    let backend = SharedBackend {
        memory: memory.clone(),
        reports: reports.clone(),
    };
    let (_end_of_input, ended) = watch::channel(true);
    let settings = HostSettings {
        commit_interval: Duration::from_millis(10),
        ..HostSettings::default()
    };
    let wiring = hosting::wiring("copy", ended, settings, None);
    let streamlet = Processor::new(IN, OUT, Some);
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&streamlet)));
    let running = tokio::spawn(runnel_host::run_instance(
        Box::new(streamlet),
        Arc::new(backend),
        wiring,
        Arc::new(SystemClock),
        metrics,
        CancellationToken::new(),
    ));
    while memory.records("out").unwrap().len() < INPUTS as usize {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let committed = || async { memory.committed("app.copy.in", "in").await.unwrap() };
    // The records before the failed one are acknowledged, last first.
    for index in (0..FAILED).rev() {
        reports.report(index, Ok(u64::from(index)));
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        while committed().await != [Some(u64::from(FAILED))] {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the inputs of the acknowledged outputs are committed");
    // Every later record is acknowledged before the failed one is reported.
    for index in (FAILED + 1..INPUTS).rev() {
        reports.report(index, Ok(u64::from(index)));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        committed().await,
        [Some(u64::from(FAILED))],
        "nothing past an unacknowledged output is committed"
    );
    reports.report(FAILED, Err("the broker refused the record".into()));
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the instance stops")
        .unwrap();
    assert!(outcome.is_err(), "a lost output fails the instance");
    assert_eq!(committed().await, [Some(u64::from(FAILED))]);
}
