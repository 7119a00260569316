//! The SQL streamlet on the production host (the test kit): typed records in, the query's
//! results out, bad records to the dead-letter topic with the reason.

use std::sync::Arc;

use apache_avro::AvroSchema;
use runnel_host::testkit::TestRun;
use runnel_sql::{Query, SqlStreamlet, Table};
use runnel_streamlet::{Inlet, Outlet};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Reading {
    sensor: String,
    celsius: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Hot {
    sensor: String,
    fahrenheit: f64,
    share: i64,
}

const IN: Inlet<Reading> = Inlet::new("readings");
const OUT: Outlet<Hot> = Outlet::new("out");

fn streamlet(sql: &str) -> SqlStreamlet {
    let readings = Table::from_avro(
        "readings",
        &serde_json::to_value(Reading::get_schema()).unwrap(),
    )
    .unwrap();
    SqlStreamlet::new(Arc::new(Query::plan(sql, &[readings], "Hot").unwrap()))
}

fn reading(sensor: &str, celsius: f64) -> Reading {
    Reading {
        sensor: sensor.into(),
        celsius,
    }
}

#[tokio::test]
async fn results_come_out_typed_and_failures_go_to_dead_letters() -> anyhow::Result<()> {
    let streamlet = streamlet(
        "SELECT sensor, celsius * 9 / 5 + 32 AS fahrenheit, CAST(1000 / CAST(celsius AS BIGINT) AS BIGINT) AS share \
         FROM readings WHERE celsius > -100",
    );
    let inputs = vec![
        reading("a", 100.0),
        reading("b", -200.0),
        reading("c", 0.5), // 1000 / 0: the query fails on it
        reading("d", 50.0),
    ];
    let run = TestRun::new(streamlet).input(IN, inputs).run().await?;
    assert_eq!(
        run.output(OUT),
        [
            Hot {
                sensor: "a".into(),
                fahrenheit: 212.0,
                share: 10
            },
            Hot {
                sensor: "d".into(),
                fahrenheit: 122.0,
                share: 20
            },
        ]
    );
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let reason = dead[0]
        .record
        .headers
        .iter()
        .map(|header| String::from_utf8_lossy(&header.value).into_owned())
        .find(|value| value.contains("evaluating the query failed"))
        .expect("a header gives the reason");
    assert!(reason.contains("Divide by zero"), "{reason}");
    Ok(())
}

#[tokio::test]
async fn many_records_keep_their_order_across_batches() -> anyhow::Result<()> {
    let inputs: Vec<Reading> = (0..5_000)
        .map(|n| reading(&format!("s{n}"), f64::from(n)))
        .collect();
    let run = TestRun::new(streamlet(
        "SELECT sensor, celsius AS fahrenheit, 1 AS share FROM readings WHERE celsius % 2 = 0",
    ))
    .input(IN, inputs)
    .run()
    .await?;
    let sensors: Vec<String> = run.output(OUT).into_iter().map(|hot| hot.sensor).collect();
    let expected: Vec<String> = (0..5_000).step_by(2).map(|n| format!("s{n}")).collect();
    assert_eq!(sensors, expected);
    Ok(())
}

/// The readings of an older producer: `celsius` a float, no `unit`.
mod before {
    use super::*;

    /// The readings of the current producer.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[serde(rename = "Reading")]
    #[avro(name = "Reading")]
    pub(super) struct Current {
        pub(super) sensor: String,
        pub(super) celsius: f64,
        pub(super) unit: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    pub(super) struct Reading {
        pub(super) sensor: String,
        pub(super) celsius: f32,
    }
}

#[tokio::test]
async fn records_of_an_older_schema_are_resolved_to_the_tables() -> anyhow::Result<()> {
    let now = serde_json::json!({"type": "record", "name": "Reading", "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "celsius", "type": "double"},
        {"name": "unit", "type": "string", "default": "C"},
    ]});
    let readings = Table::from_avro("readings", &now)?;
    let query = Query::plan(
        "SELECT sensor, celsius AS fahrenheit, CASE WHEN unit = 'C' THEN 1 ELSE 0 END AS share FROM readings",
        &[readings],
        "Hot",
    )?;
    let old: Inlet<before::Reading> = Inlet::new("readings");
    let run = TestRun::new(SqlStreamlet::new(Arc::new(query)))
        .input(
            old,
            [before::Reading {
                sensor: "old".into(),
                celsius: 1.5,
            }],
        )
        .input(
            Inlet::new("readings"),
            [before::Current {
                sensor: "new".into(),
                celsius: 2.5,
                unit: "F".into(),
            }],
        )
        .input(
            old,
            [before::Reading {
                sensor: "old again".into(),
                celsius: 3.5,
            }],
        )
        .run()
        .await?;
    assert!(run.dead_letters().is_empty(), "{:?}", run.dead_letters());
    // In input order, old and new schemas mixed in one batch.
    assert_eq!(
        run.output(OUT),
        [
            Hot {
                sensor: "old".into(),
                fahrenheit: 1.5,
                share: 1
            },
            Hot {
                sensor: "new".into(),
                fahrenheit: 2.5,
                share: 0
            },
            Hot {
                sensor: "old again".into(),
                fahrenheit: 3.5,
                share: 1
            },
        ]
    );
    Ok(())
}
