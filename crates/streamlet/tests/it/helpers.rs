use std::time::Duration;

use runnel_host::testkit::{TestRecord, TestRun};
use runnel_streamlet::prelude::*;

use crate::model::{IN, OUT, Reading, reading};

#[tokio::test]
async fn processor_maps_filters_and_fans_out() -> anyhow::Result<()> {
    let double = Processor::new(IN, OUT, |r: Reading| {
        if r.celsius < 0.0 {
            vec![]
        } else {
            vec![r.clone(), r]
        }
    });
    let run = TestRun::new(double)
        .input(IN, [reading("a", 1.0), reading("b", -1.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("a", 1.0), reading("a", 1.0)]);
    Ok(())
}

#[tokio::test]
async fn processor_keeps_event_time_and_keys_by_the_key_function() -> anyhow::Result<()> {
    const KEYED: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());
    let run = TestRun::new(Processor::new(IN, KEYED, Some))
        .partitions(4)
        .input_records(IN, [TestRecord::new(reading("s-1", 2.0)).timestamp(1_234)])
        .run()
        .await?;
    let out = run.records(KEYED);
    assert_eq!(out[0].timestamp, 1_234);
    assert_eq!(out[0].key.as_deref(), Some(&b"s-1"[..]));
    assert_eq!(
        out[0].partition,
        runnel_backend::partition_for_key(b"s-1", 4)
    );
    Ok(())
}

#[tokio::test]
async fn unkeyed_outputs_go_round_robin() -> anyhow::Result<()> {
    let values: Vec<Reading> = (0..8).map(|i| reading("x", f64::from(i))).collect();
    let run = TestRun::new(Processor::new(IN, OUT, Some))
        .partitions(4)
        .input(IN, values)
        .run()
        .await?;
    let mut per_partition = [0; 4];
    for record in run.records(OUT) {
        per_partition[record.partition as usize] += 1;
    }
    assert_eq!(per_partition, [2, 2, 2, 2]);
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Rejected {
    reading: Reading,
    reason: String,
}

const INVALID: Outlet<Rejected> = Outlet::new("invalid");
const VALID: Outlet<Reading> = Outlet::new("valid");

#[tokio::test]
async fn splitter_routes_left_and_right() -> anyhow::Result<()> {
    let validate = Splitter::new(IN, INVALID, VALID, |r: Reading| {
        if r.celsius > 100.0 {
            Either::Left(Rejected {
                reason: "too hot".into(),
                reading: r,
            })
        } else {
            Either::Right(r)
        }
    });
    let run = TestRun::new(validate)
        .input(IN, [reading("a", 20.0), reading("b", 900.0)])
        .run()
        .await?;
    assert_eq!(run.output(VALID), [reading("a", 20.0)]);
    assert_eq!(run.output(INVALID)[0].reason, "too hot");
    Ok(())
}

#[tokio::test]
async fn merge_forwards_every_inlet() -> anyhow::Result<()> {
    const NORTH: Inlet<Reading> = Inlet::new("north");
    const SOUTH: Inlet<Reading> = Inlet::new("south").json();
    let run = TestRun::new(Merge::new([NORTH, SOUTH], OUT))
        .input(NORTH, [reading("n", 1.0), reading("n", 2.0)])
        .input(SOUTH, [reading("s", 3.0)])
        .run()
        .await?;
    let mut sensors: Vec<String> = run.output(OUT).into_iter().map(|r| r.sensor).collect();
    sensors.sort();
    assert_eq!(sensors, ["n", "n", "s"]);
    Ok(())
}

#[tokio::test]
async fn async_map_emits_in_input_order_whatever_the_call_order() -> anyhow::Result<()> {
    let slow_first = AsyncMap::new(IN, OUT, 4, |r: Reading| async move {
        // Earlier inputs take longer, so calls finish in reverse order.
        tokio::time::sleep(Duration::from_millis(50 - r.celsius as u64 * 10)).await;
        Ok(r)
    });
    let inputs: Vec<Reading> = (0..5).map(|i| reading("x", f64::from(i))).collect();
    let run = TestRun::new(slow_first)
        .input(IN, inputs.clone())
        .run()
        .await?;
    assert_eq!(run.output(OUT), inputs);
    Ok(())
}

#[tokio::test]
async fn egress_sees_every_value() -> anyhow::Result<()> {
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
    let sink = Egress::new(IN, move |r: Reading| {
        let sender = sender.clone();
        async move {
            sender.send(r.sensor).map_err(Error::external)?;
            Ok(())
        }
    });
    TestRun::new(sink)
        .input(IN, [reading("a", 1.0), reading("b", 2.0)])
        .run()
        .await?;
    assert_eq!(received.recv().await.as_deref(), Some("a"));
    assert_eq!(received.recv().await.as_deref(), Some("b"));
    Ok(())
}

#[tokio::test]
async fn helpers_forward_input_headers_except_runnels_own() -> anyhow::Result<()> {
    let input = TestRecord::new(reading("a", 1.0))
        .header("traceparent", "00-abc-01")
        .header("runnel.dead-letter.error", "an earlier rejection");
    let run = TestRun::new(Processor::new(IN, OUT, Some))
        .input_records(IN, [input])
        .run()
        .await?;
    let headers = &run.records(OUT)[0].headers;
    assert_eq!(headers.get_str("traceparent"), Some("00-abc-01"));
    assert_eq!(headers.get("runnel.dead-letter.error"), None);
    Ok(())
}

#[tokio::test]
async fn an_outlet_can_drop_input_headers() -> anyhow::Result<()> {
    const BARE: Outlet<Reading> = Outlet::new("out").without_input_headers();
    let input = TestRecord::new(reading("a", 1.0)).header("traceparent", "00-abc-01");
    let run = TestRun::new(Processor::new(IN, BARE, Some))
        .input_records(IN, [input])
        .run()
        .await?;
    assert!(run.records(BARE)[0].headers.is_empty());
    Ok(())
}
