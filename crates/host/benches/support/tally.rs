//! The streamlet of the keyed-state benchmarks and what drives it, shared by
//! `runnel-host`'s `keyed_state` bench (the embedded log) and `runnel-kafka`'s (tansu),
//! which includes this file by path: a count and a sum per key (`ValueState<(u64, i64)>`),
//! 16-byte keys, 4 input partitions.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use runnel_backend::{Backend, ProducerConfig, Record, partition_for_key};
use std::collections::BTreeMap;

use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ValueState};
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio_util::sync::CancellationToken;

pub(crate) const PARTITIONS: u32 = 4;
pub(crate) const IN: Inlet<i64> = Inlet::new("in");
const TALLY: ValueState<(u64, i64)> = ValueState::new("tally");

/// When the streamlet handled its `expected`-th record since it started, and its first.
#[derive(Debug, Default)]
struct Progress {
    first: Option<Instant>,
    reached: Option<Instant>,
    handled: u64,
}

/// Counts and sums per key.
struct Tally {
    checkpoint_every: Duration,
    /// Keep warm copies of the partitions other members hold.
    standby: bool,
    expected: u64,
    progress: Arc<Mutex<Progress>>,
}

impl Streamlet for Tally {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let mut state = ctx.keyed_state()?.checkpoint_every(self.checkpoint_every);
        if self.standby {
            state = state.warm_standby();
        }
        while let Some(next) = state.next(&mut input).await? {
            let Keyed::Message(message) = next else {
                continue;
            };
            let key = message.key().expect("every record has a key").to_vec();
            let amount = *message.value();
            state
                .entry(message.partition(), key)
                .value(TALLY)
                .update(|tally| {
                    let (count, sum) = tally.unwrap_or_default();
                    (count + 1, sum + amount)
                })?;
            message.commit();
            let mut progress = self.progress.lock().unwrap();
            progress.first.get_or_insert_with(Instant::now);
            progress.handled += 1;
            if progress.handled == self.expected {
                progress.reached = Some(Instant::now());
            }
        }
        Ok(())
    }
}

/// The key of index `index`: 16 bytes.
pub(crate) fn key(index: u64) -> Bytes {
    Bytes::from(format!("{index:016x}"))
}

/// Appends to `topic` one record (amount 1) for each key in `keys`, each on its key's
/// partition.
pub(crate) async fn produce(backend: &dyn Backend, topic: &str, keys: impl Iterator<Item = u64>) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <i64 as AvroSchema>::get_schema();
    let one = Bytes::from(
        apache_avro::to_avro_datum(&schema, apache_avro::types::Value::Long(1)).unwrap(),
    );
    for index in keys {
        let key = key(index);
        let partition = partition_for_key(&key, PARTITIONS);
        let record = Record::new(one.clone()).with_key(key);
        drop(producer.send(topic, partition, record).await.unwrap());
    }
    producer.flush().await.unwrap();
}

/// A key of each partition.
pub(crate) fn one_per_partition() -> impl Iterator<Item = u64> {
    (0..PARTITIONS).map(|partition| {
        (0..)
            .find(|index| partition_for_key(&key(*index), PARTITIONS) == partition)
            .unwrap()
    })
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The wiring of instance `instance` of app `app`, reading `input` (as group
/// `<app>.<instance>.in`) in batches of 1,024, dead letters to `dead`, writing `outlets`.
pub(crate) fn wiring(
    app: &str,
    instance: &str,
    (input, dead): (&str, &str),
    outlets: Vec<OutletWiring>,
) -> Wiring {
    let (_end, ended) = tokio::sync::watch::channel(false);
    Wiring {
        app: app.into(),
        instance: instance.into(),
        inlets: vec![InletWiring {
            port: "in".into(),
            topic: input.into(),
            group: format!("{app}.{instance}.in"),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: BTreeMap::new(),
        }],
        outlets,
        dead_letter_topic: dead.into(),
        parameters: Default::default(),
        settings: HostSettings {
            poll_batch: 1024,
            ..HostSettings::default()
        },
        ready: None,
        watermarks: None,
        transactional_id: None,
        static_member: None,
        attempts: Default::default(),
    }
}

/// A running instance of the tally, a member of its group.
pub(crate) struct Member {
    progress: Arc<Mutex<Progress>>,
    pub(crate) metrics: Arc<InstanceMetrics>,
    stop: CancellationToken,
    pub(crate) running: tokio::task::JoinHandle<runnel_streamlet::Result<()>>,
    pub(crate) started: Instant,
}

impl Member {
    /// Runs the tally on `backend` as `wiring` says, checkpointing every
    /// `checkpoint_every`, with warm standbys if `standby`; it notes when it handled its
    /// `expected`-th record.
    pub(crate) fn start(
        backend: Arc<dyn Backend>,
        wiring: Wiring,
        checkpoint_every: Duration,
        standby: bool,
        expected: u64,
    ) -> Member {
        let progress = Arc::new(Mutex::new(Progress::default()));
        let tally = Tally {
            checkpoint_every,
            standby,
            expected,
            progress: progress.clone(),
        };
        let stop = CancellationToken::new();
        let started = Instant::now();
        let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&tally)));
        let running = tokio::spawn(run_instance(
            Box::new(tally),
            backend,
            wiring,
            Arc::new(SystemClock),
            metrics.clone(),
            stop.clone(),
        ));
        Member {
            progress,
            metrics,
            stop,
            running,
            started,
        }
    }

    /// When it handled its first record and its `expected`-th, once it has.
    ///
    /// # Panics
    ///
    /// When the instance stopped before (with its error).
    pub(crate) async fn reached(&mut self) -> (Instant, Instant) {
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if self.running.is_finished() {
                let outcome = (&mut self.running).await.unwrap();
                panic!("the instance stopped before it handled its records: {outcome:?}");
            }
            let progress = self.progress.lock().unwrap();
            if let (Some(first), Some(reached)) = (progress.first, progress.reached) {
                return (first, reached);
            }
        }
    }

    /// Stops it: its last checkpoint is written, and it leaves the group.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        self.running.await.unwrap().unwrap();
    }
}
