//! [`JoinPlan`] and [`JoinState`]: an inner equi-join of two streams, as a streaming query
//! runs it: each side's rows are kept by join key, and each new row is matched against the
//! other side's rows of its key, so every pair is emitted once, when its second row
//! arrives. Inputs are append-only (records, and windows' results), so an inner join's
//! results are too: nothing to retract.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion_common::arrow::array::{ArrayRef, RecordBatch};
use datafusion_common::arrow::datatypes::SchemaRef;
use datafusion_common::{JoinType, NullEquality};
use datafusion_expr::logical_plan::Join as JoinNode;
use datafusion_physical_expr::PhysicalExpr;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::query::physical;
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
        })
    }

    /// The condition beyond the keys, to apply to the joined rows.
    pub(crate) fn filter(&self) -> Option<&Arc<dyn PhysicalExpr>> {
        self.filter.as_ref()
    }
}

/// A row of one side, as kept.
type Row = Vec<Value>;

/// Each side's rows by join key.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct JoinState {
    #[serde(with = "pairs")]
    left: HashMap<Vec<Value>, Vec<Row>>,
    #[serde(with = "pairs")]
    right: HashMap<Vec<Value>, Vec<Row>>,
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
            for other in theirs.get(&key).into_iter().flatten() {
                joined.push(match side {
                    Side::Left => values.iter().chain(other).cloned().collect(),
                    Side::Right => other.iter().chain(&values).cloned().collect(),
                });
            }
            mine.entry(key).or_default().push(values);
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
}

/// A map with keys JSON cannot name, written as a list of pairs.
mod pairs {
    use std::collections::HashMap;
    use std::hash::Hash;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &HashMap<K, V>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter())
    }

    pub(super) fn deserialize<'de, K, V, D>(deserializer: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}
