//! Python streamlets (the `runnel.examples` module of the package the host carries) run by
//! the host: outputs, parameters, dead letters with tracebacks, a process that dies, and
//! state restored from a checkpoint.

use std::collections::HashMap;
use std::sync::Arc;

use runnel_backend::{Backend, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec};
use runnel_host::testkit::TestRun;
use runnel_host::{HostSettings, InletWiring, OutletWiring, Wiring};
use runnel_python::{PythonCommand, PythonError, PythonStreamlet};
use runnel_streamlet::prelude::*;
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(namespace = "runnel.examples")]
struct Reading {
    sensor: String,
    celsius: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(namespace = "runnel.examples")]
struct Total {
    sensor: String,
    count: i64,
    sum: f64,
}

fn reading(sensor: &str, celsius: f64) -> Reading {
    Reading {
        sensor: sensor.into(),
        celsius,
    }
}

async fn streamlet(reference: &str) -> PythonStreamlet {
    PythonStreamlet::describe(PythonCommand::new(reference))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_python_map_passes_what_it_returns_with_its_parameters() {
    const IN: Inlet<Reading> = Inlet::new("in");
    const OUT: Outlet<Reading> = Outlet::new("out");
    let run = TestRun::new(streamlet("runnel.examples:too_hot").await)
        .parameter("limit", "20")
        .input(
            IN,
            [reading("a", 25.0), reading("b", 12.0), reading("c", 21.5)],
        )
        .run()
        .await
        .unwrap();
    assert_eq!(run.output(OUT), [reading("a", 25.0), reading("c", 21.5)]);
    assert!(run.dead_letters().is_empty());
}

#[tokio::test]
async fn an_exception_sends_its_record_to_the_dead_letters_with_the_traceback() {
    const IN: Inlet<Reading> = Inlet::new("in");
    const OUT: Outlet<Reading> = Outlet::new("out");
    let run = TestRun::new(streamlet("runnel.examples:too_hot").await)
        .input(
            IN,
            [
                reading("a", 35.0),
                reading("b", f64::NAN),
                reading("c", 45.0),
            ],
        )
        .run()
        .await
        .unwrap();
    assert_eq!(run.output(OUT), [reading("a", 35.0), reading("c", 45.0)]);
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let header = |key| {
        dead[0]
            .record
            .headers
            .get_str(key)
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("runnel.dead-letter.offset"), "1");
    let reason = header("runnel.dead-letter.error");
    assert!(reason.contains("ValueError: sensor b sent NaN"), "{reason}");
    assert!(reason.contains("Traceback"), "{reason}");
}

#[tokio::test]
async fn a_streamlet_that_does_not_import_says_so_when_described() {
    let error = PythonStreamlet::describe(PythonCommand::new("no_such_module:thing"))
        .await
        .unwrap_err();
    assert!(matches!(error, PythonError::Describe { .. }));
    assert!(
        error
            .to_string()
            .contains("No module named 'no_such_module'"),
        "{error}"
    );
}

/// The wiring of instance `totals`: `readings` from topic `in`, `totals` to `out`.
fn totals_wiring() -> Wiring {
    let (_, ended) = tokio::sync::watch::channel(true);
    Wiring {
        app: "app".into(),
        instance: "totals".into(),
        inlets: vec![InletWiring {
            port: "readings".into(),
            topic: "in".into(),
            group: "app.totals.in".into(),
            writer_schemas: vec![],
            end_of_input: ended,
            consumer_settings: Default::default(),
        }],
        outlets: vec![OutletWiring {
            port: "totals".into(),
            topic: "out".into(),
            tag_schema: false,
        }],
        dead_letter_topic: "dead".into(),
        parameters: HashMap::new(),
        settings: HostSettings::default(),
        ready: None,
        watermarks: None,
        transactional_id: None,
        static_member: None,
        attempts: Default::default(),
    }
}

async fn produce(backend: &Arc<dyn Backend>, readings: &[Reading]) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = Reading::get_schema();
    for reading in readings {
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(reading).unwrap()).unwrap();
        drop(producer.send("in", 0, Record::new(value)).await.unwrap());
    }
    producer.flush().await.unwrap();
}

async fn totals(backend: &Arc<dyn Backend>) -> Vec<Total> {
    let records = backend
        .consumer(&ConsumerConfig::new("check", ["out"]))
        .await
        .unwrap();
    let end = backend.offsets("out").await.unwrap()[0].end;
    let schema = Total::get_schema();
    let mut read = Vec::new();
    while (read.len() as u64) < end {
        for consumed in records.poll(100).await.unwrap() {
            let bytes = consumed.record.value.unwrap();
            let value = apache_avro::from_avro_datum(&schema, &mut &bytes[..], None).unwrap();
            read.push(apache_avro::from_value(&value).unwrap());
        }
    }
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_python_streamlet_resumes_from_its_checkpoint() {
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    for topic in ["in", "out", "dead"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let run = |streamlet: PythonStreamlet| {
        let backend = backend.clone();
        async move {
            let shape = Streamlet::shape(&streamlet);
            runnel_host::run_instance(
                Box::new(streamlet),
                backend,
                totals_wiring(),
                Arc::new(SystemClock),
                Arc::new(InstanceMetrics::for_shape(&shape)),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        }
    };
    let totals_streamlet = streamlet("runnel.examples:Totals").await;
    produce(
        &backend,
        &[reading("a", 1.0), reading("b", 2.0), reading("a", 3.0)],
    )
    .await;
    run(totals_streamlet.clone()).await;
    // A new process: the totals go on from the checkpoint the first wrote as it ended.
    produce(&backend, &[reading("a", 10.0)]).await;
    run(totals_streamlet).await;
    let total = |sensor: &str, count, sum| Total {
        sensor: sensor.into(),
        count,
        sum,
    };
    assert_eq!(
        totals(&backend).await,
        [
            total("a", 1, 1.0),
            total("b", 1, 2.0),
            total("a", 2, 4.0),
            total("a", 3, 14.0),
        ]
    );
}

#[tokio::test]
async fn a_process_that_dies_fails_the_instance_with_its_status_and_last_words() {
    const IN: Inlet<Reading> = Inlet::new("in");
    let command = PythonCommand::new("crashing:crash_on")
        .module_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/modules"));
    let streamlet = PythonStreamlet::describe(command).await.unwrap();
    let error = TestRun::new(streamlet)
        .input(IN, [reading("a", 1.0), reading("crash", 2.0)])
        .run()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "the process of Python streamlet 'crashing:crash_on' exited (exit status: 3)"
        ),
        "{error}"
    );
    assert!(error.contains("about to crash on purpose"), "{error}");
}

/// The arrow form: the host decodes the batch into Arrow for pyarrow and encodes the tables
/// the streamlet emits, with the keys of their key column.
#[cfg(feature = "arrow")]
#[tokio::test]
async fn an_arrow_streamlet_gets_tables_and_its_tables_become_records_with_keys() {
    const IN: Inlet<Reading> = Inlet::new("readings");
    const OUT: Outlet<Reading> = Outlet::new("warmer");
    let run = TestRun::new(streamlet("runnel.arrow_examples:WarmerArrow").await)
        .input(IN, [reading("a", 20.0), reading("b", -1.5)])
        .run()
        .await
        .unwrap();
    let received = run.records(OUT);
    let sent: Vec<(Option<&[u8]>, &Reading)> = received
        .iter()
        .map(|record| (record.key.as_deref(), &record.value))
        .collect();
    assert_eq!(
        sent,
        [
            (Some(&b"a"[..]), &reading("a", 21.0)),
            (Some(&b"b"[..]), &reading("b", -0.5)),
        ]
    );
}

/// A failing Arrow batch is run row by row in Python: only the bad row is a dead letter.
#[cfg(feature = "arrow")]
#[tokio::test]
async fn an_arrow_streamlet_failing_on_one_row_dead_letters_that_row_only() {
    const IN: Inlet<Reading> = Inlet::new("readings");
    const OUT: Outlet<Reading> = Outlet::new("hot");
    let run = TestRun::new(streamlet("runnel.arrow_examples:HotArrow").await)
        .parameter("limit", "20")
        .input(
            IN,
            [
                reading("a", 25.0),
                reading("b", f64::NAN),
                reading("c", 10.0),
            ],
        )
        .run()
        .await
        .unwrap();
    assert_eq!(run.output(OUT), [reading("a", 25.0)]);
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let reason = dead[0]
        .record
        .headers
        .get_str("runnel.dead-letter.error")
        .unwrap_or_default();
    assert!(reason.contains("ValueError: a reading is NaN"), "{reason}");
}
