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
