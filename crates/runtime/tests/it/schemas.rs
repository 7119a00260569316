use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runnel_blueprint::verify;
use runnel_runtime::{LocalConfig, Registry, plan, run};
use runnel_streamlet::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::support::{console, memory, options};

/// The first version of a reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(name = "Reading")]
#[serde(rename = "Reading")]
struct ReadingV1 {
    id: i64,
}

/// The second version: a field added with a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
#[avro(name = "Reading")]
#[serde(rename = "Reading")]
struct ReadingV2 {
    id: i64,
    #[avro(default = "\"unknown\"")]
    #[serde(default)]
    unit: String,
}

const OLD: Outlet<ReadingV1> = Outlet::new("out");
const NEW: Outlet<ReadingV2> = Outlet::new("out");
const IN: Inlet<ReadingV2> = Inlet::new("in");

struct Emit<T: Data + Clone>(Outlet<T>, Vec<T>);

impl<T: Data + Clone> Streamlet for Emit<T> {
    fn shape(&self) -> Shape {
        Shape::new().outlet(self.0)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(self.0);
        for value in &self.1 {
            out.send(value).await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn producers_writing_different_schemas_to_one_topic_are_both_read() -> anyhow::Result<()> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let registry = Registry::new()
        .register("old", || Emit(OLD, vec![ReadingV1 { id: 1 }]))
        .register("new", || {
            Emit(
                NEW,
                vec![ReadingV2 {
                    id: 2,
                    unit: "celsius".into(),
                }],
            )
        })
        .register("reader", move || {
            let sink = sink.clone();
            Egress::new(IN, move |reading: ReadingV2| {
                sink.lock().unwrap().push(reading);
                async { Ok(()) }
            })
        });
    let text = r#"
name = "test"
[streamlets]
old = "old"
new = "new"
reader = "reader"
[topics.readings]
producers = ["old.out", "new.out"]
consumers = ["reader.in"]
"#;
    let descriptor = registry.descriptor("test");
    let verification = verify(Path::new("blueprint.toml"), text, &descriptor);
    let blueprint = verification
        .blueprint
        .expect("a compatible fan-in verifies");
    let plan = plan(&blueprint, &descriptor, &registry, &LocalConfig::default())?;
    assert!(
        plan.instances
            .iter()
            .flat_map(|i| &i.outlets)
            .all(|o| o.tag_schema)
    );
    let (_, backend) = memory();
    let run = run(
        plan,
        backend,
        options(),
        console(),
        CancellationToken::new(),
    );
    tokio::time::timeout(Duration::from_secs(20), run).await??;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|r| r.id);
    assert_eq!(
        seen,
        [
            ReadingV2 {
                id: 1,
                unit: "unknown".into()
            },
            ReadingV2 {
                id: 2,
                unit: "celsius".into()
            }
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_topic_written_outside_the_blueprint_is_read_with_its_declared_schema()
-> anyhow::Result<()> {
    use runnel_backend::{ProducerConfig, Record, TopicSpec};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let registry = Registry::new().register("reader", move || {
        let sink = sink.clone();
        Egress::new(IN, move |reading: ReadingV2| {
            sink.lock().unwrap().push(reading);
            async { Ok(()) }
        })
    });
    let old_schema = <ReadingV1 as AvroSchema>::get_schema();
    let text = format!(
        "name = \"test\"\n[streamlets]\nreader = \"reader\"\n[topics.readings]\nschema = '{}'\nconsumers = [\"reader.in\"]\n",
        serde_json::to_string(&old_schema)?
    );
    let descriptor = registry.descriptor("test");
    let verification = verify(Path::new("blueprint.toml"), &text, &descriptor);
    assert!(
        verification.diagnostics.is_empty(),
        "{:?}",
        verification.diagnostics
    );
    let blueprint = verification.blueprint.expect("it verifies");
    let plan = plan(&blueprint, &descriptor, &registry, &LocalConfig::default())?;

    // An outside client writes a record in the declared, older schema, without a header.
    let (_, backend) = memory();
    backend.create_topic(&TopicSpec::new("readings", 1)).await?;
    let producer = backend.producer(&ProducerConfig::default()).await?;
    let value =
        apache_avro::to_avro_datum(&old_schema, apache_avro::to_value(ReadingV1 { id: 7 })?)?;
    drop(producer.send("readings", 0, Record::new(value)).await?);
    producer.flush().await?;

    let stop = CancellationToken::new();
    let run = tokio::spawn(run(plan, backend, options(), console(), stop.clone()));
    tokio::time::timeout(Duration::from_secs(20), async {
        while seen.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), run).await???;
    assert_eq!(
        *seen.lock().unwrap(),
        [ReadingV2 {
            id: 7,
            unit: "unknown".into()
        }]
    );
    Ok(())
}
