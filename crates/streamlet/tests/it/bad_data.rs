use runnel_backend::Record;
use runnel_host::testkit::{TestError, TestRun};
use runnel_streamlet::dead_letter::{
    ERROR_HEADER, OFFSET_HEADER, STREAMLET_HEADER, TOPIC_HEADER, TRUNCATED_HEADER,
    TRUNCATED_VALUE_BYTES,
};
use runnel_streamlet::prelude::*;

use crate::model::{IN, OUT, Reading, reading};

const GARBAGE: [u8; 5] = [0xff, 0xff, 0xff, 0xff, 0x0f];

#[tokio::test]
async fn undecodable_records_go_to_the_dead_letter_topic_with_their_origin() -> anyhow::Result<()> {
    let run = TestRun::new(Processor::new(IN, OUT, Some))
        .instance("copy")
        .input(IN, [reading("a", 1.0)])
        .raw_input(IN, [GARBAGE.to_vec()])
        .input(IN, [reading("b", 2.0)])
        .run()
        .await?;
    assert_eq!(
        run.output(OUT),
        [reading("a", 1.0), reading("b", 2.0)],
        "the pipeline goes on"
    );
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].record.value.as_deref(), Some(&GARBAGE[..]));
    let headers = &dead[0].record.headers;
    assert!(
        headers
            .get_str(ERROR_HEADER)
            .unwrap()
            .starts_with("does not decode: invalid avro for Reading")
    );
    assert_eq!(headers.get_str(TOPIC_HEADER), Some("in.in"));
    assert_eq!(headers.get_str(OFFSET_HEADER), Some("1"));
    assert_eq!(headers.get_str(STREAMLET_HEADER), Some("copy"));
    assert_eq!(run.metrics().dead_lettered(), 1);
    Ok(())
}

#[tokio::test]
async fn a_null_value_is_dead_lettered_null_and_an_empty_one_empty() -> anyhow::Result<()> {
    let tombstone = Record::null().with_key("sensor-1").with_timestamp(7);
    let empty = Record::new("").with_key("sensor-2").with_timestamp(8);
    let run = TestRun::new(Processor::new(IN, OUT, Some))
        .instance("copy")
        .raw_records(IN, [tombstone, empty])
        .input(IN, [reading("a", 1.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("a", 1.0)], "the pipeline goes on");
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 2);
    let (null, empty) = (&dead[0].record, &dead[1].record);

    assert_eq!(
        null.value, None,
        "a null value stays null in its dead letter"
    );
    assert_eq!(null.key.as_deref(), Some(&b"sensor-1"[..]));
    assert_eq!(null.timestamp, 7);
    assert_eq!(null.headers.get_str(OFFSET_HEADER), Some("0"));
    assert_eq!(null.headers.get_str(TOPIC_HEADER), Some("in.in"));
    assert_eq!(
        null.headers.get_str(ERROR_HEADER),
        Some(
            "does not decode: value is null (a tombstone), and the avro codec of Reading needs a value"
        )
    );

    assert_eq!(
        empty.value.as_deref(),
        Some(&b""[..]),
        "an empty value stays empty, not null"
    );
    assert_eq!(empty.key.as_deref(), Some(&b"sensor-2"[..]));
    assert_eq!(empty.headers.get_str(OFFSET_HEADER), Some("1"));
    let reason = empty.headers.get_str(ERROR_HEADER).unwrap();
    assert!(
        reason.starts_with("does not decode: ") && !reason.contains("null"),
        "{reason}"
    );
    assert_eq!(run.metrics().dead_lettered(), 2);
    Ok(())
}

#[tokio::test]
async fn the_fail_policy_names_a_null_value_and_where_it_was_read() {
    const STRICT: Inlet<Reading> = Inlet::new("in").json().on_bad_data(BadDataPolicy::Fail);
    let outcome = TestRun::new(Processor::new(STRICT, OUT, Some))
        .input(STRICT, [reading("a", 1.0)])
        .raw_records(STRICT, [Record::null()])
        .run()
        .await;
    match outcome {
        Err(TestError::Streamlet { kind, message }) => {
            assert_eq!(kind, runnel_streamlet::ErrorKind::BadData);
            assert_eq!(
                message,
                "record at offset 1 of in.in/0 on inlet 'in' does not decode: value is null (a tombstone), and the json codec of Reading needs a value"
            );
        }
        other => panic!("expected the streamlet to fail, got {other:?}"),
    }
}

#[tokio::test]
async fn the_skip_policy_counts_and_goes_on() -> anyhow::Result<()> {
    const LENIENT: Inlet<Reading> = Inlet::new("in").on_bad_data(BadDataPolicy::Skip);
    let run = TestRun::new(Processor::new(LENIENT, OUT, Some))
        .raw_input(LENIENT, [GARBAGE.to_vec()])
        .input(LENIENT, [reading("a", 1.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("a", 1.0)]);
    assert!(run.dead_letters().is_empty());
    assert_eq!(run.metrics().skipped(), 1);
    Ok(())
}

#[tokio::test]
async fn the_fail_policy_fails_the_streamlet_naming_the_record() {
    const STRICT: Inlet<Reading> = Inlet::new("in").json().on_bad_data(BadDataPolicy::Fail);
    let outcome = TestRun::new(Processor::new(STRICT, OUT, Some))
        .raw_input(STRICT, [b"{not json".to_vec()])
        .run()
        .await;
    match outcome {
        Err(TestError::Streamlet { kind, message }) => {
            assert_eq!(kind, runnel_streamlet::ErrorKind::BadData);
            assert!(
                message.starts_with(
                    "record at offset 0 of in.in/0 on inlet 'in' does not decode: invalid json"
                ),
                "{message}"
            );
        }
        other => panic!("expected the streamlet to fail, got {other:?}"),
    }
}

/// A reading whose sensor name is `bytes` long.
fn large(bytes: usize) -> Reading {
    reading(&"x".repeat(bytes), 0.0)
}

#[tokio::test]
async fn an_input_whose_output_is_too_large_goes_to_the_dead_letter_topic() -> anyhow::Result<()> {
    // Doubles the sensor name: the output of a 600-byte input does not fit in 1000 bytes.
    let double = Processor::new(IN, OUT, |r: Reading| {
        Some(reading(&r.sensor.repeat(2), r.celsius))
    });
    let run = TestRun::new(double)
        .max_record_bytes(1000)
        .input(IN, [reading("a", 1.0), large(600), reading("b", 2.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("aa", 1.0), reading("bb", 2.0)]);
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let headers = &dead[0].record.headers;
    assert_eq!(headers.get_str(OFFSET_HEADER), Some("1"));
    let reason = headers.get_str(ERROR_HEADER).unwrap();
    assert!(
        reason.starts_with("could not be processed: record of ")
            && reason.ends_with(
                "for topic 'out.out' partition 0 is larger than the limit of 1000 bytes"
            ),
        "{reason}"
    );
    assert_eq!(run.metrics().dead_lettered(), 1);
    Ok(())
}

#[tokio::test]
async fn a_record_too_large_to_dead_letter_whole_is_dead_lettered_truncated() -> anyhow::Result<()>
{
    // 60,000 bytes of garbage fit the input topic, but not the 50,000-byte dead-letter topic.
    let garbage = vec![0xff_u8; 60_000];
    let run = TestRun::new(Processor::new(IN, OUT, Some))
        .max_record_bytes(50_000)
        .raw_input(IN, [garbage.clone()])
        .input(IN, [reading("a", 1.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("a", 1.0)], "the pipeline goes on");
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    let letter = &dead[0].record;
    assert_eq!(
        letter.value.as_deref(),
        Some(&garbage[..TRUNCATED_VALUE_BYTES])
    );
    assert_eq!(letter.headers.get_str(TRUNCATED_HEADER), Some("60000"));
    assert_eq!(letter.headers.get_str(OFFSET_HEADER), Some("0"));
    assert!(
        letter
            .headers
            .get_str(ERROR_HEADER)
            .unwrap()
            .starts_with("does not decode: ")
    );
    Ok(())
}

#[tokio::test]
async fn bad_data_errors_of_a_fallible_processor_reject_the_input() -> anyhow::Result<()> {
    let checked = Processor::try_new(IN, OUT, |r: Reading| {
        if r.celsius.is_nan() {
            return Err(Error::bad_data(std::io::Error::other("not a number")));
        }
        Ok(Some(r))
    });
    let run = TestRun::new(checked)
        .input(IN, [reading("a", f64::NAN), reading("b", 2.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("b", 2.0)]);
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0].record.headers.get_str(ERROR_HEADER),
        Some("could not be processed: not a number")
    );
    Ok(())
}

#[tokio::test]
async fn other_errors_of_a_fallible_processor_fail_the_streamlet() {
    let failing = Processor::try_new(IN, OUT, |_: Reading| -> Result<Option<Reading>> {
        Err(Error::msg("the lookup table is missing"))
    });
    let outcome = TestRun::new(failing)
        .input(IN, [reading("a", 1.0)])
        .run()
        .await;
    match outcome {
        Err(TestError::Streamlet { kind, message }) => {
            assert_eq!(kind, runnel_streamlet::ErrorKind::Internal);
            assert_eq!(message, "the lookup table is missing");
        }
        other => panic!("expected the streamlet to fail, got {other:?}"),
    }
}

/// Rejects readings of unknown sensors with `Message::reject`.
struct KnownSensors;

impl Streamlet for KnownSensors {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let (mut readings, out) = (ctx.inlet(IN), ctx.outlet(OUT));
        while let Some(message) = readings.next().await? {
            if message.value().sensor.starts_with("unknown") {
                let sensor = message.value().sensor.clone();
                message
                    .reject(format!("sensor '{sensor}' is not registered"))
                    .await?;
            } else {
                out.send(message.value()).await?;
                message.commit();
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_streamlet_can_reject_a_message() -> anyhow::Result<()> {
    let run = TestRun::new(KnownSensors)
        .input(IN, [reading("unknown-1", 1.0), reading("a", 2.0)])
        .run()
        .await?;
    assert_eq!(run.output(OUT), [reading("a", 2.0)]);
    let dead = run.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0].record.headers.get_str(ERROR_HEADER),
        Some("was rejected by the streamlet: sensor 'unknown-1' is not registered")
    );
    // The record as it was read: the Avro encoding holds the sensor name as UTF-8.
    let value = dead[0].record.value.as_deref().unwrap();
    assert!(value.windows(9).any(|bytes| bytes == b"unknown-1"));
    Ok(())
}
