//! [`Updating`]: the state of a `GROUP BY` without a window. Every group lives as long as the
//! query, its result changing with each row that comes (or, when the rows are themselves
//! results that update, is taken back), so what it sends on are changes ([`RowKind`]): a
//! group's first result is inserted; a later one takes the last back (`-U`) and replaces
//! it (`+U`); a group left with no row takes its result back for good (`-D`). Changes are
//! sent once per batch of input, for the groups it touched, and none for a group whose
//! result came out the same.

use std::collections::HashSet;

use runnel_streamlet::window::Aggregate;
use serde::{Deserialize, Serialize};

use crate::RowKind;
use crate::accumulators::{Accumulator, Accumulators};
use crate::grouping::{GroupKey, GroupedRow};
use crate::tracked::Tracked;
use crate::value::Value;

/// One group: its accumulators, how many rows it holds, and the result last sent.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Group {
    accumulators: Vec<Accumulator>,
    rows: i64,
    sent: Option<Vec<Value>>,
}

/// A change to the results: a group's key, a result of its aggregates, and the kind.
pub(crate) type Change = (GroupKey, Vec<Value>, RowKind);

/// Every group of an aggregate without a window, by key.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Updating {
    groups: Tracked<Group>,
}

impl Updating {
    /// Adds `rows` (each taken back instead where its kind in `kinds` is a retraction) and
    /// returns the changes to the groups' results, in the order the groups were first
    /// touched.
    pub(crate) fn add(
        &mut self,
        accumulators: &Accumulators,
        rows: Vec<GroupedRow>,
        kinds: Option<&[RowKind]>,
    ) -> Vec<Change> {
        // In the order first touched; the set keeps the check linear in the batch.
        let mut touched: Vec<GroupKey> = Vec::new();
        let mut seen: HashSet<GroupKey> = HashSet::new();
        for (at, row) in rows.into_iter().enumerate() {
            let retract = kinds.is_some_and(|kinds| kinds[at].is_retraction());
            let group = if retract {
                let Some(group) = self.groups.change_existing(&row.key) else {
                    tracing::warn!(key = ?row.key, "a row taken back from a group that has none is ignored");
                    continue;
                };
                group
            } else {
                self.groups.change(&row.key, || Group {
                    accumulators: accumulators.create(),
                    rows: 0,
                    sent: None,
                })
            };
            if retract {
                accumulators.retract(&mut group.accumulators, &row.arguments);
                group.rows -= 1;
            } else {
                accumulators.add(&mut group.accumulators, &row.arguments);
                group.rows += 1;
            }
            if seen.insert(row.key.clone()) {
                touched.push(row.key);
            }
        }
        let mut changes = Vec::new();
        for key in touched {
            let group = self
                .groups
                .change_existing(&key)
                .expect("touched groups exist");
            let result = (group.rows > 0).then(|| accumulators.result(&group.accumulators));
            if result == group.sent {
                if result.is_none() {
                    self.groups.remove(&key);
                }
                continue;
            }
            match (group.sent.take(), result) {
                (None, Some(new)) => {
                    changes.push((key, new.clone(), RowKind::Insert));
                    group.sent = Some(new);
                }
                (Some(old), Some(new)) => {
                    changes.push((key.clone(), old, RowKind::UpdateBefore));
                    changes.push((key, new.clone(), RowKind::UpdateAfter));
                    group.sent = Some(new);
                }
                (Some(old), None) => {
                    changes.push((key.clone(), old, RowKind::Delete));
                    self.groups.remove(&key);
                }
                (None, None) => unreachable!("the same result was skipped"),
            }
        }
        changes
    }

    /// How many groups are kept: the state's changelog entries.
    pub(crate) fn held_entries(&self) -> u64 {
        self.groups.len() as u64
    }

    /// The groups, whose changes a checkpoint writes.
    pub(crate) fn tracked_mut(&mut self) -> &mut Tracked<Group> {
        &mut self.groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulators::Function;

    fn row(key: i64, value: i64) -> GroupedRow {
        GroupedRow {
            key: smallvec::smallvec![Value::Integer(key)],
            time: 0,
            arguments: smallvec::smallvec![Value::Integer(value), Value::Integer(value)],
        }
    }

    fn kinds(changes: &[Change]) -> Vec<(i64, RowKind)> {
        changes
            .iter()
            .map(|(_, values, kind)| match values[0] {
                Value::Integer(sum) => (sum, *kind),
                _ => panic!("a sum"),
            })
            .collect()
    }

    #[test]
    fn groups_send_their_first_result_then_updates_then_deletes() {
        let functions = vec![Function::Sum { float: false }, Function::Max];
        let accumulators = Accumulators::retracting(functions, Vec::new());
        let mut state = Updating::default();
        let changes = state.add(&accumulators, vec![row(1, 5), row(1, 7), row(2, 1)], None);
        assert_eq!(
            kinds(&changes),
            [(12, RowKind::Insert), (1, RowKind::Insert)]
        );
        // Taking back the 7: the sum and the maximum fall back.
        let changes = state.add(
            &accumulators,
            vec![row(1, 7)],
            Some(&[RowKind::UpdateBefore]),
        );
        assert_eq!(
            kinds(&changes),
            [(12, RowKind::UpdateBefore), (5, RowKind::UpdateAfter)]
        );
        assert_eq!(
            changes[1].1[1],
            Value::Integer(5),
            "the maximum without the 7"
        );
        // A row and its retraction in one batch change nothing.
        let changes = state.add(
            &accumulators,
            vec![row(2, 4), row(2, 4)],
            Some(&[RowKind::Insert, RowKind::Delete]),
        );
        assert!(changes.is_empty(), "{changes:?}");
        // The last row of a group taken back deletes its result and forgets it.
        let changes = state.add(&accumulators, vec![row(2, 1)], Some(&[RowKind::Delete]));
        assert_eq!(kinds(&changes), [(1, RowKind::Delete)]);
        assert_eq!(state.held_entries(), 1);
    }
}
