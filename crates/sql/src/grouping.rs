//! [`Grouping`]: the `GROUP BY` of a query with a group window, planned from DataFusion's
//! aggregate node: which expressions make a row's key and event time, which feed each
//! aggregate function, and how a fired pane becomes a row of the aggregate's output.

use std::sync::Arc;

use datafusion_common::arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch};
use datafusion_common::arrow::datatypes::{DataType, SchemaRef};
use datafusion_common::{Column, ExprSchema, ScalarValue};
use datafusion_expr::logical_plan::Aggregate as AggregateNode;
use datafusion_expr::{Expr, ExprSchemable};
use datafusion_physical_expr::PhysicalExpr;
use runnel_streamlet::window::{Pane, WindowSpec};

use crate::Error;
use crate::accumulators::{Accumulators, Function};
use crate::group_window::{GroupWindow, WINDOW_END, WINDOW_START};
use crate::query::physical;
use crate::value::{Cells, Value, array_of, is_supported};

/// A row on its way into a window: its key, its event time and each aggregate function's
/// argument.
#[derive(Debug)]
pub(crate) struct GroupedRow {
    /// The values of the `GROUP BY` expressions other than the window.
    pub(crate) key: Vec<Value>,
    /// Milliseconds since the epoch.
    pub(crate) time: i64,
    /// One per aggregate function.
    pub(crate) arguments: Vec<Value>,
}

/// A pane of a grouped query: key and aggregate results.
pub(crate) type GroupPane = Pane<Vec<Value>, Vec<Value>>;

/// Where each column of the aggregate's output comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    WindowStart,
    WindowEnd,
    Key(usize),
    Aggregate(usize),
}

/// The `GROUP BY` of a group window: what makes a row's key, event time and aggregate
/// arguments, and the row each pane gives.
#[derive(Debug)]
pub(crate) struct Grouping {
    spec: WindowSpec,
    time: Arc<dyn PhysicalExpr>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    arguments: Vec<Arc<dyn PhysicalExpr>>,
    accumulators: Accumulators,
    sources: Vec<Source>,
    /// The aggregate's output.
    schema: SchemaRef,
}

impl Grouping {
    /// The grouping `node` computes in `window`.
    pub(crate) fn plan(node: &AggregateNode, window: &GroupWindow) -> Result<Grouping, Error> {
        let input = node.input.schema();
        let at_window = |message: String| Error::Plan {
            message,
            position: window.position,
        };
        let time_column = Expr::Column(Column::new_unqualified(&window.time_column));
        match time_column.get_type(input.as_ref()) {
            Ok(DataType::Int64 | DataType::Int32) => {}
            Ok(other) => {
                return Err(at_window(format!(
                    "the event-time column '{}' is {other}: it must hold milliseconds since the \
                     epoch, as BIGINT",
                    window.time_column
                )));
            }
            Err(_) => {
                let columns: Vec<String> = input
                    .fields()
                    .iter()
                    .map(|field| field.name().clone())
                    .filter(|name| name != WINDOW_START && name != WINDOW_END)
                    .collect();
                return Err(at_window(format!(
                    "the event-time column '{}' is not a column of the input (its columns: {})",
                    window.time_column,
                    columns.join(", ")
                )));
            }
        }
        let mut sources = Vec::new();
        let mut keys = Vec::new();
        for expression in &node.group_expr {
            match expression {
                Expr::Column(column) if column.name == WINDOW_START => {
                    sources.push(Source::WindowStart);
                }
                Expr::Column(column) if column.name == WINDOW_END => {
                    sources.push(Source::WindowEnd);
                }
                Expr::GroupingSet(_) => {
                    return Err(Error::unsupported(
                        "GROUPING SETS, CUBE and ROLLUP are not supported by SQL streamlets",
                    ));
                }
                key => {
                    check_type(key, input.as_ref(), "grouping by")?;
                    sources.push(Source::Key(keys.len()));
                    keys.push(key.clone());
                }
            }
        }
        let mut functions = Vec::new();
        let mut arguments = Vec::new();
        for expression in &node.aggr_expr {
            let (function, argument) = aggregate_call(expression, input.as_ref())?;
            sources.push(Source::Aggregate(functions.len()));
            functions.push(function);
            arguments.push(argument);
        }
        Ok(Grouping {
            spec: window.spec,
            time: physical(std::slice::from_ref(&time_column), input)?.remove(0),
            keys: physical(&keys, input)?,
            arguments: physical(&arguments, input)?,
            accumulators: Accumulators::new(functions),
            sources,
            schema: Arc::new(node.schema.as_arrow().clone()),
        })
    }

    /// For an output column holding a window bound, the least value it can take in rows
    /// of windows that have not fired, as an offset from the window operator's watermark:
    /// such windows end after it. `None` for other columns, and for the start of a session
    /// (which can begin any time before).
    pub(crate) fn bound_after_watermark(&self, column: usize) -> Option<i64> {
        use runnel_streamlet::window::Windows;
        match self.sources.get(column)? {
            Source::WindowEnd => Some(1),
            Source::WindowStart => match self.spec.windows() {
                Windows::Tumbling { size } | Windows::Sliding { size, .. } => Some(1 - size),
                _ => None,
            },
            _ => None,
        }
    }

    /// Which windows, and when they fire.
    pub(crate) fn spec(&self) -> WindowSpec {
        self.spec
    }

    /// The aggregate functions, as the window engine runs them.
    pub(crate) fn accumulators(&self) -> Accumulators {
        self.accumulators.clone()
    }

    /// The key, event time and arguments of each row of `batch`, which the stages before
    /// the aggregate gave; `indices` are the rows' input indices.
    pub(crate) fn rows(
        &self,
        batch: &RecordBatch,
        indices: &[u32],
    ) -> Result<Vec<(usize, GroupedRow)>, Error> {
        let evaluate = |expressions: &[Arc<dyn PhysicalExpr>]| -> Result<Vec<ArrayRef>, Error> {
            expressions
                .iter()
                .map(|expression| {
                    expression
                        .evaluate(batch)
                        .and_then(|value| value.into_array(batch.num_rows()))
                        .map_err(|error| Error::Evaluate(error.find_root().to_string()))
                })
                .collect()
        };
        let time = evaluate(std::slice::from_ref(&self.time))?.remove(0);
        let keys = evaluate(&self.keys)?;
        let arguments = evaluate(&self.arguments)?;
        let key_cells: Vec<Cells<'_>> = keys.iter().map(Cells::of).collect();
        let argument_cells: Vec<Cells<'_>> = arguments.iter().map(Cells::of).collect();
        let times = TimeCells::of(&time);
        let mut rows = Vec::with_capacity(batch.num_rows());
        for (row, index) in indices.iter().enumerate() {
            let time = times.get(row).ok_or_else(|| {
                Error::Evaluate("the event time of the record is null".to_owned())
            })?;
            rows.push((
                *index as usize,
                GroupedRow {
                    key: key_cells.iter().map(|cells| cells.get(row)).collect(),
                    time,
                    arguments: argument_cells.iter().map(|cells| cells.get(row)).collect(),
                },
            ));
        }
        Ok(rows)
    }

    /// The aggregate's output rows for `panes`, one per pane, in order.
    pub(crate) fn batch(&self, panes: &[GroupPane]) -> Result<RecordBatch, Error> {
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(field, source)| {
                let data_type = field.data_type();
                match *source {
                    Source::WindowStart => Arc::new(Int64Array::from_iter_values(
                        panes.iter().map(|pane| pane.window_start),
                    )) as ArrayRef,
                    Source::WindowEnd => Arc::new(Int64Array::from_iter_values(
                        panes.iter().map(|pane| pane.window_end),
                    )),
                    Source::Key(at) => array_of(data_type, panes.iter().map(|pane| &pane.key[at])),
                    Source::Aggregate(at) => {
                        array_of(data_type, panes.iter().map(|pane| &pane.value[at]))
                    }
                }
            })
            .collect();
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|error| Error::Evaluate(error.to_string()))
    }
}

/// The event times of a batch, `INT` or `BIGINT`.
enum TimeCells<'a> {
    Int32(&'a Int32Array),
    Int64(&'a Int64Array),
}

impl<'a> TimeCells<'a> {
    fn of(array: &'a ArrayRef) -> TimeCells<'a> {
        match array.data_type() {
            DataType::Int32 => TimeCells::Int32(array.as_any().downcast_ref().expect("int32")),
            _ => TimeCells::Int64(array.as_any().downcast_ref().expect("planned as int64")),
        }
    }

    fn get(&self, row: usize) -> Option<i64> {
        use datafusion_common::arrow::array::Array;
        match self {
            TimeCells::Int32(array) => (!array.is_null(row)).then(|| array.value(row).into()),
            TimeCells::Int64(array) => (!array.is_null(row)).then(|| array.value(row)),
        }
    }
}

/// Refuses an expression of a type windows do not keep.
fn check_type(expression: &Expr, schema: &dyn ExprSchema, role: &str) -> Result<(), Error> {
    let data_type = expression.get_type(schema).map_err(Error::from_planner)?;
    if is_supported(&data_type) {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "{role} {expression}, of type {data_type}: SQL streamlets group and aggregate \
             BOOLEAN, INT, BIGINT, REAL, DOUBLE, VARCHAR and BYTEA"
        )))
    }
}

/// The function an aggregate expression calls, and its argument.
fn aggregate_call(expression: &Expr, schema: &dyn ExprSchema) -> Result<(Function, Expr), Error> {
    let call = match expression {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    };
    let Expr::AggregateFunction(call) = call else {
        return Err(Error::unsupported(format!("the aggregate {expression}")));
    };
    let name = call.func.name();
    let params = &call.params;
    if params.filter.is_some() {
        return Err(Error::unsupported(format!(
            "FILTER on {name}: SQL streamlets do not filter aggregates yet; use CASE inside it"
        )));
    }
    if !params.order_by.is_empty() {
        return Err(Error::unsupported(format!("ORDER BY inside {name}")));
    }
    // DataFusion 55 still plans COUNT(*) with a wildcard argument, for an optimizer rule
    // (not run here) to replace.
    #[allow(deprecated)]
    let argument = match params.args.as_slice() {
        // COUNT(*) counts rows: a constant, never null.
        [Expr::Wildcard { .. }] => &Expr::Literal(ScalarValue::Int64(Some(1)), None),
        [argument] => argument,
        _ => {
            return Err(Error::unsupported(format!(
                "{name} of {} arguments: SQL streamlets aggregate one",
                params.args.len()
            )));
        }
    };
    check_type(argument, schema, &format!("{name} of"))?;
    let float = matches!(
        argument.get_type(schema),
        Ok(DataType::Float32 | DataType::Float64)
    );
    let function = Function::named(name, params.distinct, float).ok_or_else(|| {
        let distinct = if params.distinct { "(DISTINCT)" } else { "" };
        Error::unsupported(format!(
            "the aggregate function {name}{distinct} is not supported by SQL streamlets yet: \
             they run COUNT, COUNT(DISTINCT), SUM, MIN, MAX and AVG"
        ))
    })?;
    Ok((function, argument.clone()))
}
