//! Offsets reset to the earliest under a streamlet that keeps keyed state: the records its
//! checkpoint already covers are skipped without being decoded again, so a record that was
//! dead-lettered once is not dead-lettered twice.

use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{
    Backend, CommitOffset, ConsumerConfig, MemoryBackend, ProducerConfig, Record, TopicSpec,
};
use runnel_host::HostSettings;
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ValueState};
use tokio::sync::watch;

use crate::hosting::wiring;

const IN: Inlet<String> = Inlet::new("in");
const OUT: Outlet<i64> = Outlet::new("out");
const SEEN: ValueState<i64> = ValueState::new("seen");

/// Counts the words it reads, by word, and sends each count.
#[derive(Clone, Copy)]
struct WordCount;

impl Streamlet for WordCount {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut state = ctx.keyed_state()?.checkpoint_every(Duration::ZERO);
        while let Some(Keyed::Message(message)) = state.next(&mut input).await? {
            let mut entry = state.entry(message.partition(), message.value().as_bytes());
            let seen = entry.value(SEEN).update(|seen| seen.unwrap_or(0) + 1)?;
            output.send(&seen).await?;
            message.commit();
        }
        Ok(())
    }
}

/// Runs the word count over everything on `in` until it has read it all.
async fn run_to_end(backend: &MemoryBackend) {
    let (_ended, end_of_input) = watch::channel(true);
    runnel_host::run_instance(
        Box::new(WordCount),
        Arc::new(backend.clone()),
        wiring("count", end_of_input, HostSettings::default(), None),
        Arc::new(runnel_streamlet::SystemClock),
        Arc::new(runnel_streamlet::InstanceMetrics::for_shape(
            &WordCount.shape(),
        )),
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_reset_to_the_earliest_offset_does_not_dead_letter_what_the_checkpoint_covers() {
    let backend = MemoryBackend::new();
    for topic in ["in", "out", "dead"] {
        backend
            .create_topic(&TopicSpec::new(topic, 1))
            .await
            .unwrap();
    }
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let word = |text: &str| {
        apache_avro::to_avro_datum(&String::get_schema(), apache_avro::to_value(text).unwrap())
            .unwrap()
    };
    for value in [vec![0xff], word("runnel"), word("runnel")] {
        producer
            .send("in", 0, Record::new(value))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    run_to_end(&backend).await;
    let end = |topic: &'static str| {
        let backend = backend.clone();
        async move { backend.offsets(topic).await.unwrap()[0].end }
    };
    assert_eq!((end("out").await, end("dead").await), (2, 1));

    // reset-offsets --to-earliest --execute
    let group = backend
        .consumer(&ConsumerConfig::new("app.count.in", ["in"]))
        .await
        .unwrap();
    let earliest = CommitOffset {
        topic: "in".into(),
        partition: 0,
        offset: 0,
    };
    group.commit(&[earliest]).await.unwrap();
    group.close().await.unwrap();

    run_to_end(&backend).await;
    assert_eq!(
        (end("out").await, end("dead").await),
        (2, 1),
        "the checkpoint covers all three records: none is read again"
    );
}
