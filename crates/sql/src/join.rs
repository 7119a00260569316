//! [`JoinPlan`] and [`JoinState`]: an equi-join of two streams, as a streaming query runs
//! it: each side's rows are kept by join key, and each new row is matched against the
//! other side's rows of its key, so every pair is emitted once, when its second row
//! arrives. Over append-only inputs (records, and windows' results) an inner join's
//! results are append-only too; where an input's rows update (an aggregate's results), a
//! row taken back leaves the state and takes its pairs back (`-D`), as Flink's regular
//! joins do ([`JoinState::join`]).
//!
//! In an outer join (`LEFT`, `RIGHT`, `FULL`) a kept row of an outer side notes whether it
//! matched. With a time bound between the sides (as `B.t BETWEEN A.t AND A.t + INTERVAL
//! '10' SECOND`, Flink's interval joins), when the bound lets a row go (nothing still to
//! come can match it) one that never matched is emitted with nulls for the other side: the
//! results stay append-only, a row padded only once it is final. Without one, a row that
//! finds no match is emitted padded at once and taken back (`-D`) when its first match
//! comes, as Flink's regular outer joins do: the results update.

use std::sync::Arc;

use datafusion_common::arrow::array::{Array as _, ArrayRef, BooleanArray, RecordBatch};
use datafusion_common::arrow::compute::filter_record_batch;
use datafusion_common::arrow::datatypes::SchemaRef;
use datafusion_common::{JoinType, NullEquality};
use datafusion_expr::logical_plan::Join as JoinNode;
use datafusion_physical_expr::PhysicalExpr;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::postcard_rows::{read_row_into, write_cell, write_row, write_value, write_varint};
use crate::query::physical;
use crate::value::{Cells, Value, array_of, is_supported};
use crate::{Error, RowKind};

mod side_rows;

use side_rows::KeyRows;
pub(crate) use side_rows::SideRows;

/// Which input of a join a row comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

/// A join's keys, its condition beyond them, and its output.
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
    /// Whether the left and the right side's rows are kept in the results when they match
    /// nothing (`LEFT`, `RIGHT`, `FULL`).
    pub(crate) outer: [bool; 2],
    /// The joined rows: the left side's columns, then the right side's.
    pub(crate) schema: SchemaRef,
    /// How far apart the values of two columns of rows that match can be, for each pair
    /// of columns the condition bounds.
    pub(crate) bounds: Vec<TimeBound>,
    /// The bound that expires rows: the first of `bounds` whose columns the sides' times
    /// follow (set when the tree is planned); without one, rows are kept for good.
    pub(crate) time_bound: Option<TimeBound>,
    /// Whether the rows of either side update (an aggregate's results): a row taken back
    /// takes its pairs back, and rows are kept for good (set when the tree is planned).
    pub(crate) inputs_update: bool,
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
    /// Whether the condition bounds the pair by a range (`BETWEEN`, `<`, `>=`, ...) and not
    /// only by an equality: an equality of two columns (`A.seller = P.id`) is a key, which
    /// says nothing of time, unless the columns are windows' bounds.
    pub(crate) ranged: bool,
}

impl JoinPlan {
    /// The join `node` describes: an inner or outer join with at least one equality
    /// between its sides. Its time bound and whether its inputs update are set when the
    /// tree is planned, which knows its inputs.
    pub(crate) fn plan(node: &JoinNode) -> Result<JoinPlan, Error> {
        let outer = match node.join_type {
            JoinType::Inner => [false, false],
            JoinType::Left => [true, false],
            JoinType::Right => [false, true],
            JoinType::Full => [true, true],
            other => {
                return Err(Error::unsupported(format!(
                    "{} joins are not supported by SQL streamlets: they run inner, left, right \
                     and full joins",
                    spoken(other)
                )));
            }
        };
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
        let bounds = time_bounds(node);
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
            outer,
            schema: Arc::new(node.schema.as_arrow().clone()),
            bounds,
            time_bound: None,
            inputs_update: false,
        })
    }

    /// The join's type as SQL says it, for an outer join: "left", "right" or "full".
    pub(crate) fn outer_type(&self) -> Option<&'static str> {
        match self.outer {
            [false, false] => None,
            [true, false] => Some("left"),
            [false, true] => Some("right"),
            [true, true] => Some("full"),
        }
    }

    /// Whether the join's results update: its inputs' rows do, or it is an outer join
    /// without a time bound, which emits a row that matches nothing at once, with nulls,
    /// and takes it back (`-D`) when its first match arrives.
    pub(crate) fn is_updating(&self) -> bool {
        self.inputs_update || (self.outer_type().is_some() && self.time_bound.is_none())
    }

    /// Whether `side`'s rows are kept in the results when they match nothing.
    pub(crate) fn is_outer(&self, side: Side) -> bool {
        self.outer[side as usize]
    }

    /// `rows` of `side` that matched nothing, with nulls for the other side's columns.
    pub(crate) fn padded(&self, side: Side, rows: &[Row]) -> Result<RecordBatch, Error> {
        let padded: Vec<Row> = rows.iter().map(|row| self.padded_row(side, row)).collect();
        batch_of(&self.schema, &padded)
    }

    /// A row of `side` (its matched flag, if any, left out), with nulls for the other
    /// side's columns.
    fn padded_row(&self, side: Side, row: &[Value]) -> Row {
        let right_width = self.schema.fields().len() - self.left_width;
        let nulls = |count| std::iter::repeat_n(Value::Null, count);
        match side {
            Side::Left => row[..self.left_width]
                .iter()
                .cloned()
                .chain(nulls(right_width))
                .collect(),
            Side::Right => nulls(self.left_width)
                .chain(row[..right_width].iter().cloned())
                .collect(),
        }
    }

    /// The joined row of a row of `side`, `mine`, and a row of the other side, `theirs`
    /// (ending in its matched flag where `flagged`, which is left out).
    fn pair(
        &self,
        side: Side,
        mine: impl Iterator<Item = Value>,
        mut theirs: Row,
        flagged: bool,
    ) -> Row {
        if flagged {
            theirs.pop();
        }
        match side {
            Side::Left => mine.chain(theirs).collect(),
            Side::Right => theirs.into_iter().chain(mine).collect(),
        }
    }

    /// The condition beyond the keys, to apply to the joined rows.
    pub(crate) fn filter(&self) -> Option<&Arc<dyn PhysicalExpr>> {
        self.filter.as_ref()
    }
}

/// A row of one side, as joined.
pub(crate) type Row = Vec<Value>;

/// A join type as SQL says it, in lowercase: `LeftSemi` is "left semi".
fn spoken(join_type: JoinType) -> String {
    let mut spoken = String::new();
    for character in join_type.to_string().chars() {
        if character.is_uppercase() && !spoken.is_empty() {
            spoken.push(' ');
        }
        spoken.extend(character.to_lowercase());
    }
    spoken
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
    /// A pair of columns (left, right), what is known of `left - right` so far (at least,
    /// at most), and whether a range said any of it.
    type Known = ((usize, usize), Option<i64>, Option<i64>, bool);
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
            Some((_, known_lower, known_upper, ranged)) => {
                *known_lower = lower.or(*known_lower);
                *known_upper = upper.or(*known_upper);
                *ranged |= !equal;
            }
            None => bounds.push((pair, lower, upper, !equal)),
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
        .filter_map(|((left, right), lower, upper, ranged)| {
            Some(TimeBound {
                left,
                right,
                lower: lower?,
                upper: upper?,
                ranged,
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

/// A join key: its row of values, most often one, kept inline, so a key made or copied
/// takes no allocation of its own. Written to the changelog as a list, as a `Vec` is.
type JoinKey = SmallVec<[Value; 1]>;

/// What [`JoinState::add`] found for a batch of one side.
struct Joined {
    /// The pairs with the other side's rows: joined rows, before the join's filter.
    batch: RecordBatch,
    /// For an outer join, where each of them came from (empty for an inner join).
    pairs: Vec<Pair>,
    /// Rows of an outer side that can match nothing (their key is null), to be emitted
    /// padded now.
    unmatched: Vec<Row>,
}

/// What a batch of one side gives.
pub(crate) struct Matched {
    /// The joined rows, in order: pairs with the other side's rows that the join's
    /// condition keeps; where the results update, also rows emitted with nulls or taken
    /// back, each with its change in `kinds`.
    pub(crate) batch: RecordBatch,
    /// Where the results update, how each row changes them.
    pub(crate) kinds: Option<Vec<RowKind>>,
    /// Rows of this side that can match nothing (their key is null), to be emitted with
    /// nulls after `batch`.
    pub(crate) unmatched: Vec<Row>,
}

/// Where a joined row came from: the key, and the index of each side's row among the
/// key's rows.
pub(crate) struct Pair {
    key: JoinKey,
    mine: usize,
    theirs: usize,
}

/// Writes a new row of an outer side: its cells, then its matched flag (false), counted
/// among its values.
fn write_flagged_row(cells: &[Cells<'_>], row: usize, out: &mut Vec<u8>) {
    write_varint(out, cells.len() as u64 + 1);
    for column in cells {
        write_cell(column, row, out);
    }
    write_value(&Value::Boolean(false), out);
}

/// A batch of `schema`'s columns holding `rows`.
fn batch_of(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch, Error> {
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(column, field)| array_of(field.data_type(), rows.iter().map(|row| &row[column])))
        .collect();
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|error| Error::Evaluate(error.to_string()))
}

/// Which of the joined rows of `batch` the join's condition beyond its keys keeps (`None`
/// where it has none: every one).
fn condition(plan: &JoinPlan, batch: &RecordBatch) -> Result<Option<BooleanArray>, Error> {
    let Some(filter) = plan.filter() else {
        return Ok(None);
    };
    let mask = filter
        .evaluate(batch)
        .and_then(|value| value.into_array(batch.num_rows()))
        .map_err(|error| Error::Evaluate(error.find_root().to_string()))?;
    let mask = mask
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| Error::Evaluate("the join's condition is not a boolean".into()))?;
    Ok(Some(mask.clone()))
}

/// Whether `mask` keeps the row at `at` (null is not true).
fn passes(mask: Option<&BooleanArray>, at: usize) -> bool {
    mask.is_none_or(|mask| !mask.is_null(at) && mask.value(at))
}

/// The side opposite `side`.
fn other(side: Side) -> Side {
    match side {
        Side::Left => Side::Right,
        Side::Right => Side::Left,
    }
}

/// The join keys of `side`'s rows in `batch`, a column per key.
fn evaluate_keys(plan: &JoinPlan, side: Side, batch: &RecordBatch) -> Result<Vec<ArrayRef>, Error> {
    let keys = match side {
        Side::Left => &plan.left_keys,
        Side::Right => &plan.right_keys,
    };
    keys.iter()
        .map(|key| {
            key.evaluate(batch)
                .and_then(|value| value.into_array(batch.num_rows()))
                .map_err(|error| Error::Evaluate(error.find_root().to_string()))
        })
        .collect()
}

/// Each side's rows by join key. Serialized whole as checkpoints written before the
/// changelog held it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct JoinState {
    left: SideRows,
    right: SideRows,
}

impl JoinState {
    /// Keeps the rows of `batch`, from `side`, and returns what they give: their pairs
    /// with the other side's rows of the same key that the join's condition keeps, and
    /// where the results update, the rows emitted with nulls or taken back. Where `kinds`
    /// says a row is a retraction (the side's rows update), it is taken back instead.
    ///
    /// `time_column` is the column of `side` whose time the join's time bound expires rows
    /// by, if it has one.
    pub(crate) fn join(
        &mut self,
        plan: &JoinPlan,
        side: Side,
        batch: &RecordBatch,
        kinds: Option<&[RowKind]>,
        time_column: Option<usize>,
    ) -> Result<Matched, Error> {
        if plan.is_updating() {
            let (batch, kinds) = self.changes(plan, side, batch, kinds)?;
            return Ok(Matched {
                batch,
                kinds: Some(kinds),
                unmatched: Vec::new(),
            });
        }
        let joined = self.add(plan, side, batch, time_column)?;
        let mask = condition(plan, &joined.batch)?;
        self.note_matches(plan, side, &joined.pairs, |at| passes(mask.as_ref(), at));
        let batch = match &mask {
            Some(mask) => filter_record_batch(&joined.batch, mask)
                .map_err(|error| Error::Evaluate(error.to_string()))?,
            None => joined.batch,
        };
        Ok(Matched {
            batch,
            kinds: None,
            unmatched: joined.unmatched,
        })
    }

    /// The changes the rows of `batch`, from `side`, make to the results of a join whose
    /// results update, row by row in order, with their kinds: a row added (`kinds` says
    /// it is not a retraction) inserts its pairs, first taking back the padded rows of
    /// the other side's rows it is the first match of, and is itself emitted padded where
    /// its side is outer and it matches nothing; a row taken back deletes its pairs (or its
    /// padded row), then pads the other side's rows it was the last match of, as Flink's
    /// regular joins do.
    fn changes(
        &mut self,
        plan: &JoinPlan,
        side: Side,
        batch: &RecordBatch,
        kinds: Option<&[RowKind]>,
    ) -> Result<(RecordBatch, Vec<RowKind>), Error> {
        let keys = evaluate_keys(plan, side, batch)?;
        let key_cells: Vec<Cells<'_>> = keys.iter().map(Cells::of).collect();
        let column_cells: Vec<Cells<'_>> = batch.columns().iter().map(Cells::of).collect();
        let (mine_outer, theirs_outer) = (plan.is_outer(side), plan.is_outer(other(side)));
        // Every row's pairs with the other side's rows of its key (which this batch does
        // not change), before the condition: the condition runs over them all at once.
        let theirs = self.side(other(side));
        let mut candidates: Vec<Row> = Vec::new();
        let mut spans: Vec<Option<(JoinKey, std::ops::Range<usize>)>> = Vec::new();
        for row in 0..batch.num_rows() {
            let key: JoinKey = key_cells.iter().map(|cells| cells.get(row)).collect();
            if !plan.nulls_match && key.iter().any(Value::is_null) {
                spans.push(None); // null matches nothing
                continue;
            }
            let start = candidates.len();
            let their_rows = theirs.keys.get(&key).into_iter();
            for their_row in their_rows.flat_map(|kept| kept.rows(&theirs.arena)) {
                let mine = column_cells.iter().map(|cells| cells.get(row));
                candidates.push(plan.pair(side, mine, their_row, theirs_outer));
            }
            spans.push(Some((key, start..candidates.len())));
        }
        let candidate_batch = batch_of(&plan.schema, &candidates)?;
        let mask = condition(plan, &candidate_batch)?;
        let mut out: Vec<Row> = Vec::new();
        let mut out_kinds: Vec<RowKind> = Vec::new();
        let mut row_bytes = Vec::new();
        for (row, span) in spans.into_iter().enumerate() {
            let retract = kinds.is_some_and(|kinds| kinds[row].is_retraction());
            let change = if retract {
                RowKind::Delete
            } else {
                RowKind::Insert
            };
            let values: Row = column_cells.iter().map(|cells| cells.get(row)).collect();
            let Some((key, span)) = span else {
                if mine_outer {
                    out.push(plan.padded_row(side, &values));
                    out_kinds.push(change);
                }
                continue;
            };
            // The other side's rows, by index among their key's, it matches.
            let matched: Vec<usize> = span
                .clone()
                .filter(|at| passes(mask.as_ref(), *at))
                .collect();
            row_bytes.clear();
            if mine_outer {
                write_flagged_row(&column_cells, row, &mut row_bytes);
            } else {
                write_row(&column_cells, row, &mut row_bytes);
            }
            if !retract {
                for at in &matched {
                    let index = at - span.start;
                    let theirs = self.side_mut(other(side));
                    if theirs_outer && theirs.set_matched(&key, index, true) {
                        out.push(plan.padded_row(other(side), &theirs.row(&key, index)));
                        out_kinds.push(RowKind::Delete);
                    }
                    out.push(std::mem::take(&mut candidates[*at]));
                    out_kinds.push(RowKind::Insert);
                }
                if mine_outer && !matched.is_empty() {
                    *row_bytes.last_mut().expect("a flag") = 1; // it matched
                } else if mine_outer {
                    out.push(plan.padded_row(side, &values));
                    out_kinds.push(RowKind::Insert);
                }
                self.side_mut(side).push(&key, &row_bytes, None);
                continue;
            }
            if !self
                .side_mut(side)
                .remove_equal(&key, &row_bytes, mine_outer)
            {
                tracing::warn!(
                    ?key,
                    "a row taken back from a join that does not hold it is ignored"
                );
                continue;
            }
            for at in &matched {
                out.push(candidates[*at].clone());
                out_kinds.push(RowKind::Delete);
            }
            if mine_outer && matched.is_empty() {
                out.push(plan.padded_row(side, &values));
                out_kinds.push(RowKind::Delete);
            }
            if theirs_outer {
                for at in &matched {
                    let index = at - span.start;
                    if !self.still_matched(plan, other(side), &key, index)? {
                        let theirs = self.side_mut(other(side));
                        theirs.set_matched(&key, index, false);
                        out.push(plan.padded_row(other(side), &theirs.row(&key, index)));
                        out_kinds.push(RowKind::Insert);
                    }
                }
            }
        }
        Ok((batch_of(&plan.schema, &out)?, out_kinds))
    }

    /// Whether the row at `index` among `key`'s rows of `side` matches any of the other
    /// side's rows of its key, by the join's whole condition.
    fn still_matched(
        &self,
        plan: &JoinPlan,
        side: Side,
        key: &JoinKey,
        index: usize,
    ) -> Result<bool, Error> {
        let theirs = self.side(other(side));
        let Some(others) = theirs.keys.get(key) else {
            return Ok(false);
        };
        if !self.side(side).keys.contains_key(key) {
            return Ok(false);
        }
        if plan.filter().is_none() {
            return Ok(others.len() > 0);
        }
        let mut row = self.side(side).row(key, index);
        if plan.is_outer(side) {
            row.pop(); // whether it matched
        }
        let others_outer = plan.is_outer(other(side));
        let pairs: Vec<Row> = others
            .rows(&theirs.arena)
            .map(|mut their_row| {
                if others_outer {
                    their_row.pop(); // whether it matched
                }
                plan.pair(other(side), their_row.into_iter(), row.clone(), false)
            })
            .collect();
        let mask = condition(plan, &batch_of(&plan.schema, &pairs)?)?;
        Ok((0..pairs.len()).any(|at| passes(mask.as_ref(), at)))
    }

    /// `side`'s rows.
    fn side(&self, side: Side) -> &SideRows {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }

    /// `side`'s rows, to change.
    fn side_mut(&mut self, side: Side) -> &mut SideRows {
        match side {
            Side::Left => &mut self.left,
            Side::Right => &mut self.right,
        }
    }

    /// Keeps the rows of `batch`, from `side`, and returns their pairs with the other
    /// side's rows of the same key: joined rows, before the join's filter.
    fn add(
        &mut self,
        plan: &JoinPlan,
        side: Side,
        batch: &RecordBatch,
        time_column: Option<usize>,
    ) -> Result<Joined, Error> {
        let keys = evaluate_keys(plan, side, batch)?;
        let key_cells: Vec<Cells<'_>> = keys.iter().map(Cells::of).collect();
        let column_cells: Vec<Cells<'_>> = batch.columns().iter().map(Cells::of).collect();
        let (mine, theirs) = match side {
            Side::Left => (&mut self.left, &self.right),
            Side::Right => (&mut self.right, &self.left),
        };
        let (mine_outer, theirs_outer) = (plan.is_outer(side), plan.is_outer(other(side)));
        let mut joined: Vec<Row> = Vec::new();
        // Where each joined row came from, for an outer join to note its matches.
        let mut pairs: Vec<Pair> = Vec::new();
        // Rows of an outer side that can match nothing: null keys.
        let mut unmatched: Vec<Row> = Vec::new();
        // One key's values and one row's bytes at a time, in vectors kept for every row.
        let mut key = JoinKey::with_capacity(key_cells.len());
        let mut row_bytes = Vec::new();
        for row in 0..batch.num_rows() {
            key.clear();
            key.extend(key_cells.iter().map(|cells| cells.get(row)));
            if !plan.nulls_match && key.iter().any(Value::is_null) {
                // Null matches nothing.
                if mine_outer {
                    unmatched.push(column_cells.iter().map(|cells| cells.get(row)).collect());
                }
                continue;
            }
            // Where this row will be among its key's rows, for an outer join's matches (an
            // inner join looks nothing up for it).
            let outer = mine_outer || theirs_outer;
            let kept_index = if outer {
                mine.keys.get(&key).map_or(0, KeyRows::len)
            } else {
                0
            };
            if let Some(others) = theirs.keys.get(&key) {
                for (their_index, mut other) in others.row_bytes(&theirs.arena).enumerate() {
                    // The other row's values are read straight into the joined row.
                    let mut pair = Vec::with_capacity(plan.schema.fields().len());
                    let values = column_cells.iter().map(|cells| cells.get(row));
                    let read = match side {
                        Side::Left => {
                            pair.extend(values);
                            let read = read_row_into(&mut other, &mut pair);
                            if theirs_outer {
                                pair.pop(); // whether it matched
                            }
                            read
                        }
                        Side::Right => {
                            let read = read_row_into(&mut other, &mut pair);
                            if theirs_outer {
                                pair.pop();
                            }
                            pair.extend(values);
                            read
                        }
                    };
                    read.expect("a kept row reads back");
                    joined.push(pair);
                    if outer {
                        pairs.push(Pair {
                            key: key.clone(),
                            mine: kept_index,
                            theirs: their_index,
                        });
                    }
                }
            }
            row_bytes.clear();
            if mine_outer {
                write_flagged_row(&column_cells, row, &mut row_bytes);
            } else {
                write_row(&column_cells, row, &mut row_bytes);
            }
            let time = time_column.and_then(|column| match column_cells[column].get(row) {
                Value::Integer(time) => Some(time),
                _ => None,
            });
            mine.push(&key, &row_bytes, time);
        }
        Ok(Joined {
            batch: batch_of(&plan.schema, &joined)?,
            pairs,
            unmatched,
        })
    }

    /// Notes the matches of the rows of `side` that [`add`](JoinState::add) paired, where
    /// `passed` says which pairs the join's filter kept, so that the rows of outer sides
    /// among them are not emitted padded when they go.
    fn note_matches(
        &mut self,
        plan: &JoinPlan,
        side: Side,
        pairs: &[Pair],
        passed: impl Fn(usize) -> bool,
    ) {
        let (mine, theirs) = match side {
            Side::Left => (&mut self.left, &mut self.right),
            Side::Right => (&mut self.right, &mut self.left),
        };
        let (mine_outer, theirs_outer) = (plan.is_outer(side), plan.is_outer(other(side)));
        for (at, pair) in pairs.iter().enumerate() {
            if !passed(at) {
                continue;
            }
            for (rows, outer, index) in [
                (&mut *mine, mine_outer, pair.mine),
                (&mut *theirs, theirs_outer, pair.theirs),
            ] {
                // A key whose row matched before is not written again.
                if outer {
                    rows.set_matched(&pair.key, index, true);
                }
            }
        }
    }

    /// How many rows are kept, both sides together.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> usize {
        self.left
            .keys
            .iter()
            .chain(self.right.keys.iter())
            .map(|(_, kept)| kept.len())
            .sum()
    }

    /// How many columns the rows kept on each side have (`None` for a side without rows).
    #[cfg(test)]
    pub(crate) fn widths(&self) -> [Option<usize>; 2] {
        [&self.left, &self.right].map(|side| {
            let (_, kept) = side.keys.iter().next()?;
            kept.rows(&side.arena).next().map(|row| row.len())
        })
    }

    /// How many keys have rows, both sides together: the state's changelog entries.
    pub(crate) fn held_entries(&self) -> u64 {
        (self.left.keys.len() + self.right.keys.len()) as u64
    }

    /// Each side's rows, left then right.
    pub(crate) fn sides_mut(&mut self) -> [&mut SideRows; 2] {
        [&mut self.left, &mut self.right]
    }

    /// Forgets the rows that can match nothing any more: with `bound`, a left row at time
    /// `l` matches right rows at `l - upper ..= l - lower`, so it goes once every right row
    /// still to come is later (`left_from`, `right_from`: the least time rows still to come
    /// on each side can have, where known). Returns the rows of outer sides that went
    /// without a match, left then right, to be emitted padded.
    pub(crate) fn expire(
        &mut self,
        plan: &JoinPlan,
        bound: &TimeBound,
        left_from: Option<i64>,
        right_from: Option<i64>,
    ) -> [Vec<Row>; 2] {
        let mut unmatched = [Vec::new(), Vec::new()];
        if let Some(right_from) = right_from {
            unmatched[0] = self.left.forget(
                bound.left,
                |time| time.saturating_sub(bound.lower) >= right_from,
                plan.is_outer(Side::Left),
            );
        }
        if let Some(left_from) = left_from {
            unmatched[1] = self.right.forget(
                bound.right,
                |time| time.saturating_add(bound.upper) >= left_from,
                plan.is_outer(Side::Right),
            );
        }
        unmatched
    }
}
