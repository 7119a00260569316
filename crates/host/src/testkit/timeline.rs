//! Timed runs: inputs and watermarks scheduled at processing times, fed one step at a time
//! on a paused tokio clock, with outputs recorded at the processing time they appear.
//!
//! Determinism comes from tokio's paused clock: time there moves only when every task is
//! waiting, so sleeping 1 ms returns once the streamlet has done everything the last step
//! allowed ([`settle`]). Processing time itself is a [`ManualClock`] that the driver moves
//! from one deadline the streamlet asked for to the next, so timers fire at their own time,
//! in order, before the step that follows them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use runnel_backend::{Backend, ConsumedRecord, ConsumerConfig, MemoryBackend, Record};
use tokio_util::sync::CancellationToken;

use super::ManualClock;
use runnel_streamlet::Clock;

/// Something a test run does at a processing time.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    /// Appends a record to an inlet's topic; `stamped` says whether it has its own event
    /// timestamp, or takes the processing time it is fed at.
    Record {
        inlet: &'static str,
        record: Record,
        stamped: bool,
        partition: Option<u32>,
    },
    /// Sets the streamlet's watermark.
    Watermark(i64),
}

/// An action and when it happens (`None`: before the streamlet starts).
#[derive(Clone, Debug)]
pub(crate) struct Scheduled {
    pub(crate) at: Option<i64>,
    pub(crate) action: Action,
}

/// Lets every task run until none can go on: on the paused clock a sleep completes only
/// once the runtime is idle.
pub(crate) async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// Moves processing time to `to`, stopping at every deadline on the way so each timer fires
/// at its own time.
pub(crate) async fn advance(clock: &ManualClock, to: i64) {
    while let Some(deadline) = clock.next_deadline(to) {
        clock.set(deadline);
        settle().await;
    }
    if to > clock.now_millis() {
        clock.set(to);
        settle().await;
    }
}

/// Per topic, each record with the processing time it appeared.
pub(crate) type Seen = HashMap<String, Vec<(i64, ConsumedRecord)>>;

/// Records every record appended to some topics, with the processing time it appeared.
#[derive(Debug)]
pub(crate) struct Observers {
    seen: Arc<Mutex<Seen>>,
    stop: CancellationToken,
}

impl Observers {
    pub(crate) async fn start(
        backend: &MemoryBackend,
        topics: &[String],
        clock: Arc<ManualClock>,
    ) -> Result<Self, runnel_backend::Error> {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let stop = CancellationToken::new();
        for topic in topics {
            let consumer = backend
                .consumer(&ConsumerConfig::new(
                    format!("testkit-observer.{topic}"),
                    [topic],
                ))
                .await?;
            let (seen, stop, clock, topic) =
                (seen.clone(), stop.clone(), clock.clone(), topic.clone());
            tokio::spawn(async move {
                loop {
                    let polled = tokio::select! {
                        () = stop.cancelled() => return,
                        polled = consumer.poll(1024) => polled,
                    };
                    let Ok(records) = polled else { return };
                    let at = clock.now_millis();
                    seen.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .entry(topic.clone())
                        .or_insert_with(Vec::new)
                        .extend(records.into_iter().map(|record| (at, record)));
                }
            });
        }
        Ok(Observers { seen, stop })
    }

    /// Stops observing and returns what was seen.
    pub(crate) async fn finish(self) -> Seen {
        settle().await;
        self.stop.cancel();
        settle().await;
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
