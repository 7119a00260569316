//! Interactive queries of keyed state: [`StateQueries`], through which the runtime asks a
//! running streamlet for the state of a key, and [`KeyState`], the answer.
//!
//! The streamlet answers between messages, in `KeyedState::next`:
//! a query waits in a channel until the streamlet asks for its next message, so reading
//! and changing state per message takes no lock.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::decoders::{StateDecoders, StateKind};
use super::entry::{composite_key, describe_key};
use super::store::PartitionStore;
use super::timers::{self, TimeDomain};

/// Queries that may wait for the streamlet at once; more are refused as busy.
const WAITING_QUERIES: usize = 16;

/// The handle through which the runtime (the admin endpoint) asks a running streamlet with
/// keyed state for the state of a key, and reads how large the state is. One per instance,
/// kept across restarts in its `InstanceMetrics`; clones share it.
///
/// ```
/// use runnel_state::StateQueries;
///
/// let queries = StateQueries::new(true, false); // keyed state, not checkpointed whole
/// assert!(queries.is_keyed());
/// // Nothing is running: there is nobody to answer yet.
/// assert_eq!(queries.size(), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct StateQueries {
    inner: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    keyed: AtomicBool,
    /// Whether the instance checkpoints its state whole (not by key).
    checkpointed_whole: AtomicBool,
    /// The partition count of the input, 0 while unknown.
    input_partitions: AtomicU32,
    /// Where queries go: the running streamlet's keyed state, if any.
    sender: Mutex<Option<mpsc::Sender<Query>>>,
    size: Mutex<Option<StateSize>>,
}

/// A question for the running keyed state: the state of `key`.
#[derive(Debug)]
pub struct Query {
    /// The key asked about.
    pub key: Vec<u8>,
    /// Where the answer goes.
    pub reply: oneshot::Sender<KeyState>,
}

/// Why a query was not answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The streamlet does not keep keyed state.
    #[error("the streamlet keeps no keyed state (its shape does not say `.keyed_state()`)")]
    NotKeyed,
    /// The streamlet checkpoints its state whole, as one value, not by key (a
    /// `WindowedAggregate` without `state_by_partition`).
    #[error(
        "the streamlet checkpoints its state whole, not by key, so no key can be asked for; a WindowedAggregate keeps its windows by key, queryable, with `.state_by_partition()`"
    )]
    WholeState,
    /// No keyed state is running now: the streamlet is starting, restarting or finished.
    #[error(
        "the streamlet's keyed state is not running now (the instance is starting, restarting or finished)"
    )]
    NotRunning,
    /// The streamlet did not get to the query in time: it answers between messages, and
    /// was busy (handling a message, waiting to send, or many queries waited).
    #[error(
        "the streamlet did not answer within {} ms: it answers between messages and is busy",
        .0.as_millis()
    )]
    Busy(Duration),
    /// Too many queries wait for the streamlet already.
    #[error("{WAITING_QUERIES} queries wait for the streamlet already")]
    Crowded,
}

/// How large an instance's keyed state is, as of its last checkpoint (or restore).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSize {
    /// The input partitions whose state this member holds.
    pub partitions: Vec<u32>,
    /// Store entries across them: values, lists, map entries and timers.
    pub entries: u64,
    /// Bytes of keys and values across them.
    pub bytes: u64,
    /// The input partitions other members hold of which this one keeps a warm copy
    /// (`KeyedState::warm_standby`).
    #[serde(default)]
    pub standby_partitions: Vec<u32>,
    /// Store entries across the warm copies.
    #[serde(default)]
    pub standby_entries: u64,
    /// Changelog entries the restores of partitions replayed since the instance started
    /// (fewer where a warm copy had read them already).
    #[serde(default)]
    pub restored_entries: u64,
}

/// The state of one key, as the member answering holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyState {
    /// The key as text when it is printable UTF-8, otherwise as `0x` and hexadecimal.
    pub key: String,
    /// The key's bytes in hexadecimal.
    pub key_hex: String,
    /// The input partition a record with this key goes to (the partitioner of keyed
    /// outlets), when the partition count is known.
    pub partition: Option<u32>,
    /// The partition count of the input (0 when unknown).
    pub partitions: u32,
    /// The input partitions this member holds, whose state it can answer from.
    pub held: Vec<u32>,
    /// Whether this member holds the key's partition, so its answer is the state of the
    /// key (when the state is kept by the record key); otherwise ask the member that holds
    /// it.
    pub owner: bool,
    /// Each state with a value for the key, in the partitions held.
    pub states: Vec<StateEntry>,
    /// The key's pending timers, in the partitions held.
    pub timers: Vec<PendingTimer>,
    /// What to make of the answer when this member is not the key's owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One state's value for a key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateEntry {
    /// The state's name.
    pub name: String,
    /// `value`, `list` or `map`.
    pub kind: String,
    /// The input partition it is kept in.
    pub partition: u32,
    /// The value as JSON: a value state's value, a list state's array, a map state's
    /// entries as `[key, value]` pairs (ordered by their stored bytes); `null` when it does not decode.
    pub value: serde_json::Value,
    /// Why the stored bytes did not decode, if they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A timer set for a key that has not fired yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTimer {
    /// `event-time` or `processing-time`.
    pub domain: String,
    /// When it fires (milliseconds since the Unix epoch).
    pub time: i64,
    /// The input partition it is kept in.
    pub partition: u32,
}

impl StateQueries {
    /// A handle for an instance that keeps keyed state when `keyed`, or checkpoints its
    /// state whole when `checkpointed_whole`.
    pub fn new(keyed: bool, checkpointed_whole: bool) -> Self {
        let queries = StateQueries::default();
        queries.inner.keyed.store(keyed, Ordering::Relaxed);
        queries
            .inner
            .checkpointed_whole
            .store(checkpointed_whole, Ordering::Relaxed);
        queries
    }

    /// Whether the instance keeps keyed state.
    pub fn is_keyed(&self) -> bool {
        self.inner.keyed.load(Ordering::Relaxed)
    }

    /// How large the state is, as of its last checkpoint; `None` before keyed state ran.
    pub fn size(&self) -> Option<StateSize> {
        self.inner
            .size
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The state of `key`, answered by the running streamlet between two messages, waiting
    /// at most `timeout` for it.
    ///
    /// # Errors
    ///
    /// When the instance keeps no keyed state, none is running now, or the streamlet did
    /// not answer in time.
    pub async fn ask(&self, key: Vec<u8>, timeout: Duration) -> Result<KeyState, QueryError> {
        if !self.is_keyed() {
            if self.inner.checkpointed_whole.load(Ordering::Relaxed) {
                return Err(QueryError::WholeState);
            }
            return Err(QueryError::NotKeyed);
        }
        let sender = self
            .inner
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(QueryError::NotRunning)?;
        let (reply, answer) = oneshot::channel();
        sender
            .try_send(Query { key, reply })
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => QueryError::Crowded,
                mpsc::error::TrySendError::Closed(_) => QueryError::NotRunning,
            })?;
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(state)) => Ok(state),
            // The keyed state went away (the streamlet ended or failed) before answering.
            Ok(Err(_)) => Err(QueryError::NotRunning),
            Err(_) => Err(QueryError::Busy(timeout)),
        }
    }

    /// Tells queries the partition count of the input (for the partition of a key).
    pub fn set_input_partitions(&self, partitions: u32) {
        self.inner
            .input_partitions
            .store(partitions, Ordering::Relaxed);
    }

    /// The partition count of the input, as last told (0 before).
    pub fn input_partitions(&self) -> u32 {
        self.inner.input_partitions.load(Ordering::Relaxed)
    }

    /// Makes the caller (a starting keyed state) the one that answers from now on.
    pub fn connect(&self) -> mpsc::Receiver<Query> {
        let (sender, receiver) = mpsc::channel(WAITING_QUERIES);
        self.inner.keyed.store(true, Ordering::Relaxed);
        *self
            .inner
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(sender);
        receiver
    }

    /// Publishes the state's size for the status the runtime samples.
    pub fn publish_size(&self, size: StateSize) {
        *self
            .inner
            .size
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(size);
    }

    /// Updates the size of the warm copies only (their task keeps them between the
    /// streamlet's checkpoints).
    pub fn publish_standby_size(&self, partitions: Vec<u32>, entries: u64) {
        let mut size = self
            .inner
            .size
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let size = size.get_or_insert_with(StateSize::default);
        size.standby_partitions = partitions;
        size.standby_entries = entries;
    }
}

/// The answer to a query for `key` from the `stores` of the input partitions this member
/// holds (`held`: its assignment), showing the states in `decoders`; `partitions` is the
/// input's partition count (0 when unknown), `now` the processing time for expiry.
pub fn answer<'a>(
    stores: impl Iterator<Item = (u32, &'a PartitionStore)>,
    held: &[u32],
    decoders: &StateDecoders,
    key: &[u8],
    partitions: u32,
    now: i64,
) -> KeyState {
    let mut states = Vec::new();
    let mut pending = Vec::new();
    for (held_partition, store) in stores {
        for decoder in decoders.all() {
            let (value, error) = match decoder.kind {
                StateKind::Value | StateKind::List => {
                    let stored = composite_key(decoder.kind.tag(), decoder.name, &[], key);
                    let Some(bytes) = store.get(&stored, now) else {
                        continue;
                    };
                    split((decoder.value)(bytes))
                }
                StateKind::Map => {
                    let length = (key.len() as u32).to_be_bytes();
                    let prefix = composite_key(decoder.kind.tag(), decoder.name, &length, key);
                    let mut entries = Vec::new();
                    let mut error = None;
                    let decode_key = decoder.key.expect("maps decode their keys");
                    for (stored, bytes) in store.scan(&prefix, now) {
                        let pair = decode_key(&stored[prefix.len()..])
                            .and_then(|map_key| Ok((map_key, (decoder.value)(bytes)?)));
                        match pair {
                            Ok((map_key, value)) => {
                                entries.push(serde_json::Value::Array(vec![map_key, value]));
                            }
                            Err(reason) => error = error.or(Some(reason)),
                        }
                    }
                    if entries.is_empty() && error.is_none() {
                        continue;
                    }
                    (serde_json::Value::Array(entries), error)
                }
            };
            states.push(StateEntry {
                name: decoder.name.to_owned(),
                kind: decoder.kind.label().to_owned(),
                partition: held_partition,
                value,
                error,
            });
        }
        for (kind, name) in decoders.unknown() {
            let stored = match kind {
                StateKind::Value | StateKind::List => {
                    let stored = composite_key(kind.tag(), name, &[], key);
                    store
                        .get(&stored, now)
                        .map(|bytes| format!("{} bytes", bytes.len()))
                }
                StateKind::Map => {
                    let length = (key.len() as u32).to_be_bytes();
                    let prefix = composite_key(kind.tag(), name, &length, key);
                    let entries = store.scan(&prefix, now).count();
                    (entries > 0).then(|| format!("{entries} map entries"))
                }
            };
            let Some(stored) = stored else {
                continue;
            };
            states.push(StateEntry {
                name: name.to_owned(),
                kind: kind.label().to_owned(),
                partition: held_partition,
                value: serde_json::Value::Null,
                error: Some(format!(
                    "{stored} stored, of a type not known here: the streamlet has not used this state since it started (`KeyedState::declare` makes it known from the start)"
                )),
            });
        }
        for (domain, time) in timers::pending(store, key) {
            pending.push(PendingTimer {
                domain: match domain {
                    TimeDomain::EventTime => "event-time",
                    TimeDomain::ProcessingTime => "processing-time",
                }
                .to_owned(),
                time,
                partition: held_partition,
            });
        }
    }
    key_state(key, partitions, held, states, pending)
}

/// The answer for `key` of a member holding input partitions `held` of `partitions` (0
/// when unknown), with the `states` and `timers` of the key found there.
pub fn key_state(
    key: &[u8],
    partitions: u32,
    held: &[u32],
    states: Vec<StateEntry>,
    timers: Vec<PendingTimer>,
) -> KeyState {
    let partition = (partitions > 0).then(|| runnel_backend::partition_for_key(key, partitions));
    let owner = partition.is_some_and(|partition| held.contains(&partition));
    let described = describe_key(key);
    let text = match std::str::from_utf8(key) {
        Ok(text) if !text.chars().any(char::is_control) => text.to_owned(),
        _ => described.clone(),
    };
    let message = match partition {
        _ if owner => None,
        Some(partition) => Some(format!(
            "key {described} is on input partition {partition} of {partitions}, which this member does not hold (it holds {}): ask the member that holds it",
            list(held)
        )),
        None => Some(format!(
            "the input's partition count is not known yet, so the partition of key {described} is not either; this member holds {}",
            list(held)
        )),
    };
    KeyState {
        key: text,
        key_hex: key.iter().map(|byte| format!("{byte:02x}")).collect(),
        partition,
        partitions,
        held: held.to_vec(),
        owner,
        states,
        timers,
        message,
    }
}

/// A decoded value, or `null` and why not.
fn split(decoded: Result<serde_json::Value, String>) -> (serde_json::Value, Option<String>) {
    match decoded {
        Ok(value) => (value, None),
        Err(reason) => (serde_json::Value::Null, Some(reason)),
    }
}

/// Partitions as `0, 1, 2`, or `none`.
fn list(partitions: &[u32]) -> String {
    if partitions.is_empty() {
        return "none".to_owned();
    }
    let listed: Vec<String> = partitions.iter().map(u32::to_string).collect();
    listed.join(", ")
}

/// The size of the `stores` held, by input partition.
pub fn size<'a>(stores: impl Iterator<Item = (u32, &'a PartitionStore)>) -> StateSize {
    let mut size = StateSize::default();
    for (partition, store) in stores {
        size.partitions.push(partition);
        size.entries += store.len() as u64;
        size.bytes += store.live_bytes();
    }
    size
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::timers::timer_key;

    fn stores_of(
        stores: &BTreeMap<u32, PartitionStore>,
    ) -> impl Iterator<Item = (u32, &PartitionStore)> {
        stores.iter().map(|(partition, store)| (*partition, store))
    }

    fn held(stores: &BTreeMap<u32, PartitionStore>) -> Vec<u32> {
        stores.keys().copied().collect()
    }

    fn store_with(key: &[u8]) -> PartitionStore {
        let mut store = PartitionStore::default();
        let total = composite_key(b'v', "total", &[], key);
        store.put(&total, postcard::to_allocvec(&42i64).unwrap(), None);
        let recent = composite_key(b'l', "recent", &[], key);
        store.put(
            &recent,
            postcard::to_allocvec(&vec![1i64, 2]).unwrap(),
            None,
        );
        let length = (key.len() as u32).to_be_bytes();
        for (merchant, cents) in [("shop", 7i64), ("cafe", 3)] {
            let mut entry = composite_key(b'm', "merchants", &length, key);
            entry.extend(postcard::to_allocvec(merchant).unwrap());
            store.put(&entry, postcard::to_allocvec(&cents).unwrap(), None);
        }
        // Another key's value, and one that expired.
        let other = composite_key(b'v', "total", &[], b"other");
        store.put(&other, postcard::to_allocvec(&1i64).unwrap(), None);
        let gone = composite_key(b'v', "gone", &[], key);
        store.put(&gone, postcard::to_allocvec(&1i64).unwrap(), Some(5));
        store.put(
            &timer_key(TimeDomain::EventTime, 60_000, key),
            Vec::new(),
            None,
        );
        store.put(
            &timer_key(TimeDomain::ProcessingTime, 9, b"other"),
            Vec::new(),
            None,
        );
        store
    }

    fn decoders() -> StateDecoders {
        let mut decoders = StateDecoders::default();
        decoders.value::<i64>("total");
        decoders.list::<i64>("recent");
        decoders.map::<String, i64>("merchants");
        decoders.value::<i64>("gone");
        decoders.value::<i64>("unused");
        decoders
    }

    #[test]
    fn the_owner_answers_every_state_and_timer_of_the_key() {
        let key = b"card-1";
        let partitions = 4;
        let partition = runnel_backend::partition_for_key(key, partitions);
        let stores = BTreeMap::from([(partition, store_with(key))]);
        let state = answer(
            stores_of(&stores),
            &held(&stores),
            &decoders(),
            key,
            partitions,
            10,
        );
        assert!(state.owner);
        assert_eq!(state.message, None);
        assert_eq!(
            (state.key.as_str(), state.key_hex.as_str()),
            ("card-1", "636172642d31")
        );
        let values: Vec<(&str, &str, serde_json::Value)> = state
            .states
            .iter()
            .map(|entry| {
                (
                    entry.name.as_str(),
                    entry.kind.as_str(),
                    entry.value.clone(),
                )
            })
            .collect();
        assert_eq!(
            values,
            vec![
                ("total", "value", serde_json::json!(42)),
                ("recent", "list", serde_json::json!([1, 2])),
                (
                    "merchants",
                    "map",
                    serde_json::json!([["cafe", 3], ["shop", 7]])
                ),
            ]
        );
        assert_eq!(
            state.timers,
            vec![PendingTimer {
                domain: "event-time".into(),
                time: 60_000,
                partition
            }]
        );
    }

    #[test]
    fn a_member_without_the_key_partition_says_which_it_is() {
        let key = b"card-1";
        let partitions = 4;
        let owner = runnel_backend::partition_for_key(key, partitions);
        let other = (owner + 1) % partitions;
        let stores = BTreeMap::from([(other, PartitionStore::default())]);
        let state = answer(
            stores_of(&stores),
            &held(&stores),
            &decoders(),
            key,
            partitions,
            10,
        );
        assert!(!state.owner);
        assert!(state.states.is_empty());
        assert_eq!(
            state.message.unwrap(),
            format!(
                "key 'card-1' is on input partition {owner} of 4, which this member does not hold (it holds {other}): ask the member that holds it"
            )
        );
    }

    #[test]
    fn keys_show_as_text_when_printable_and_as_hex_otherwise() {
        let stores = BTreeMap::new();
        let decoders = StateDecoders::default();
        let binary = answer(stores_of(&stores), &[], &decoders, &[0, 0xff], 1, 0);
        assert_eq!(
            (binary.key.as_str(), binary.key_hex.as_str()),
            ("0x00ff", "00ff")
        );
        let quoted = answer(stores_of(&stores), &[], &decoders, b"'a'", 1, 0);
        assert_eq!(quoted.key, "'a'");
        assert_eq!(
            quoted.message.as_deref(),
            Some(
                "key ''a'' is on input partition 0 of 1, which this member does not hold (it holds none): ask the member that holds it"
            )
        );
    }

    #[test]
    fn a_value_that_does_not_decode_shows_why() {
        let mut decoders = StateDecoders::default();
        decoders.value::<String>("total");
        let stores = BTreeMap::from([(0, store_with(b"k"))]);
        let state = answer(stores_of(&stores), &[0], &decoders, b"k", 1, 0);
        assert_eq!(state.states.len(), 1);
        assert_eq!(state.states[0].value, serde_json::Value::Null);
        assert!(state.states[0].error.as_ref().unwrap().contains("String"));
    }
}
