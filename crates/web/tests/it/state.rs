//! `/api/state/{instance}`: the keyed state of a key from the process holding its partition,
//! with two processes sharing a consumer group as a scaled instance does; the client
//! `state get` uses; the state size in the status, the metrics and on the page.

use std::sync::Arc;
use std::time::Duration;

use runnel_app_test::chromium::{attribute_values, rendered};
use runnel_backend::MemoryBackend;
use runnel_runtime::Registry;
use runnel_status::{StateError, StateGetArgs};
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ValueState};

use crate::support::{Served, Tick, get, serve_app, status_until};

/// Ticks keyed by their number modulo four, so each key stays on one partition.
const NUMBERS: Outlet<Tick> = Outlet::new("out").keyed_by(|tick| (tick.number % 4).to_string());
const IN: Inlet<Tick> = Inlet::new("in");
/// Per key: ticks seen.
const COUNT: ValueState<u64> = ValueState::new("count");

/// Emits a keyed tick every 5 ms until stopped.
struct Numbers;

impl Streamlet for Numbers {
    fn shape(&self) -> Shape {
        Shape::new().outlet(NUMBERS)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(NUMBERS);
        let mut number = 0;
        while !ctx.is_stopping() {
            out.send(&Tick { number }).await?;
            number += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

/// Counts ticks per key.
struct Counter;

impl Streamlet for Counter {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        let mut state = ctx
            .keyed_state()?
            .checkpoint_every(Duration::from_millis(50))
            .declare(COUNT);
        while let Some(next) = state.next(&mut input).await? {
            let Keyed::Message(message) = next else {
                continue;
            };
            let key = (message.value().number % 4).to_string();
            state
                .entry(message.partition(), key)
                .value(COUNT)
                .update(|count| count.unwrap_or(0) + 1)?;
            message.commit();
        }
        Ok(())
    }
}

const BLUEPRINT: &str = r#"
name = "counting"
[streamlets]
numbers = "numbers"
counter = "counter"
[topics.numbers]
producers = ["numbers.out"]
consumers = ["counter.in"]
partitions = 2
"#;

fn registry() -> Registry {
    Registry::new()
        .register("numbers", || Numbers)
        .register("counter", || Counter)
}

/// `GET` the state of `key` in `counter`: status code and JSON.
async fn state_of(served: &Served, query: &str) -> (u16, serde_json::Value) {
    let (code, body) = get(&served.address, &format!("/api/state/{query}")).await;
    let json = serde_json::from_str(&body)
        .unwrap_or_else(|error| panic!("{query} answered {code} without JSON ({error}): {body}"));
    (code, json)
}

/// Waits (at most 20 s) until the answer to `query` satisfies `condition`.
async fn state_until(
    served: &Served,
    query: &str,
    what: &str,
    condition: impl Fn(u16, &serde_json::Value) -> bool,
) -> (u16, serde_json::Value) {
    let mut last = None;
    for _ in 0..400 {
        let (code, json) = state_of(served, query).await;
        if condition(code, &json) {
            return (code, json);
        }
        last = Some((code, json));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{query} never showed {what}; last answer: {last:?}");
}

fn count(json: &serde_json::Value) -> Option<u64> {
    json["states"]
        .as_array()?
        .iter()
        .find(|state| state["name"] == "count")?["value"]
        .as_u64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_holding_a_keys_partition_answers_its_state() {
    let backend = Arc::new(MemoryBackend::new());
    let first = serve_app(&registry(), BLUEPRINT, backend.clone(), None).await;

    // One process holds both partitions: it answers every key.
    let (_, one) = state_until(&first, "counter?key=1", "a count", |code, json| {
        code == 200 && count(json).is_some_and(|count| count > 0)
    })
    .await;
    assert_eq!(one["key"], "1");
    assert_eq!(one["key_hex"], "31");
    assert_eq!(one["owner"], true);
    assert_eq!(one["held"], serde_json::json!([0, 1]));
    assert_eq!(one["partitions"], 2);
    let (code, by_hex) = state_of(&first, "counter?key_hex=31").await;
    assert_eq!((code, &by_hex["key"]), (200, &serde_json::json!("1")));
    let (code, nothing) = state_of(&first, "counter?key=7").await;
    assert_eq!(code, 200);
    assert_eq!(nothing["states"], serde_json::json!([]));

    // What cannot be asked.
    let refusals = [
        (
            "nobody?key=1",
            404,
            "no streamlet instance 'nobody' runs in this process (it runs numbers, counter)",
        ),
        (
            "numbers?key=1",
            404,
            "streamlet instance 'numbers' did not answer the query: the streamlet keeps no keyed state (its shape does not say `.keyed_state()`)",
        ),
        (
            "counter",
            400,
            "no key: ask for `?key=TEXT`, or `?key_hex=HEX` for a key that is not UTF-8",
        ),
        (
            "counter?key_hex=3",
            400,
            "key_hex '3' is not an even number of hexadecimal digits",
        ),
    ];
    for (query, expected_code, expected_error) in refusals {
        let (code, json) = state_of(&first, query).await;
        assert_eq!(
            (code, json["error"].as_str()),
            (expected_code, Some(expected_error)),
            "{query}"
        );
    }

    // The status and the page show the state's size.
    let snapshot = status_until(&first.address, "the keyed state's size", |snapshot| {
        snapshot
            .streamlets
            .iter()
            .any(|s| s.keyed_state.as_ref().is_some_and(|size| size.entries == 4))
    })
    .await;
    let counter = snapshot
        .streamlets
        .iter()
        .find(|s| s.name == "counter")
        .unwrap();
    let size = counter.keyed_state.as_ref().unwrap();
    assert_eq!(size.partitions, vec![0, 1]);
    assert!(size.bytes > 0);
    let numbers = snapshot
        .streamlets
        .iter()
        .find(|s| s.name == "numbers")
        .unwrap();
    assert_eq!(numbers.keyed_state, None);
    let (_, metrics) = get(&first.address, "/metrics").await;
    assert!(
        metrics.contains("\nrunnel_keyed_state_entries{streamlet=\"counter\"} 4\n"),
        "{metrics}"
    );
    let bytes = metrics
        .lines()
        .find_map(|line| line.strip_prefix("runnel_keyed_state_bytes{streamlet=\"counter\"} "))
        .and_then(|value| value.parse::<u64>().ok());
    assert!(bytes.is_some_and(|bytes| bytes > 0), "{metrics}");
    assert!(!metrics.contains("runnel_keyed_state_entries{streamlet=\"numbers\"}"));
    let profile = tempfile::tempdir().unwrap();
    let address = first.address.clone();
    let dom = tokio::task::spawn_blocking(move || {
        rendered(profile.path(), &format!("http://{address}/"))
    })
    .await
    .unwrap();
    assert_eq!(attribute_values(&dom, "data-state-entries"), ["4"], "{dom}");
    assert!(
        dom.contains("· state "),
        "the node shows the state's size: {dom}"
    );

    // A second process runs the counter too: the group splits the partitions, and each
    // key is answered by the process holding its partition; the other names it.
    let second = serve_app(&registry(), BLUEPRINT, backend.clone(), Some("counter")).await;
    for served in [&first, &second] {
        state_until(served, "counter?key=0", "one partition held", |_, json| {
            json["held"].as_array().is_some_and(|held| held.len() == 1)
        })
        .await;
    }
    let mut owned_by_second = None;
    for key in ["0", "1", "2", "3"] {
        let query = format!("counter?key={key}");
        let answers = [
            state_of(&first, &query).await,
            state_of(&second, &query).await,
        ];
        let owners: Vec<&(u16, serde_json::Value)> =
            answers.iter().filter(|(code, _)| *code == 200).collect();
        assert_eq!(owners.len(), 1, "one owner of {key}: {answers:?}");
        let (_, owner) = owners[0];
        assert!(count(owner).is_some_and(|count| count > 0), "{owner}");
        let (code, other) = answers.iter().find(|(code, _)| *code != 200).unwrap();
        assert_eq!(*code, 421);
        assert_eq!(other["owner"], false);
        let partition = owner["partition"].as_u64().unwrap();
        assert_eq!(
            other["message"],
            format!(
                "key '{key}' is on input partition {partition} of 2, which this member does not hold (it holds {}): ask the member that holds it",
                1 - partition
            )
        );
        if answers[1].0 == 200 {
            owned_by_second = Some(key);
        }
    }

    // `state get` asks every process given until the owner answers.
    let key = owned_by_second.expect("the second process owns a partition, and a key on it");
    let args = |admin: Vec<String>| StateGetArgs {
        instance: "counter".into(),
        key: key.into(),
        hex: false,
        admin,
    };
    let both = args(vec![first.address.clone(), second.address.clone()]);
    let state = tokio::task::spawn_blocking(move || both.get(None))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (&state["key"], &state["owner"]),
        (&serde_json::json!(key), &serde_json::json!(true))
    );
    assert!(count(&state).is_some());
    let only_first = args(vec![first.address.clone()]);
    let refused = tokio::task::spawn_blocking(move || only_first.get(None))
        .await
        .unwrap();
    match refused {
        Err(StateError::NotHeld { url, message }) => {
            assert_eq!(
                url,
                format!("http://{}/api/state/counter?key={key}", first.address)
            );
            assert!(
                message.starts_with(&format!("key '{key}' is on input partition")),
                "{message}"
            );
        }
        other => panic!("the first process does not hold the key: {other:?}"),
    }

    for served in [first, second] {
        served.shutdown.cancel();
        served.running.wait().await.unwrap();
    }
}
