//! Timers of the window operator: which keys need attention at which time.
//!
//! A key has at most one live entry per kind (watermark, processing time); the key's state
//! remembers the time of its live entry, and entries that no longer match are skipped when
//! they come due. Keys due at the same time run in the order they were registered, so
//! panes come out in a deterministic order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Keys by the time they are due.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Timers<K> {
    due: BTreeMap<i64, Vec<K>>,
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            due: BTreeMap::new(),
        }
    }
}

impl<K> Timers<K> {
    /// Registers `key` at `time`.
    pub(crate) fn push(&mut self, time: i64, key: K) {
        self.due.entry(time).or_default().push(key);
    }

    /// The earliest registered time.
    pub(crate) fn first(&self) -> Option<i64> {
        self.due.first_key_value().map(|(time, _)| *time)
    }

    /// Takes the keys of the earliest time, if it is at most `upto`.
    pub(crate) fn pop_due(&mut self, upto: i64) -> Option<(i64, Vec<K>)> {
        match self.due.first_key_value() {
            Some((time, _)) if *time <= upto => self.due.pop_first(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_due_in_time_then_registration_order() {
        let mut timers = Timers::default();
        timers.push(20, "b");
        timers.push(10, "a");
        timers.push(20, "c");
        assert_eq!(timers.first(), Some(10));
        assert_eq!(timers.pop_due(5), None);
        assert_eq!(timers.pop_due(25), Some((10, vec!["a"])));
        assert_eq!(timers.pop_due(25), Some((20, vec!["b", "c"])));
        assert_eq!(timers.pop_due(25), None);
    }
}
