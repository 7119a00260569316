use runnel_streamlet::dead_letter::{ERROR_HEADER, OFFSET_HEADER, STREAMLET_HEADER, TOPIC_HEADER};
use runnel_streamlet::prelude::*;
use runnel_streamlet::testkit::{TestError, TestRun};

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
    assert_eq!(dead[0].record.value, GARBAGE.to_vec());
    let headers = &dead[0].record.headers;
    assert!(
        headers
            .get_str(ERROR_HEADER)
            .unwrap()
            .starts_with("invalid avro for Reading")
    );
    assert_eq!(headers.get_str(TOPIC_HEADER), Some("in.in"));
    assert_eq!(headers.get_str(OFFSET_HEADER), Some("1"));
    assert_eq!(headers.get_str(STREAMLET_HEADER), Some("copy"));
    assert_eq!(run.metrics().dead_lettered(), 1);
    Ok(())
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
