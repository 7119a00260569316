//! [`StateDecoders`]: the states a streamlet used since it started, each with a decoder from
//! its stored bytes to JSON, so a query can show a key's state without knowing its types.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::store::PartitionStore;

/// Decodes one stored value (postcard) into JSON.
type Decode = fn(&[u8]) -> Result<serde_json::Value, String>;

/// The kind of a state, as its store keys begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StateKind {
    /// A [`ValueState`](crate::ValueState): `v`.
    Value,
    /// A [`ListState`](crate::ListState): `l`.
    List,
    /// A [`MapState`](crate::MapState): `m`.
    Map,
}

impl StateKind {
    /// The first byte of the state's store keys.
    pub(super) fn tag(self) -> u8 {
        match self {
            StateKind::Value => b'v',
            StateKind::List => b'l',
            StateKind::Map => b'm',
        }
    }

    /// The name queries show.
    pub(super) fn label(self) -> &'static str {
        match self {
            StateKind::Value => "value",
            StateKind::List => "list",
            StateKind::Map => "map",
        }
    }
}

/// One state the streamlet used: its kind, name and decoders.
#[derive(Clone, Copy, Debug)]
pub(super) struct StateDecoder {
    pub(super) kind: StateKind,
    pub(super) name: &'static str,
    /// Decodes a value (the list as a whole for a list state, an entry's value for a map).
    pub(super) value: Decode,
    /// Decodes a map entry's key (maps only).
    pub(super) key: Option<Decode>,
}

/// How a query shows the values of a state: its kind, name and decoders. Made by
/// [`DeclaredState::declaration`] for `KeyedState::declare` (in `runnel::state`).
#[derive(Clone, Copy, Debug)]
pub struct StateDeclaration(pub(super) StateDecoder);

/// A state constant whose values queries can show: [`ValueState`](crate::ValueState),
/// [`ListState`](crate::ListState) or [`MapState`](crate::MapState).
pub trait DeclaredState {
    /// The state's kind, name and how to decode its values.
    fn declaration(&self) -> StateDeclaration;
}

impl StateDecoder {
    pub(super) fn value<T: Serialize + DeserializeOwned>(name: &'static str) -> Self {
        StateDecoder {
            kind: StateKind::Value,
            name,
            value: to_json::<T>,
            key: None,
        }
    }

    pub(super) fn list<T: Serialize + DeserializeOwned>(name: &'static str) -> Self {
        StateDecoder {
            kind: StateKind::List,
            name,
            value: to_json::<Vec<T>>,
            key: None,
        }
    }

    pub(super) fn map<K, V>(name: &'static str) -> Self
    where
        K: Serialize + DeserializeOwned,
        V: Serialize + DeserializeOwned,
    {
        StateDecoder {
            kind: StateKind::Map,
            name,
            value: to_json::<V>,
            key: Some(to_json::<K>),
        }
    }
}

/// The states declared or used so far, in that order, and the names of states found in
/// restored stores that are neither (their types are not known here). Registering is a
/// short scan comparing names by address first, so it costs next to nothing on each
/// state access.
#[derive(Debug, Default)]
pub struct StateDecoders {
    known: Vec<StateDecoder>,
    /// States found in restored stores, by kind and name.
    stored: Vec<(StateKind, String)>,
}

impl StateDecoders {
    /// Remembers value state `name` holding `T`.
    pub(super) fn value<T: Serialize + DeserializeOwned>(&mut self, name: &'static str) {
        if !self.knows(StateKind::Value, name) {
            self.known.push(StateDecoder::value::<T>(name));
        }
    }

    /// Remembers list state `name` holding `T`s.
    pub(super) fn list<T: Serialize + DeserializeOwned>(&mut self, name: &'static str) {
        if !self.knows(StateKind::List, name) {
            self.known.push(StateDecoder::list::<T>(name));
        }
    }

    /// Remembers map state `name` from `K` to `V`.
    pub(super) fn map<K, V>(&mut self, name: &'static str)
    where
        K: Serialize + DeserializeOwned,
        V: Serialize + DeserializeOwned,
    {
        if !self.knows(StateKind::Map, name) {
            self.known.push(StateDecoder::map::<K, V>(name));
        }
    }

    /// Remembers a declared state, so queries show its values before it is used.
    pub fn declare(&mut self, declaration: StateDeclaration) {
        let decoder = declaration.0;
        if !self.knows(decoder.kind, decoder.name) {
            self.known.push(decoder);
        }
    }

    /// Notes the states `store` holds entries of (one pass over a restored store).
    pub fn note_stored(&mut self, store: &PartitionStore) {
        let mut seen: Vec<(StateKind, &[u8])> = Vec::new();
        for key in store.keys() {
            let Some((kind, name)) = state_of(key) else {
                continue;
            };
            if seen.iter().any(|(k, n)| *k == kind && *n == name) {
                continue;
            }
            seen.push((kind, name));
        }
        // In the order of their stored keys, as the store does not keep one.
        seen.sort_by_key(|(kind, name)| (kind.tag(), *name));
        for (kind, name) in seen {
            let name = String::from_utf8_lossy(name).into_owned();
            if !self.stored.iter().any(|(k, n)| *k == kind && *n == name) {
                self.stored.push((kind, name));
            }
        }
    }

    /// Every state declared or used so far.
    pub(super) fn all(&self) -> &[StateDecoder] {
        &self.known
    }

    /// The states found in restored stores that were neither declared nor used since.
    pub(super) fn unknown(&self) -> impl Iterator<Item = (StateKind, &str)> {
        self.stored
            .iter()
            .filter(|(kind, name)| {
                !self
                    .known
                    .iter()
                    .any(|known| known.kind == *kind && known.name == name)
            })
            .map(|(kind, name)| (*kind, name.as_str()))
    }

    fn knows(&self, kind: StateKind, name: &'static str) -> bool {
        self.known.iter().any(|known| {
            known.kind == kind && (std::ptr::eq(known.name, name) || known.name == name)
        })
    }
}

/// The kind and name of the state a store key belongs to; `None` for timers.
fn state_of(key: &[u8]) -> Option<(StateKind, &[u8])> {
    let kind = match key.first()? {
        b'v' => StateKind::Value,
        b'l' => StateKind::List,
        b'm' => StateKind::Map,
        _ => return None,
    };
    let length = usize::from(*key.get(1)?);
    Some((kind, key.get(2..2 + length)?))
}

/// Decodes postcard bytes as `T` and writes `T` as JSON.
fn to_json<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Result<serde_json::Value, String> {
    let value: T = postcard::from_bytes(bytes).map_err(|error| {
        format!(
            "the stored bytes do not decode as {}: {error}",
            std::any::type_name::<T>()
        )
    })?;
    serde_json::to_value(&value).map_err(|error| format!("the value has no JSON form: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_is_remembered_once_with_a_decoder_of_its_type() {
        let mut decoders = StateDecoders::default();
        decoders.value::<i64>("total");
        decoders.value::<i64>("total");
        decoders.list::<String>("recent");
        decoders.map::<String, u32>("merchants");
        // The same name as another kind is another state.
        decoders.list::<i64>("total");
        let all = decoders.all();
        assert_eq!(all.len(), 4);
        let total = postcard::to_allocvec(&-5i64).unwrap();
        assert_eq!((all[0].value)(&total), Ok(serde_json::json!(-5)));
        let recent = postcard::to_allocvec(&vec!["a".to_owned(), "b".to_owned()]).unwrap();
        assert_eq!((all[1].value)(&recent), Ok(serde_json::json!(["a", "b"])));
        let key = postcard::to_allocvec("shop").unwrap();
        assert_eq!((all[2].key.unwrap())(&key), Ok(serde_json::json!("shop")));
        assert!((all[2].value)(&[]).unwrap_err().contains("u32"));
    }

    #[test]
    fn states_found_in_a_restored_store_are_unknown_until_declared_or_used() {
        let mut store = PartitionStore::default();
        for key in [&b"\x01"[..], b"\x02"] {
            store.put(
                &super::super::entry::composite_key(b'v', "total", &[], key),
                vec![0],
                None,
            );
            store.put(
                &super::super::entry::composite_key(b'm', "texts", &[0, 0, 0, 1], key),
                vec![0],
                None,
            );
        }
        store.put(
            &super::super::timers::timer_key(super::super::TimeDomain::EventTime, 5, b"k"),
            vec![],
            None,
        );
        let mut decoders = StateDecoders::default();
        decoders.note_stored(&store);
        let unknown: Vec<(StateKind, &str)> = decoders.unknown().collect();
        assert_eq!(
            unknown,
            vec![(StateKind::Map, "texts"), (StateKind::Value, "total")]
        );
        decoders.value::<i64>("total");
        decoders.declare(StateDeclaration(StateDecoder::map::<String, i64>("texts")));
        assert_eq!(decoders.unknown().count(), 0);
        assert_eq!(decoders.all().len(), 2);
    }
}
