//! [`Declared`]: what every state declaration holds, a name and an optional time to live.

use std::time::Duration;

/// The name and time to live of a [`ValueState`](super::ValueState),
/// [`ListState`](super::ListState) or [`MapState`](super::MapState).
#[derive(Clone, Copy, Debug)]
pub(super) struct Declared {
    pub(super) name: &'static str,
    pub(super) ttl: Option<Duration>,
}

impl Declared {
    /// A state called `name`, which the store's key layout gives at most 255 bytes.
    pub(super) const fn new(name: &'static str) -> Self {
        assert!(name.len() <= 255, "a state name is at most 255 bytes");
        Declared { name, ttl: None }
    }

    /// The same state, whose entries expire `ttl` after they were last written.
    pub(super) const fn expire_after(self, ttl: Duration) -> Self {
        Declared {
            name: self.name,
            ttl: Some(ttl),
        }
    }
}
