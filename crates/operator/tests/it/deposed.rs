//! The moment an operator replica sees its lease taken, from its log: the leader cancels its
//! writes and then logs `another replica took the leader lease over` with its `identity`.
//! A process-wide subscriber calls back whoever asked about that identity, at that moment.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Callback = Box<dyn Fn() + Send + Sync>;

fn callbacks() -> &'static Mutex<HashMap<String, Callback>> {
    static CALLBACKS: OnceLock<Mutex<HashMap<String, Callback>>> = OnceLock::new();
    CALLBACKS.get_or_init(|| {
        tracing::subscriber::set_global_default(LeaseLost)
            .expect("no other global subscriber in this test binary");
        Mutex::new(HashMap::new())
    })
}

/// Calls `then` when the replica named `identity` logs that it saw its lease taken (after it
/// cancelled its writes).
pub(crate) fn when_deposed(identity: &str, then: impl Fn() + Send + Sync + 'static) {
    callbacks()
        .lock()
        .unwrap()
        .insert(identity.to_owned(), Box::new(then));
}

/// Reads only the leader module's `identity` field and message off events.
struct LeaseLost;

#[derive(Default)]
struct Fields {
    identity: Option<String>,
    lease_taken: bool,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "identity" {
            self.identity = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        match field.name() {
            "identity" => self.identity = Some(format!("{value:?}")),
            "message" => {
                self.lease_taken = format!("{value:?}").contains("took the leader lease over");
            }
            _ => {}
        }
    }
}

impl Subscriber for LeaseLost {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "runnel_operator::leader"
    }

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let (true, Some(identity)) = (fields.lease_taken, fields.identity)
            && let Some(then) = callbacks().lock().unwrap().get(&identity)
        {
            then();
        }
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
