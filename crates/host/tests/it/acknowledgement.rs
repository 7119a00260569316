//! The core promise: an input offset is committed only after the outputs sent before its
//! commit are acknowledged, and unacknowledged sends are bounded.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use runnel_backend::{
    Backend, Consumer, ConsumerConfig, MemoryBackend, PartitionOffsets, Producer, ProducerConfig,
    Receipt, Record, TopicCreation, TopicInfo, TopicSpec,
};
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::model::{IN, OUT, reading};

/// A memory backplane whose receipts complete only once released: the receipt of the
/// record at offset `n` completes once more than `n` records are released.
#[derive(Debug, Clone)]
struct HeldBackend {
    memory: MemoryBackend,
    released: watch::Receiver<u64>,
}

#[derive(Debug)]
struct HeldProducer {
    inner: Arc<dyn Producer>,
    released: watch::Receiver<u64>,
}

#[async_trait]
impl Producer for HeldProducer {
    async fn send(
        &self,
        topic: &str,
        partition: u32,
        record: Record,
    ) -> runnel_backend::Result<Receipt> {
        let receipt = self.inner.send(topic, partition, record).await?;
        let mut released = self.released.clone();
        Ok(Receipt::new(async move {
            let offset = receipt.await?;
            released
                .wait_for(|released| *released > offset)
                .await
                .map_err(|_| runnel_backend::Error::Closed)?;
            Ok(offset)
        }))
    }

    async fn flush(&self) -> runnel_backend::Result<()> {
        self.released
            .clone()
            .wait_for(|released| *released == u64::MAX)
            .await
            .map_err(|_| runnel_backend::Error::Closed)?;
        Ok(())
    }
}

#[async_trait]
impl Backend for HeldBackend {
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
        let inner = self.memory.producer(config).await?;
        Ok(Arc::new(HeldProducer {
            inner,
            released: self.released.clone(),
        }))
    }
    async fn consumer(&self, config: &ConsumerConfig) -> runnel_backend::Result<Arc<dyn Consumer>> {
        self.memory.consumer(config).await
    }
    async fn partition_reader(
        &self,
        config: &runnel_backend::ReaderConfig,
    ) -> runnel_backend::Result<Box<dyn runnel_backend::PartitionReader>> {
        self.memory.partition_reader(config).await
    }
}

struct Fixture {
    memory: MemoryBackend,
    release: watch::Sender<u64>,
    running: tokio::task::JoinHandle<runnel_streamlet::Result<()>>,
    _end_of_input: watch::Sender<bool>,
}

async fn start(inputs: usize, settings: HostSettings) -> Fixture {
    let memory = MemoryBackend::new();
    for topic in ["in", "out", "dead"] {
        memory
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let producer = memory.producer(&ProducerConfig::default()).await.unwrap();
    for i in 0..inputs {
        let value = encode(&reading("x", i as f64));
        producer
            .send("in", 0, Record::new(value))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let (release, released) = watch::channel(0);
    let (end_of_input, ended) = watch::channel(true);
    let backend = HeldBackend {
        memory: memory.clone(),
        released,
    };
    let wiring = Wiring {
        app: "app".into(),
        instance: "copy".into(),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: "in".into(),
            group: "copy.in".into(),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: BTreeMap::new(),
        }],
        outlets: vec![OutletWiring {
            port: "out".into(),
            topic: "out".into(),
            tag_schema: false,
        }],
        dead_letter_topic: "dead".into(),
        parameters: HashMap::new(),
        settings,
        ready: None,
        watermarks: None,
        transactional_id: None,
        static_member: None,
        attempts: Default::default(),
    };
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
    Fixture {
        memory,
        release,
        running,
        _end_of_input: end_of_input,
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

async fn wait_for_outputs(memory: &MemoryBackend, count: usize) {
    while memory.records("out").unwrap().len() < count {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn quick_commits() -> HostSettings {
    HostSettings {
        commit_interval: Duration::from_millis(10),
        ..HostSettings::default()
    }
}

#[tokio::test]
async fn inputs_are_committed_only_after_their_outputs_are_acknowledged() {
    let fixture = start(3, quick_commits()).await;
    wait_for_outputs(&fixture.memory, 3).await;
    // Many commit intervals pass while the outputs are unacknowledged.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        fixture.memory.committed("copy.in", "in").await.unwrap(),
        [None]
    );

    fixture.release.send(u64::MAX).unwrap();
    fixture.running.await.unwrap().unwrap();
    assert_eq!(
        fixture.memory.committed("copy.in", "in").await.unwrap(),
        [Some(3)]
    );
}

#[tokio::test]
async fn unacknowledged_sends_are_bounded() {
    let settings = HostSettings {
        max_unacknowledged_sends: 5,
        ..quick_commits()
    };
    let fixture = start(20, settings).await;
    wait_for_outputs(&fixture.memory, 5).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        fixture.memory.records("out").unwrap().len(),
        5,
        "the sixth send waits"
    );

    fixture.release.send(u64::MAX).unwrap();
    fixture.running.await.unwrap().unwrap();
    assert_eq!(fixture.memory.records("out").unwrap().len(), 20);
    assert_eq!(
        fixture.memory.committed("copy.in", "in").await.unwrap(),
        [Some(20)]
    );
}

/// More records than the committer takes per wake-up, with the outputs acknowledged only up
/// to a point: the commits must stop exactly there, however the events are batched.
#[tokio::test]
async fn batched_commits_never_overtake_an_unacknowledged_send() {
    let fixture = start(1_000, quick_commits()).await;
    wait_for_outputs(&fixture.memory, 1_000).await;
    fixture.release.send(600).unwrap();
    let committed = || async { fixture.memory.committed("copy.in", "in").await.unwrap() };
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        while committed().await != [Some(600)] {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    waiting
        .await
        .expect("the inputs of the acknowledged outputs are committed");
    // Many commit intervals pass; output 600 and later stay unacknowledged.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(committed().await, [Some(600)]);

    fixture.release.send(u64::MAX).unwrap();
    fixture.running.await.unwrap().unwrap();
    assert_eq!(committed().await, [Some(1_000)]);
}

/// A bound above the committer's wake-up batch still holds: the sends stop at it until
/// receipts complete, and the permits come back once they do.
#[tokio::test]
async fn unacknowledged_sends_are_bounded_above_a_wake_up_batch() {
    let settings = HostSettings {
        max_unacknowledged_sends: 300,
        ..quick_commits()
    };
    let fixture = start(1_000, settings).await;
    wait_for_outputs(&fixture.memory, 300).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        fixture.memory.records("out").unwrap().len(),
        300,
        "the 301st send waits"
    );
    fixture.release.send(100).unwrap();
    wait_for_outputs(&fixture.memory, 400).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        fixture.memory.records("out").unwrap().len(),
        400,
        "100 acknowledged sends make room for 100 more"
    );

    fixture.release.send(u64::MAX).unwrap();
    fixture.running.await.unwrap().unwrap();
    assert_eq!(fixture.memory.records("out").unwrap().len(), 1_000);
    assert_eq!(
        fixture.memory.committed("copy.in", "in").await.unwrap(),
        [Some(1_000)]
    );
}
