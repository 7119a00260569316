//! [`JoinPlan`] and [`JoinState`]: an inner equi-join of two streams, as a streaming query
//! runs it: each side's rows are kept by join key, and each new row is matched against the
//! other side's rows of its key, so every pair is emitted once, when its second row
//! arrives. Inputs are append-only (records, and windows' results), so an inner join's
//! results are too: nothing to retract.

use std::sync::Arc;

use datafusion_common::arrow::array::{ArrayRef, RecordBatch};
use datafusion_common::arrow::datatypes::SchemaRef;
use datafusion_common::{JoinType, NullEquality};
use datafusion_expr::logical_plan::Join as JoinNode;
use datafusion_physical_expr::PhysicalExpr;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::query::physical;
use crate::tracked::{Kept, Tracked};
use crate::value::{Cells, Value, array_of, is_supported};

/// Which input of a join a row comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

/// An inner join's keys, its condition beyond them, and its output.
#[derive(Debug)]
pub(crate) struct JoinPlan {
    left_keys: Vec<Arc<dyn PhysicalExpr>>,
    right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// The rest of the `ON` condition, over a joined row.
    filter: Option<Arc<dyn PhysicalExpr>>,
    /// Whether null keys match each other (`IS NOT DISTINCT FROM`).
    nulls_match: bool,
    /// How many columns the left side has.
    left_width: usize,
    /// The joined rows: the left side's columns, then the right side's.
    pub(crate) schema: SchemaRef,
    /// How far apart the values of two columns of rows that match can be, for each pair
    /// of columns the condition bounds (the first whose columns hold times is used).
    pub(crate) bounds: Vec<TimeBound>,
}

/// What a join's condition says of a column of each side: `left - right` is between
/// `lower` and `upper` (as `A.t BETWEEN B.t - 10000 AND B.t` says of `A.t - B.t`, or an
/// equality of window bounds says with 0 and 0). With the time each side's rows have
/// reached, it tells which kept rows can match nothing any more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeBound {
    /// The column in the left side's rows.
    pub(crate) left: usize,
    /// The column in the right side's rows.
    pub(crate) right: usize,
    pub(crate) lower: i64,
    pub(crate) upper: i64,
}

impl JoinPlan {
    /// The join `node` describes: an inner join with at least one equality between its
    /// sides.
    pub(crate) fn plan(node: &JoinNode) -> Result<JoinPlan, Error> {
        if node.join_type != JoinType::Inner {
            return Err(Error::unsupported(format!(
                "{} joins are not supported by SQL streamlets yet: they run inner joins \
                 (an outer join's results change as rows arrive, which needs retractions)",
                node.join_type.to_string().to_lowercase()
            )));
        }
        if node.on.is_empty() {
            return Err(Error::unsupported(
                "a join without an equality between its inputs (a cross join): a SQL \
                 streamlet joins rows by key, as in `ON a.id = b.id`",
            ));
        }
        for field in node.schema.fields() {
            if !is_supported(field.data_type()) {
                return Err(Error::unsupported(format!(
                    "joining rows with the column '{}' of type {}: SQL streamlets join \
                     BOOLEAN, INT, BIGINT, REAL, DOUBLE, VARCHAR and BYTEA columns",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        let (left, right): (Vec<_>, Vec<_>) = node.on.iter().cloned().unzip();
        let filter = match &node.filter {
            Some(filter) => Some(physical(std::slice::from_ref(filter), &node.schema)?.remove(0)),
            None => None,
        };
        Ok(JoinPlan {
            left_keys: physical(&left, node.left.schema())?,
            right_keys: physical(&right, node.right.schema())?,
            filter,
            nulls_match: node.null_equality == NullEquality::NullEqualsNull,
            left_width: node.left.schema().fields().len(),
            schema: Arc::new(node.schema.as_arrow().clone()),
            bounds: time_bounds(node),
        })
    }

    /// The condition beyond the keys, to apply to the joined rows.
    pub(crate) fn filter(&self) -> Option<&Arc<dyn PhysicalExpr>> {
        self.filter.as_ref()
    }
}

/// A row of one side, as kept.
type Row = Vec<Value>;

/// The rows of one key of one side, and the earliest time among them in the column of the
/// join's time bound, once an expiry has looked: a later expiry skips a key whose earliest
/// row is still needed without reading its rows. Checkpointed as its rows alone.
#[derive(Debug, Default)]
pub(crate) struct KeyRows {
    rows: Vec<Row>,
    /// `None` until an expiry scanned the rows, and again after a row was added.
    earliest: Option<i64>,
}

impl Serialize for KeyRows {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.rows.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for KeyRows {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(KeyRows {
            rows: Vec::deserialize(deserializer)?,
            earliest: None,
        })
    }
}

/// The pairs of columns, one of each side, whose difference the join's condition bounds
/// from below and from above.
fn time_bounds(node: &JoinNode) -> Vec<TimeBound> {
    use datafusion_expr::{Expr, Operator, utils::split_conjunction};

    // Which side's column an expression of the form `column + k` reads, and `k`.
    let linear = |expression: &Expr| -> Option<(Side, usize, i64)> {
        let (column, offset) = match expression {
            Expr::Column(column) => (column, 0),
            Expr::BinaryExpr(binary) => {
                let (Expr::Column(column), Expr::Literal(value, _)) =
                    (binary.left.as_ref(), binary.right.as_ref())
                else {
                    return None;
                };
                let value = integer(value)?;
                match binary.op {
                    Operator::Plus => (column, value),
                    Operator::Minus => (column, value.checked_neg()?),
                    _ => return None,
                }
            }
            _ => return None,
        };
        if let Ok(index) = node.left.schema().index_of_column(column) {
            Some((Side::Left, index, offset))
        } else {
            let index = node.right.schema().index_of_column(column).ok()?;
            Some((Side::Right, index, offset))
        }
    };
    /// A pair of columns (left, right), and what is known of `left - right` so far:
    /// at least, at most.
    type Known = ((usize, usize), Option<i64>, Option<i64>);
    let mut bounds: Vec<Known> = Vec::new();
    let mut note = |small: &Expr, large: &Expr, equal: bool| {
        let (Some(small), Some(large)) = (linear(small), linear(large)) else {
            return;
        };
        // small.column + small.k <= large.column + large.k
        let (pair, lower, upper) = match (small.0, large.0) {
            // left - right <= large.k - small.k
            (Side::Left, Side::Right) => ((small.1, large.1), None, Some(large.2 - small.2)),
            // left - right >= small.k - large.k
            (Side::Right, Side::Left) => ((large.1, small.1), Some(small.2 - large.2), None),
            _ => return,
        };
        let (lower, upper) = if equal {
            let difference = lower.or(upper).expect("one is known");
            (Some(difference), Some(difference))
        } else {
            (lower, upper)
        };
        match bounds.iter_mut().find(|(known, ..)| *known == pair) {
            Some((_, known_lower, known_upper)) => {
                *known_lower = lower.or(*known_lower);
                *known_upper = upper.or(*known_upper);
            }
            None => bounds.push((pair, lower, upper)),
        }
    };
    for (left, right) in &node.on {
        note(left, right, true);
    }
    if let Some(filter) = &node.filter {
        for conjunct in split_conjunction(filter) {
            match conjunct {
                Expr::Between(between) if !between.negated => {
                    note(&between.low, &between.expr, false);
                    note(&between.expr, &between.high, false);
                }
                Expr::BinaryExpr(binary) => match binary.op {
                    Operator::Lt | Operator::LtEq => note(&binary.left, &binary.right, false),
                    Operator::Gt | Operator::GtEq => note(&binary.right, &binary.left, false),
                    Operator::Eq => note(&binary.left, &binary.right, true),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    bounds
        .into_iter()
        .filter_map(|((left, right), lower, upper)| {
            Some(TimeBound {
                left,
                right,
                lower: lower?,
                upper: upper?,
            })
        })
        .collect()
}

/// An integer literal's value.
fn integer(value: &datafusion_common::ScalarValue) -> Option<i64> {
    use datafusion_common::ScalarValue;
    match value {
        ScalarValue::Int64(Some(value)) => Some(*value),
        ScalarValue::Int32(Some(value)) => Some((*value).into()),
        _ => None,
    }
}

/// Each side's rows by join key.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct JoinState {
    left: Tracked<KeyRows>,
    right: Tracked<KeyRows>,
}

impl JoinState {
    /// Keeps the rows of `batch`, from `side`, and returns their pairs with the other
    /// side's rows of the same key: joined rows, before the join's filter.
    pub(crate) fn add(
        &mut self,
        plan: &JoinPlan,
        side: Side,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, Error> {
        let keys = match side {
            Side::Left => &plan.left_keys,
            Side::Right => &plan.right_keys,
        };
        let keys: Vec<ArrayRef> = keys
            .iter()
            .map(|key| {
                key.evaluate(batch)
                    .and_then(|value| value.into_array(batch.num_rows()))
                    .map_err(|error| Error::Evaluate(error.find_root().to_string()))
            })
            .collect::<Result<_, _>>()?;
        let key_cells: Vec<Cells<'_>> = keys.iter().map(Cells::of).collect();
        let column_cells: Vec<Cells<'_>> = batch.columns().iter().map(Cells::of).collect();
        let (mine, theirs) = match side {
            Side::Left => (&mut self.left, &self.right),
            Side::Right => (&mut self.right, &self.left),
        };
        let mut joined: Vec<Row> = Vec::new();
        for row in 0..batch.num_rows() {
            let key: Vec<Value> = key_cells.iter().map(|cells| cells.get(row)).collect();
            if !plan.nulls_match && key.iter().any(Value::is_null) {
                continue; // null matches nothing
            }
            let values: Row = column_cells.iter().map(|cells| cells.get(row)).collect();
            let others = theirs.get(&key).map_or(&[][..], |kept| &kept.rows[..]);
            for other in others {
                joined.push(match side {
                    Side::Left => values.iter().chain(other).cloned().collect(),
                    Side::Right => other.iter().chain(&values).cloned().collect(),
                });
            }
            let kept = mine.change(&key, KeyRows::default);
            kept.rows.push(values);
            kept.earliest = None;
        }
        debug_assert!(joined.iter().all(|row| row.len() >= plan.left_width));
        let columns = plan
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(column, field)| {
                array_of(field.data_type(), joined.iter().map(|row| &row[column]))
            })
            .collect();
        RecordBatch::try_new(plan.schema.clone(), columns)
            .map_err(|error| Error::Evaluate(error.to_string()))
    }

    /// How many rows are kept, both sides together.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> usize {
        self.left
            .iter()
            .chain(self.right.iter())
            .map(|(_, kept)| kept.rows.len())
            .sum()
    }

    /// How many keys have rows, both sides together: the state's changelog entries.
    pub(crate) fn held_entries(&self) -> u64 {
        (self.left.len() + self.right.len()) as u64
    }

    /// Each side's rows, left then right.
    pub(crate) fn sides_mut(&mut self) -> [&mut Tracked<KeyRows>; 2] {
        [&mut self.left, &mut self.right]
    }

    /// Forgets the rows that can match nothing any more: with `bound`, a left row at time
    /// `l` matches right rows at `l - upper ..= l - lower`, so it goes once every right row
    /// still to come is later (`left_from`, `right_from`: the least time rows still to come
    /// on each side can have, where known).
    pub(crate) fn expire(
        &mut self,
        bound: &TimeBound,
        left_from: Option<i64>,
        right_from: Option<i64>,
    ) {
        fn forget(side: &mut Tracked<KeyRows>, column: usize, live: impl Fn(i64) -> bool) {
            side.retain(|_, kept| {
                // Times only grow more live: a key whose earliest row is needed keeps all.
                if kept.earliest.is_some_and(&live) {
                    return Kept::Unchanged;
                }
                let before = kept.rows.len();
                let mut earliest = None;
                kept.rows.retain(|row| match row[column] {
                    Value::Integer(time) if live(time) => {
                        earliest = Some(earliest.map_or(time, |least: i64| least.min(time)));
                        true
                    }
                    _ => false,
                });
                kept.earliest = earliest;
                match kept.rows.len() {
                    0 => Kept::Gone,
                    after if after == before => Kept::Unchanged,
                    _ => Kept::Changed,
                }
            });
        }
        if let Some(right_from) = right_from {
            forget(&mut self.left, bound.left, |time| {
                time.saturating_sub(bound.lower) >= right_from
            });
        }
        if let Some(left_from) = left_from {
            forget(&mut self.right, bound.right, |time| {
                time.saturating_add(bound.upper) >= left_from
            });
        }
    }
}
