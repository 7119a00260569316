//! Queries of keyed state through the instance's [`StateQueries`]: the running streamlet
//! answers with the state a key has after its messages, its pending timers and the state
//! size; when a second member joins the group, the member holding the key's partition
//! answers with the (restored) state and the other says which partition it lacks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_backend::{
    Backend, MemoryBackend, ProducerConfig, Record, TopicSpec, partition_for_key,
};
use runnel_host::HostSettings;
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{
    KeyState, Keyed, MapState, QueryError, StateQueries, TimeDomain, ValueState,
};
use runnel_streamlet::{InstanceMetrics, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::hosting;

const PARTITIONS: u32 = 2;
const ASK: Duration = Duration::from_secs(5);

/// A word seen in some text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Word {
    word: String,
    text: String,
}

const IN: Inlet<Word> = Inlet::new("in");
const OUT: Outlet<Word> = Outlet::new("out");
/// Per word: how often it was seen.
const COUNT: ValueState<u64> = ValueState::new("count");
/// Per word: how often each text had it.
const TEXTS: MapState<String, u64> = MapState::new("texts");

/// Counts words per word and text; sets an event-time timer far ahead for each word.
struct Words;

impl Streamlet for Words {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).outlet(OUT).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        // `texts` is left to be declared by its first use.
        let mut state = ctx
            .keyed_state()?
            .checkpoint_every(Duration::from_millis(20))
            .declare(COUNT);
        while let Some(next) = state.next(&mut input).await? {
            let Keyed::Message(message) = next else {
                continue;
            };
            let word = message.value().clone();
            let mut entry = state.entry(message.partition(), word.word.as_bytes());
            entry.value(COUNT).update(|count| count.unwrap_or(0) + 1)?;
            let mut texts = entry.map(TEXTS);
            let seen = texts.get(&word.text)?.unwrap_or(0);
            texts.insert(&word.text, &(seen + 1))?;
            entry.set_timer(TimeDomain::EventTime, i64::MAX - 1);
            output.send(&word).await?;
            message.commit();
        }
        Ok(())
    }
}

fn word(word: &str, text: &str) -> Word {
    Word {
        word: word.into(),
        text: text.into(),
    }
}

/// Appends `words`, each on the partition its word hashes to (as a keyed outlet would).
async fn produce(backend: &MemoryBackend, words: &[Word]) {
    let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
    let schema = <Word as AvroSchema>::get_schema();
    for word in words {
        let partition = partition_for_key(word.word.as_bytes(), PARTITIONS);
        let value =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(word).unwrap()).unwrap();
        let record = Record::new(value).with_key(word.word.clone());
        drop(producer.send("in", partition, record).await.unwrap());
    }
    producer.flush().await.unwrap();
}

/// A member of the `words` group, running on this runtime until `stop` fires.
fn start(
    backend: &MemoryBackend,
    ended: watch::Receiver<bool>,
    stop: CancellationToken,
) -> (Arc<InstanceMetrics>, JoinHandle<Result<()>>) {
    let metrics = Arc::new(InstanceMetrics::for_shape(&Streamlet::shape(&Words)));
    let settings = HostSettings {
        commit_interval: Duration::from_millis(10),
        ..HostSettings::default()
    };
    let running = tokio::spawn(runnel_host::run_instance(
        Box::new(Words),
        Arc::new(backend.clone()),
        hosting::wiring("words", ended, settings, None),
        Arc::new(SystemClock),
        metrics.clone(),
        stop,
    ));
    (metrics, running)
}

/// Asks `queries` about `key` until the answer satisfies `condition` (at most 20 s).
async fn ask_until(
    queries: &StateQueries,
    key: &str,
    what: &str,
    condition: impl Fn(&KeyState) -> bool,
) -> KeyState {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = queries.ask(key.as_bytes().to_vec(), ASK).await;
        match answer {
            Ok(state) if condition(&state) => return state,
            other => assert!(
                Instant::now() < deadline,
                "the query for '{key}' never showed {what}; last answer: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of state `name` in an answer.
fn value_of(state: &KeyState, name: &str) -> Option<serde_json::Value> {
    state
        .states
        .iter()
        .find(|entry| entry.name == name)
        .map(|entry| entry.value.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_sees_the_state_after_the_messages_and_the_owner_answers_after_a_rebalance() {
    let backend = MemoryBackend::new();
    for (topic, partitions) in [("in", PARTITIONS), ("out", 1), ("dead", 1)] {
        backend
            .create_topic(&TopicSpec::new(topic, partitions))
            .await
            .unwrap();
    }
    let (_end, ended) = watch::channel(false);
    let stop = CancellationToken::new();
    let (first, first_running) = start(&backend, ended.clone(), stop.clone());
    let queries = first.state_queries();
    assert!(queries.is_keyed());

    produce(
        &backend,
        &[
            word("river", "a"),
            word("stone", "a"),
            word("river", "b"),
            word("river", "a"),
        ],
    )
    .await;
    let river = ask_until(queries, "river", "three rivers", |state| {
        value_of(state, "count") == Some(serde_json::json!(3))
    })
    .await;
    assert!(river.owner, "one member holds every partition: {river:?}");
    assert_eq!(river.held, vec![0, 1]);
    assert_eq!(river.partitions, PARTITIONS);
    let partition = partition_for_key(b"river", PARTITIONS);
    assert_eq!(river.partition, Some(partition));
    assert_eq!(
        value_of(&river, "texts"),
        Some(serde_json::json!([["a", 2], ["b", 1]]))
    );
    assert!(
        river
            .states
            .iter()
            .all(|entry| entry.partition == partition)
    );
    assert_eq!(river.timers.len(), 1, "{river:?}");
    assert_eq!(
        (river.timers[0].domain.as_str(), river.timers[0].time),
        ("event-time", i64::MAX - 1)
    );
    let nothing = queries
        .ask(b"lake".to_vec(), ASK)
        .await
        .expect("a key without state is answered");
    assert!(nothing.states.is_empty() && nothing.timers.is_empty());

    // The size comes with the checkpoints: two words' counts, three text counts, two timers.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let size = queries.size();
        if size.as_ref().is_some_and(|size| size.entries == 7) {
            let size = size.unwrap();
            assert_eq!(size.partitions, vec![0, 1]);
            assert!(size.bytes > 0);
            break;
        }
        assert!(Instant::now() < deadline, "the size stayed {size:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Every input committed, so its checkpoint is durable: a new owner restores it and
    // reads nothing again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let committed: u64 = backend
            .committed("app.words.in", "in")
            .await
            .unwrap()
            .into_iter()
            .map(Option::unwrap_or_default)
            .sum();
        if committed == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {committed} of 4 inputs committed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A second member joins: the group gives each one partition, and the member holding
    // the key's partition answers with its state (restoring it from the checkpoint and the
    // changelog if it was just given the partition); the other says which one it lacks.
    let (second, second_running) = start(&backend, ended.clone(), stop.clone());
    let members = [first.state_queries(), second.state_queries()];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut answers = Vec::new();
        for member in members {
            answers.push(member.ask(b"river".to_vec(), ASK).await);
        }
        let split = answers
            .iter()
            .all(|answer| answer.as_ref().is_ok_and(|state| state.held.len() == 1));
        if split {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the partitions were never split: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(
        partition,
        partition_for_key(b"stone", PARTITIONS),
        "the test's words are on different partitions, so each member owns one"
    );
    // Each word is answered by the member holding its partition: the first member kept one
    // of them, the second restored the other when asked. The second has not used `texts`
    // (no message came since it started), so it lists it without a value.
    let mut fresh = 0;
    let mut seen = Vec::new();
    for (key, count, texts, stored) in [
        ("river", 3, serde_json::json!([["a", 2], ["b", 1]]), 2),
        ("stone", 1, serde_json::json!([["a", 1]]), 1),
    ] {
        let mut answers = Vec::new();
        for member in members {
            answers.push(member.ask(key.as_bytes().to_vec(), ASK).await.unwrap());
        }
        let (owners, others): (Vec<KeyState>, Vec<KeyState>) =
            answers.into_iter().partition(|state| state.owner);
        assert_eq!(
            (owners.len(), others.len()),
            (1, 1),
            "exactly one owner of {key}"
        );
        let (owner, other) = (&owners[0], &others[0]);
        seen.push(owner.clone());
        let partition = partition_for_key(key.as_bytes(), PARTITIONS);
        assert_eq!(owner.held, vec![partition]);
        assert_eq!(
            value_of(owner, "count"),
            Some(serde_json::json!(count)),
            "{owner:?}"
        );
        let texts_entry = owner
            .states
            .iter()
            .find(|entry| entry.name == "texts")
            .unwrap();
        if texts_entry.value.is_null() {
            fresh += 1;
            assert_eq!(
                texts_entry.error.as_deref(),
                Some(format!("{stored} map entries stored, of a type not known here: the streamlet has not used this state since it started (`KeyedState::declare` makes it known from the start)").as_str())
            );
        } else {
            assert_eq!(texts_entry.value, texts);
        }
        assert_eq!(owner.timers.len(), 1);
        assert_eq!(other.held, vec![1 - partition]);
        assert!(other.states.is_empty() && other.timers.is_empty());
        assert_eq!(
            other.message.as_deref(),
            Some(
                format!(
                    "key '{key}' is on input partition {partition} of 2, which this member does not hold (it holds {}): ask the member that holds it",
                    1 - partition
                )
                .as_str()
            )
        );
    }
    assert_eq!(
        fresh, 1,
        "the member that just joined owns one word: {seen:?}"
    );
    // Once a message comes, every member knows `texts`.
    produce(&backend, &[word("river", "d"), word("stone", "d")]).await;
    for (key, texts) in [
        ("river", serde_json::json!([["a", 2], ["b", 1], ["d", 1]])),
        ("stone", serde_json::json!([["a", 1], ["d", 1]])),
    ] {
        let partition = partition_for_key(key.as_bytes(), PARTITIONS);
        let owner = if members[0]
            .ask(key.as_bytes().to_vec(), ASK)
            .await
            .unwrap()
            .held
            == [partition]
        {
            members[0]
        } else {
            members[1]
        };
        ask_until(owner, key, "the new text decoded", |state| {
            value_of(state, "texts") == Some(texts.clone())
        })
        .await;
    }

    stop.cancel();
    first_running.await.unwrap().unwrap();
    second_running.await.unwrap().unwrap();
    assert_eq!(
        first.state_queries().ask(b"river".to_vec(), ASK).await,
        Err(QueryError::NotRunning),
        "nobody answers once the streamlet returned"
    );
}

#[tokio::test]
async fn a_streamlet_without_keyed_state_is_not_queryable() {
    let metrics = InstanceMetrics::for_shape(&Shape::new().inlet(IN).outlet(OUT));
    assert_eq!(
        metrics.state_queries().ask(b"river".to_vec(), ASK).await,
        Err(QueryError::NotKeyed)
    );
    // A windowed aggregate whose windows are checkpointed whole: the error says how to
    // keep them by key.
    let whole = InstanceMetrics::for_shape(&Shape::new().inlet(IN).outlet(OUT).checkpointed());
    let error = whole
        .state_queries()
        .ask(b"river".to_vec(), ASK)
        .await
        .unwrap_err();
    assert_eq!(error, QueryError::WholeState);
    assert!(
        error.to_string().contains("`.state_by_partition()`"),
        "{error}"
    );
}
