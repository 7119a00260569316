//! A [`Flow`]'s state as changelog entries, so a checkpoint costs what changed since the
//! last one rather than the whole state, and no record holds the whole state.
//!
//! Each window's keys (as the window operator writes them), each join side's keys and each
//! aggregate's groups are entries, their keys prefixed with the node's place in the tree (a
//! join's with its side too). The checkpoint record's value holds the rest: the windows'
//! and the scans' watermarks ([`Saved`]). A snapshot, which writes every entry, is the
//! whole flow's: every node's entries together, so the records before it can go.

use runnel_streamlet::checkpoint::{
    ChangelogEntries, ChangelogEntriesBuilder, ReplayTarget, append_postcard,
};
use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::State;
use serde::{Deserialize, Serialize};

use super::{Flow, Running};
use crate::accumulators::Accumulator;
use crate::grouping::GroupKey;
use crate::join::JoinState;
use crate::updating::Updating;
use crate::value::{self, Value};

/// The bytes of an entry's key before the node's own key: the node's place in the tree.
const NODE_PREFIX: usize = 4;

/// What a checkpoint record holds beside the changelog, in the order of the tree. A record
/// written before the state had a changelog holds every window, join and aggregate whole.
#[derive(Deserialize)]
struct Saved {
    windows: Vec<SavedWindow>,
    #[serde(default)]
    joins: Vec<JoinState>,
    #[serde(default)]
    aggregates: Vec<Updating>,
    /// The watermarks of the scans whose time columns expire join rows.
    #[serde(default)]
    scans: Vec<WatermarkHolder>,
}

#[derive(Deserialize)]
struct SavedWindow {
    /// The window operator's watermark.
    #[serde(default)]
    watermark: Option<i64>,
    watermarks: WatermarkHolder,
    /// Before the changelog: the whole state.
    #[serde(default)]
    operator: Option<State<GroupKey, Vec<Accumulator>, Vec<Value>>>,
}

#[derive(Serialize)]
struct SavedRef<'a> {
    windows: Vec<SavedWindowRef<'a>>,
    scans: Vec<&'a WatermarkHolder>,
}

#[derive(Serialize)]
struct SavedWindowRef<'a> {
    watermark: i64,
    watermarks: &'a WatermarkHolder,
}

/// The prefix of the entries of the node at `at` (and `side`, for a join's).
fn prefix(at: usize, side: Option<u8>) -> Vec<u8> {
    let mut prefix = u32::try_from(at)
        .expect("a query has fewer than 2^32 nodes")
        .to_be_bytes()
        .to_vec();
    prefix.extend(side);
    prefix
}

impl<'q> Flow<'q> {
    /// Makes the next [`take_changes`](Flow::take_changes) write every entry: the
    /// changelog holds no state yet, or more records than it should.
    pub(crate) fn snapshot_next(&mut self) {
        self.snapshots.ask();
    }

    /// The entries changed since the last call (every entry, when a snapshot is due), the
    /// checkpoint record's value, and whether the entries are a snapshot.
    pub(crate) fn take_changes(&mut self) -> (ChangelogEntries, Vec<u8>, bool) {
        let snapshot = self.snapshots.due(self.held_entries())
            || self.nodes.iter().any(|(node, _)| match node {
                Running::Window { operator, .. } => operator.snapshot_due(),
                _ => false,
            });
        let mut entries = ChangelogEntriesBuilder::default();
        let mut written = 0;
        let mut windows = Vec::new();
        let mut scans = Vec::new();
        for (at, (node, _)) in self.nodes.iter_mut().enumerate() {
            match node {
                Running::Window {
                    operator,
                    watermarks,
                    ..
                } => {
                    if snapshot {
                        operator.snapshot_next();
                    }
                    let (changes, _) =
                        operator.take_changes_written(|key, out| value::write_json(key, out));
                    let prefix = prefix(at, None);
                    for (key, value) in changes.iter().map_while(Result::ok) {
                        let key = [prefix.as_slice(), key].concat();
                        match value {
                            Some(value) => entries.value(&key, value.len(), |buffer| {
                                buffer.extend_from_slice(value);
                            }),
                            None => entries.deleted(&key),
                        }
                    }
                    written += changes.len() as u64;
                    windows.push(SavedWindowRef {
                        watermark: operator.watermark(),
                        watermarks,
                    });
                }
                Running::Join { state, .. } => {
                    for (side, rows) in state.sides_mut().into_iter().enumerate() {
                        let prefix = prefix(at, Some(side as u8));
                        written += rows.take_changes(&prefix, snapshot, &mut entries);
                    }
                }
                Running::Aggregate { state, .. } => {
                    let prefix = prefix(at, None);
                    written += state.tracked_mut().take_changes_written(
                        &prefix,
                        snapshot,
                        &mut entries,
                        |key, out| value::write_json(key, out),
                        append_postcard,
                    );
                }
                Running::Scan {
                    clock: Some(observed),
                    ..
                } => scans.push(&observed.watermarks),
                Running::Scan { clock: None, .. } | Running::Stages { .. } => {}
            }
        }
        let saved = serde_json::to_vec(&SavedRef { windows, scans }).expect("watermarks serialize");
        self.snapshots.wrote(snapshot, written);
        (entries.finish(), saved, snapshot)
    }

    /// Restores what a checkpoint record holds beside the changelog (after the changelog's
    /// entries were replayed into the flow), the windows following `strategy`, and sets the
    /// windows' timers again. A record written before the state had a changelog holds the
    /// whole state: that replaces what the flow has, and the next checkpoint is a snapshot.
    pub(crate) fn restore(
        &mut self,
        saved: Option<&[u8]>,
        strategy: Watermarks,
    ) -> Result<(), String> {
        let saved: Option<Saved> = saved
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|error| error.to_string())?;
        let (mut windows, mut joins, mut aggregates, mut scans) = match saved {
            Some(saved) => (
                saved.windows.into_iter(),
                saved.joins.into_iter(),
                saved.aggregates.into_iter(),
                saved.scans.into_iter(),
            ),
            None => Default::default(),
        };
        let mut whole = false;
        for (node, _) in &mut self.nodes {
            match node {
                Running::Scan {
                    clock: Some(observed),
                    ..
                } => {
                    // Checkpoints from before scans' watermarks were kept have none.
                    if let Some(watermarks) = scans.next() {
                        observed.watermarks = watermarks.with_strategy(strategy);
                    }
                }
                Running::Window {
                    operator,
                    watermarks,
                    ..
                } => match windows.next() {
                    Some(SavedWindow {
                        operator: Some(state),
                        watermarks: saved,
                        ..
                    }) => {
                        operator.set_state(state);
                        *watermarks = saved.with_strategy(strategy);
                        whole = true;
                    }
                    Some(SavedWindow {
                        watermark,
                        watermarks: saved,
                        operator: None,
                    }) => {
                        if let Some(watermark) = watermark {
                            operator.set_watermark(watermark);
                        }
                        *watermarks = saved.with_strategy(strategy);
                        operator.rebuild_timers();
                    }
                    None => operator.rebuild_timers(),
                },
                Running::Join { state, .. } => {
                    if let Some(saved) = joins.next() {
                        **state = saved;
                        whole = true;
                    }
                }
                Running::Aggregate { state, .. } => {
                    if let Some(saved) = aggregates.next() {
                        *state = saved;
                        whole = true;
                    }
                }
                Running::Scan { clock: None, .. } | Running::Stages { .. } => {}
            }
        }
        if windows.next().is_some() || joins.next().is_some() || aggregates.next().is_some() {
            return Err("it holds more windows, joins or aggregates than the query has".into());
        }
        if whole {
            self.snapshot_next();
        }
        Ok(())
    }

    /// The node an entry's key names, and the rest of the key.
    fn node_of<'k>(&mut self, key: &'k [u8]) -> Option<(&mut Running<'q>, &'k [u8])> {
        let (at, rest) = key.split_at_checked(NODE_PREFIX)?;
        let at = u32::from_be_bytes(at.try_into().ok()?) as usize;
        let (node, _) = self.nodes.get_mut(at)?;
        Some((node, rest))
    }
}

impl ReplayTarget for Flow<'_> {
    fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> bool {
        match self.node_of(key) {
            Some((Running::Window { operator, .. }, key)) => operator.apply(key, value),
            Some((Running::Join { state, .. }, key)) => match key.split_first() {
                Some((side @ (0 | 1), key)) => {
                    state.sides_mut()[usize::from(*side)].apply(key, value)
                }
                _ => false,
            },
            Some((Running::Aggregate { state, .. }, key)) => state.tracked_mut().apply(key, value),
            _ => false,
        }
    }

    fn mark_changed(&mut self, key: &[u8]) {
        match self.node_of(key) {
            Some((Running::Window { operator, .. }, key)) => operator.mark_changed(key),
            Some((Running::Join { state, .. }, key)) => {
                if let Some((side @ (0 | 1), key)) = key.split_first() {
                    state.sides_mut()[usize::from(*side)].mark_changed(key);
                }
            }
            Some((Running::Aggregate { state, .. }, key)) => {
                state.tracked_mut().mark_changed(key);
            }
            _ => {}
        }
    }

    fn held_entries(&self) -> u64 {
        self.nodes
            .iter()
            .map(|(node, _)| match node {
                Running::Window { operator, .. } => operator.held_entries(),
                Running::Join { state, .. } => state.held_entries(),
                Running::Aggregate { state, .. } => state.held_entries(),
                Running::Scan { .. } | Running::Stages { .. } => 0,
            })
            .sum()
    }
}
