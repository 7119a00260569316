//! Running a scorer of points on an in-memory backplane: publish models and points, start
//! and stop it (again on the same log, for restarts), read what it sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, ConsumedRecord, MemoryBackend, Producer, ProducerConfig, Record, TopicSpec,
};
use runnel_blueprint::parameter::ParameterValue;
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring, run_instance};
use runnel_onnx::{ModelEvent, ModelRecord, ModelScorer, Score, Scoring};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{FailedAttempts, InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A point to score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Point {
    pub(crate) id: i64,
    pub(crate) x: f32,
    pub(crate) y: f32,
}

/// A point with its score and the model that gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Scored {
    pub(crate) id: i64,
    pub(crate) values: Vec<f32>,
    pub(crate) model: String,
}

pub(crate) const POINTS: Inlet<Point> = Inlet::new("in").json();
pub(crate) const SCORED: Outlet<Scored> = Outlet::new("out").json();

/// Features `[x, y]`, except for point -1, which has only one; each record takes
/// `per_record` of CPU-bound work (a model that is slow to score).
pub(crate) struct PointScoring {
    per_record: Duration,
}

impl Scoring for PointScoring {
    type Input = Point;
    type Output = Scored;
    const FEATURES: usize = 2;
    const OUTPUTS: usize = 2;

    fn features(&self, point: &Point, features: &mut Vec<f32>) {
        if !self.per_record.is_zero() {
            // Busy, as scoring is: the task does not yield meanwhile.
            let started = Instant::now();
            while started.elapsed() < self.per_record {
                std::hint::spin_loop();
            }
        }
        features.push(point.x);
        if point.id != -1 {
            features.push(point.y);
        }
    }

    fn scored(&self, point: Point, score: Score<'_>) -> Scored {
        Scored {
            id: point.id,
            values: score.values.to_vec(),
            model: score.label(),
        }
    }
}

/// A backplane with the scorer's topics, shared by every run of it.
pub(crate) struct Log {
    pub(crate) backend: Arc<MemoryBackend>,
    producer: Arc<dyn Producer>,
    /// Set to end the points and the models input (for bounded runs).
    ends: [watch::Sender<bool>; 2],
}

impl Log {
    pub(crate) async fn new() -> Log {
        let backend = Arc::new(MemoryBackend::new());
        for (topic, partitions) in [
            ("points", 2),
            ("models", 1),
            ("scored", 2),
            ("events", 1),
            ("dead-letters", 1),
        ] {
            backend
                .create_topic(&TopicSpec::new(topic, partitions))
                .await
                .unwrap();
        }
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        Log {
            backend,
            producer,
            ends: [watch::Sender::new(false), watch::Sender::new(false)],
        }
    }

    pub(crate) async fn publish_model(&self, record: &ModelRecord) {
        let value = avro(record);
        let receipt = self
            .producer
            .send("models", 0, Record::new(value))
            .await
            .unwrap();
        receipt.await.unwrap();
    }

    pub(crate) async fn publish_points(&self, points: impl IntoIterator<Item = Point>) {
        for point in points {
            let value = serde_json::to_vec(&point).unwrap();
            let partition = point.id.rem_euclid(2) as u32;
            let receipt = self
                .producer
                .send("points", partition, Record::new(value))
                .await
                .unwrap();
            receipt.await.unwrap();
        }
    }

    /// Ends both inputs: a run reads what is there and finishes.
    pub(crate) fn end_inputs(&self) {
        for end in &self.ends {
            end.send_replace(true);
        }
    }

    /// Starts the scorer with `parameters`.
    pub(crate) fn start(&self, parameters: &[(&str, ParameterValue)]) -> Run {
        self.start_scoring(parameters, Duration::ZERO)
    }

    /// Starts the scorer with `parameters`, taking `per_record` of CPU per record scored.
    pub(crate) fn start_scoring(
        &self,
        parameters: &[(&str, ParameterValue)],
        per_record: Duration,
    ) -> Run {
        let mut values = HashMap::from([
            ("batch-size".to_owned(), ParameterValue::Int(64)),
            (
                "batch-linger".to_owned(),
                ParameterValue::Duration(Duration::ZERO),
            ),
            (
                "model-name".to_owned(),
                ParameterValue::String(String::new()),
            ),
            (
                "refuse-older-versions".to_owned(),
                ParameterValue::Bool(false),
            ),
        ]);
        for (key, value) in parameters {
            values.insert((*key).to_owned(), value.clone());
        }
        let inlet = |port: &str, topic: &str, end: &watch::Sender<bool>| InletWiring {
            port: port.to_owned(),
            topic: topic.to_owned(),
            group: format!("scorer.{port}"),
            writer_schemas: Vec::new(),
            end_of_input: end.subscribe(),
            consumer_settings: Default::default(),
        };
        let outlet = |port: &str, topic: &str| OutletWiring {
            port: port.to_owned(),
            topic: topic.to_owned(),
            tag_schema: false,
        };
        let wiring = Wiring {
            app: "test".to_owned(),
            instance: "scorer".to_owned(),
            inlets: vec![
                inlet("in", "points", &self.ends[0]),
                inlet("models", "models", &self.ends[1]),
            ],
            outlets: vec![outlet("out", "scored"), outlet("model-events", "events")],
            dead_letter_topic: "dead-letters".to_owned(),
            parameters: values,
            settings: HostSettings {
                commit_interval: Duration::from_millis(10),
                ..HostSettings::default()
            },
            ready: None,
            watermarks: None,
            transactional_id: None,
            static_member: None,
            attempts: Arc::new(FailedAttempts::new(3)),
        };
        let shutdown = CancellationToken::new();
        let metrics = Arc::new(InstanceMetrics::default());
        let task = tokio::spawn(run_instance(
            Box::new(ModelScorer::new(
                POINTS,
                SCORED,
                PointScoring { per_record },
            )),
            self.backend.clone(),
            wiring,
            Arc::new(SystemClock),
            metrics.clone(),
            shutdown.clone(),
        ));
        Run {
            shutdown,
            task,
            metrics,
        }
    }

    pub(crate) fn scored(&self) -> Vec<Scored> {
        let mut scored: Vec<Scored> = self
            .records("scored")
            .iter()
            .map(|record| serde_json::from_slice(record.record.value.as_deref().unwrap()).unwrap())
            .collect();
        scored.sort_by_key(|scored| scored.id);
        scored
    }

    pub(crate) fn events(&self) -> Vec<ModelEvent> {
        self.records("events")
            .iter()
            .map(|record| {
                let schema = ModelEvent::get_schema();
                let value = apache_avro::from_avro_datum(
                    &schema,
                    &mut record.record.value.as_deref().unwrap(),
                    None,
                )
                .unwrap();
                apache_avro::from_value(&value).unwrap()
            })
            .collect()
    }

    /// The offsets the scorer's group committed on the points, summed over partitions.
    pub(crate) async fn committed_points(&self) -> u64 {
        self.backend
            .committed("scorer.in", "points")
            .await
            .unwrap()
            .into_iter()
            .flatten()
            .sum()
    }

    pub(crate) fn records(&self, topic: &str) -> Vec<ConsumedRecord> {
        self.backend.records(topic).unwrap()
    }
}

/// One run of the scorer.
pub(crate) struct Run {
    shutdown: CancellationToken,
    task: JoinHandle<runnel_streamlet::Result<()>>,
    metrics: Arc<InstanceMetrics>,
}

impl Run {
    /// The instance's counters, model metrics among them.
    pub(crate) fn metrics(&self) -> &InstanceMetrics {
        &self.metrics
    }

    /// What the scorer shows about itself in the status, by name.
    pub(crate) fn details(&self) -> std::collections::BTreeMap<String, String> {
        self.metrics.details().snapshot()
    }

    /// Waits until the run finished on its own (its inputs ended).
    pub(crate) async fn finished(self) {
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the scorer finishes")
            .unwrap()
            .unwrap();
    }

    /// Asks the scorer to stop and waits until it has.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        self.finished().await;
    }
}

/// Waits until `condition` holds; panics after 30 s.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `softmax(x · weights + bias)` computed directly.
pub(crate) fn expected(point: &Point, weights: &[[f32; 2]; 2], bias: [f32; 2]) -> [f32; 2] {
    let logits = [
        point.x * weights[0][0] + point.y * weights[1][0] + bias[0],
        point.x * weights[0][1] + point.y * weights[1][1] + bias[1],
    ];
    let top = logits[0].max(logits[1]);
    let exp = [(logits[0] - top).exp(), (logits[1] - top).exp()];
    let sum = exp[0] + exp[1];
    [exp[0] / sum, exp[1] / sum]
}

pub(crate) fn points(ids: std::ops::Range<i64>) -> Vec<Point> {
    ids.map(|id| Point {
        id,
        x: id as f32 * 0.1,
        y: 1.0 - id as f32 * 0.05,
    })
    .collect()
}

/// `value` as Runnel writes Avro: the datum alone.
fn avro<T: Serialize + AvroSchema>(value: &T) -> Vec<u8> {
    let schema = T::get_schema();
    apache_avro::to_avro_datum(&schema, apache_avro::to_value(value).unwrap()).unwrap()
}
