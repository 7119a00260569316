//! A [`WindowOperator`]'s state as changelog entries: one entry per key (the key and its
//! windows, accumulators and live timers, as JSON), written for the keys that changed since
//! the last checkpoint, and the state rebuilt from entries read back.
//!
//! The operator notes a key when an element, a watermark or processing time reaches its
//! windows; [`take_changes`](WindowOperator::take_changes) writes each noted key as it is
//! then (a key whose windows all closed as a deletion). Timers are not entries of their own:
//! each key's state holds the times of its live timers, and
//! [`rebuild_timers`](WindowOperator::rebuild_timers) registers them again after a restore.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::operator::KeyState;
use super::{Aggregate, Key, WindowOperator};
use crate::changelog_entries::{
    ChangelogEntries, ChangelogEntriesBuilder, ReplayTarget, Snapshots,
};

/// The keys whose windows changed since the last checkpoint.
#[derive(Debug)]
pub(crate) struct ChangedKeys<K> {
    /// Each key once while its state's `changed` flag is set; a key whose state was removed
    /// and created again may be listed twice.
    keys: Vec<K>,
    /// When the next checkpoint writes every key.
    snapshots: Snapshots,
    /// The bytes of the keys' last entries: the state's size in the changelog.
    bytes: u64,
}

impl<K: Clone> ChangedKeys<K> {
    /// Notes `key` as changed unless its state's flag says it is noted already.
    pub(crate) fn note(&mut self, key: &K, changed: &mut bool) {
        if !*changed {
            *changed = true;
            self.keys.push(key.clone());
        }
    }

    /// A key whose last entry was `entry_bytes` long is gone.
    pub(crate) fn forget(&mut self, entry_bytes: u32) {
        self.bytes = self.bytes.saturating_sub(u64::from(entry_bytes));
    }
}

impl<K, A> WindowOperator<K, A>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    /// Notes from now on which keys' windows change, for
    /// [`take_changes`](Self::take_changes).
    #[doc(hidden)]
    pub fn track_changes(&mut self) {
        self.changes.get_or_insert_with(|| ChangedKeys {
            keys: Vec::new(),
            snapshots: Snapshots::default(),
            bytes: 0,
        });
    }

    /// Makes the next [`take_changes`](Self::take_changes) write every key.
    #[doc(hidden)]
    pub fn snapshot_next(&mut self) {
        self.track_changes();
        if let Some(changes) = &mut self.changes {
            changes.snapshots.ask();
        }
    }

    /// Whether a key changed since the last checkpoint (or the next is a snapshot).
    #[doc(hidden)]
    pub fn has_changes(&self) -> bool {
        self.changes
            .as_ref()
            .is_some_and(|changes| changes.snapshots.asked() || !changes.keys.is_empty())
    }

    /// The windows of `key`, if it has any.
    #[doc(hidden)]
    pub fn key_state(&self, key: &K) -> Option<&KeyState<A::Accumulator, A::Output>> {
        self.state.keys.get(key)
    }

    /// The bytes of every key's last changelog entry (0 when changes are not tracked).
    #[doc(hidden)]
    pub fn state_bytes(&self) -> u64 {
        self.changes.as_ref().map_or(0, |changes| changes.bytes)
    }

    /// Whether the next [`take_changes`](Self::take_changes) writes every key: one was
    /// asked for, or the entries written since the last outnumber the keys by far.
    #[doc(hidden)]
    pub fn snapshot_due(&self) -> bool {
        self.changes
            .as_ref()
            .is_some_and(|changes| changes.snapshots.due(self.state.keys.len() as u64))
    }

    /// The entries of the keys that changed since the last call (every key when a snapshot
    /// is due), and whether they are a snapshot.
    #[doc(hidden)]
    pub fn take_changes(&mut self) -> (ChangelogEntries, bool) {
        self.take_changes_written(|key, out| {
            serde_json::to_writer(out, key).expect("window keys serialize");
        })
    }

    /// As [`take_changes`](Self::take_changes), with `write_key` appending each key's JSON
    /// to the buffer it is given: for keys a writer of their own puts faster than serde.
    /// Entries are read back with serde, and a key must be the same bytes in every entry
    /// (the changelog keeps a key's last entry), so they must be the bytes
    /// `serde_json::to_vec` gives.
    #[doc(hidden)]
    pub fn take_changes_written(
        &mut self,
        mut write_key: impl FnMut(&K, &mut Vec<u8>),
    ) -> (ChangelogEntries, bool) {
        self.track_changes();
        let snapshot = self.snapshot_due();
        let changes = self.changes.as_mut().expect("tracked above");
        let keys = &mut self.state.keys;
        let mut taken = ChangelogEntriesBuilder::with_capacity(0);
        let mut value = Vec::new();
        let mut key_bytes = Vec::new();
        let mut written = 0;
        let mut bytes = if snapshot { 0 } else { changes.bytes };
        let mut take = |key: &K, state: Option<&mut KeyState<A::Accumulator, A::Output>>| {
            key_bytes.clear();
            write_key(key, &mut key_bytes);
            let key = key_bytes.as_slice();
            match state {
                Some(state) => {
                    value.clear();
                    serde_json::to_writer(&mut value, &*state).expect("window state serializes");
                    taken.value(key, value.len(), |buffer| buffer.extend_from_slice(&value));
                    let entry_bytes = u32::try_from(key.len() + value.len()).unwrap_or(u32::MAX);
                    bytes = bytes - u64::from(state.entry_bytes) + u64::from(entry_bytes);
                    state.entry_bytes = entry_bytes;
                }
                None => taken.deleted(key),
            }
            written += 1;
        };
        if snapshot {
            changes.keys.clear();
            for (key, state) in keys.iter_mut() {
                state.changed = false;
                state.entry_bytes = 0;
                take(key, Some(state));
            }
        } else {
            for key in changes.keys.drain(..) {
                match keys.get_mut(&key) {
                    Some(state) if state.changed => {
                        state.changed = false;
                        take(&key, Some(state));
                    }
                    Some(_) => {} // listed twice: written already
                    None => take(&key, None),
                }
            }
        }
        changes.snapshots.wrote(snapshot, written);
        changes.bytes = bytes;
        (taken.finish(), snapshot)
    }

    /// Moves the watermark to `watermark` without firing anything: the watermark of a
    /// restored state, whose timers fired before its checkpoint.
    #[doc(hidden)]
    pub fn set_watermark(&mut self, watermark: i64) {
        self.state.watermark = watermark;
    }

    /// Registers every key's live timers: after its state was rebuilt from entries.
    #[doc(hidden)]
    pub fn rebuild_timers(&mut self) {
        let state = &mut self.state;
        for (key, windows) in &state.keys {
            if let Some(time) = windows.event_timer {
                state.event_timers.push(time, key.clone());
            }
            if let Some(time) = windows.processing_timer {
                state.processing_timers.push(time, key.clone());
            }
        }
    }
}

impl<K, A> ReplayTarget for WindowOperator<K, A>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    fn apply(&mut self, key_bytes: &[u8], value: Option<&[u8]>) -> bool {
        let Ok(key) = serde_json::from_slice::<K>(key_bytes) else {
            return false;
        };
        let entry_bytes = value.map_or(0, |value| key_bytes.len() + value.len());
        let replaced = match value {
            None => self.state.keys.remove(&key),
            Some(value) => {
                let Ok(mut state) = serde_json::from_slice::<KeyState<_, _>>(value) else {
                    return false;
                };
                state.entry_bytes = u32::try_from(entry_bytes).unwrap_or(u32::MAX);
                self.state.keys.insert(key, state)
            }
        };
        self.track_changes();
        let changes = self.changes.as_mut().expect("tracked above");
        if let Some(replaced) = replaced {
            changes.forget(replaced.entry_bytes);
        }
        changes.bytes += entry_bytes as u64;
        true
    }

    fn held_entries(&self) -> u64 {
        self.key_count() as u64
    }

    fn mark_changed(&mut self, key: &[u8]) {
        let Ok(key) = serde_json::from_slice::<K>(key) else {
            return; // not a key of these windows: nothing of it is in the state
        };
        self.track_changes();
        let changes = self.changes.as_mut().expect("tracked above");
        match self.state.keys.get_mut(&key) {
            Some(state) => changes.note(&key, &mut state.changed),
            None => changes.keys.push(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::window::{Accumulation, Count, Pane, Sum, Trigger, WindowSpec};

    const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));

    /// Each entry's key, and whether it is a deletion.
    fn written(entries: &ChangelogEntries) -> Vec<(String, bool)> {
        let mut written: Vec<(String, bool)> = entries
            .each()
            .map(|(key, value)| (serde_json::from_slice(&key).unwrap(), value.is_none()))
            .collect();
        written.sort();
        written
    }

    #[test]
    fn a_checkpoint_writes_the_keys_that_changed_and_deletes_those_whose_windows_closed() {
        let mut counts = WindowOperator::<String, _>::new(MINUTE, Count::<()>::new());
        counts.track_changes();
        for key in ["a", "b", "c"] {
            counts.add(key.to_owned(), 1_000, &(), 0, &mut Vec::new());
        }
        let (entries, snapshot) = counts.take_changes();
        assert!(!snapshot);
        assert_eq!(written(&entries).len(), 3);
        assert!(!counts.has_changes());

        counts.add("b".to_owned(), 2_000, &(), 0, &mut Vec::new());
        counts.add("b".to_owned(), 3_000, &(), 0, &mut Vec::new());
        let (entries, _) = counts.take_changes();
        assert_eq!(written(&entries), [("b".to_owned(), false)]);

        counts.add("a".to_owned(), 61_000, &(), 0, &mut Vec::new());
        counts.advance_watermark(60_000, 0, &mut Vec::new()); // closes every first minute
        let (entries, _) = counts.take_changes();
        let expected = [("a", false), ("b", true), ("c", true)].map(|(k, d)| (k.to_owned(), d));
        assert_eq!(written(&entries), expected);
    }

    #[test]
    fn a_snapshot_holds_every_key_when_asked_for() {
        let mut counts = WindowOperator::<String, _>::new(MINUTE, Count::<()>::new());
        for key in ["a", "b"] {
            counts.add(key.to_owned(), 1_000, &(), 0, &mut Vec::new());
        }
        counts.snapshot_next();
        let (entries, snapshot) = counts.take_changes();
        assert!(snapshot);
        assert_eq!(written(&entries).len(), 2);
        assert!(!counts.has_changes());
    }

    /// One step of a run: an element (key, event time, value), the watermark or processing
    /// time moving on, or a checkpoint.
    #[derive(Clone, Debug)]
    enum Step {
        Add(u8, i64, i64),
        Watermark(i64),
        ProcessingTime(i64),
        Checkpoint,
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let step = prop_oneof![
            6 => (0_u8..6, 0_i64..200_000, -5_i64..5).prop_map(|(k, t, v)| Step::Add(k, t, v)),
            2 => (0_i64..40_000).prop_map(Step::Watermark),
            2 => (0_i64..15_000).prop_map(Step::ProcessingTime),
            2 => Just(Step::Checkpoint),
        ];
        prop::collection::vec(step, 1..80)
    }

    fn specs() -> impl Strategy<Value = WindowSpec> {
        prop_oneof![
            Just(
                MINUTE
                    .trigger(
                        Trigger::on_time()
                            .early(Trigger::after_delay(Duration::from_secs(10)))
                            .late(Trigger::every(2))
                    )
                    .allowed_lateness(Duration::from_secs(120))
                    .accumulation(Accumulation::AccumulatingAndRetracting)
            ),
            Just(WindowSpec::sliding(
                Duration::from_secs(30),
                Duration::from_secs(10)
            )),
            Just(
                WindowSpec::session(Duration::from_secs(20))
                    .allowed_lateness(Duration::from_secs(30))
                    .accumulation(Accumulation::Accumulating)
            ),
        ]
    }

    type Sums = WindowOperator<u8, Sum<i64, i64>>;

    fn sums(spec: WindowSpec) -> Sums {
        let mut sums = WindowOperator::new(spec, Sum::of(|value: &i64| *value));
        sums.track_changes();
        sums
    }

    /// What a durable changelog holds: the entries since the last snapshot, in order, and
    /// the watermark of the last checkpoint.
    #[derive(Default)]
    struct Log {
        entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        watermark: i64,
    }

    impl Log {
        fn checkpoint(&mut self, sums: &mut Sums) {
            let (entries, snapshot) = sums.take_changes();
            if snapshot {
                self.entries.clear();
            }
            self.entries.extend(
                entries
                    .each()
                    .map(|(key, value)| (key.to_vec(), value.map(|value| value.to_vec()))),
            );
            self.watermark = sums.watermark();
        }

        fn restore(&self, spec: WindowSpec) -> Sums {
            let mut restored = sums(spec);
            for (key, value) in &self.entries {
                assert!(restored.apply(key, value.as_deref()), "entries decode");
            }
            restored.set_watermark(self.watermark);
            restored.rebuild_timers();
            restored
        }
    }

    /// Runs `step` on `sums`, collecting panes by key.
    fn run(
        sums: &mut Sums,
        step: &Step,
        now: &mut i64,
        panes: &mut BTreeMap<u8, Vec<Pane<u8, i64>>>,
    ) {
        let mut fired = Vec::new();
        match *step {
            Step::Add(key, time, value) => {
                sums.add(key, time, &value, *now, &mut fired);
            }
            Step::Watermark(advance) => {
                let watermark = sums.watermark().max(0).saturating_add(advance);
                sums.advance_watermark(watermark, *now, &mut fired);
            }
            Step::ProcessingTime(advance) => {
                *now += advance;
                sums.advance_processing_time(*now, &mut fired);
            }
            Step::Checkpoint => {}
        }
        for pane in fired {
            panes.entry(pane.key).or_default().push(pane);
        }
    }

    proptest! {
        /// Restored from the entries its checkpoints wrote, an operator fires what the one
        /// that wrote them fires from there on: the same panes of each key, in order.
        #[test]
        fn windows_restored_from_their_changelog_fire_as_the_originals(
            spec in specs(),
            steps in steps(),
            crash_at in 0_usize..8,
        ) {
            let mut original = sums(spec);
            let mut log = Log::default();
            let mut restored: Option<Sums> = None;
            let mut checkpoints = 0;
            let (mut now, mut restored_now) = (0, 0);
            let mut original_panes = BTreeMap::new();
            let mut restored_panes = BTreeMap::new();
            for step in &steps {
                run(&mut original, step, &mut now, &mut original_panes);
                if let Some(restored) = &mut restored {
                    run(restored, step, &mut restored_now, &mut restored_panes);
                }
                if matches!(step, Step::Checkpoint) {
                    log.checkpoint(&mut original);
                    if checkpoints == crash_at {
                        restored = Some(log.restore(spec));
                        restored_now = now;
                        original_panes.clear();
                    }
                    checkpoints += 1;
                }
            }
            if let Some(mut restored) = restored {
                // The end of the input: every window fires what it has left.
                run(&mut original, &Step::Watermark(i64::MAX), &mut now, &mut original_panes);
                run(&mut restored, &Step::Watermark(i64::MAX), &mut restored_now, &mut restored_panes);
                prop_assert_eq!(&original_panes, &restored_panes);
            }
        }
    }
}
