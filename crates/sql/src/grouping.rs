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
use smallvec::SmallVec;

use crate::Error;
use crate::accumulators::{Accumulators, Function};
use crate::group_window::{GroupWindow, WINDOW_END, WINDOW_START};
use crate::query::physical;
use crate::udaf::Udaf;
use crate::updating::Change;
use crate::value::{Cells, Value, array_of, is_supported};

/// A row on its way into a window: its key, its event time and each aggregate function's
/// argument.
#[derive(Debug)]
pub(crate) struct GroupedRow {
    /// The values of the `GROUP BY` expressions other than the window.
    pub(crate) key: GroupKey,
    /// Milliseconds since the epoch.
    pub(crate) time: i64,
    /// One per aggregate function.
    pub(crate) arguments: Arguments,
}

/// A group's key: the values of its `GROUP BY` expressions, most often one, kept inline
/// so that grouping a row allocates nothing for it. Written to the changelog as a list, as
/// a `Vec` is.
pub(crate) type GroupKey = SmallVec<[Value; 1]>;

/// A row's arguments to its aggregate functions, one per function: most queries have one
/// or two, kept inline so that grouping a row allocates nothing for them.
pub(crate) type Arguments = SmallVec<[Value; 2]>;

/// A pane of a grouped query: key and aggregate results.
pub(crate) type GroupPane = Pane<GroupKey, Vec<Value>>;

/// Where each column of the aggregate's output comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    WindowStart,
    WindowEnd,
    Key(usize),
    Aggregate(usize),
}

/// A bound of the windows of a window below, as a column of its results holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FiredBound {
    /// The first millisecond; in rows of windows not fired yet it is at least this offset
    /// from the window's watermark, when that is known.
    Start(Option<i64>),
    /// The first millisecond after the window.
    End,
}

/// How a row finds its window.
#[derive(Clone, Copy, Debug)]
enum Windowing {
    /// By its event time, in the query's group window.
    GroupWindow,
    /// It is a row a window below fired, grouped by that window's bounds (as Flink's q5
    /// groups the counts of each `HOP` window by `HOP_START` and `HOP_END`): its window is
    /// the one below's, which ends at key `end` and starts at key `start`. Such a window
    /// fires once the window below has passed its end, so with the windows below.
    Fired {
        end: usize,
        start: Option<(usize, Option<i64>)>,
    },
    /// In no window: its group lives as long as the query, and its result updates.
    Updating,
}

/// The `GROUP BY` of a group window: what makes a row's key, event time and aggregate
/// arguments, and the row each pane gives.
#[derive(Debug)]
pub(crate) struct Grouping {
    spec: WindowSpec,
    windowing: Windowing,
    /// Whether its windows send results besides the on-time one (early or late), each
    /// replacing the one before.
    updating: bool,
    /// `None` without a window.
    time: Option<Arc<dyn PhysicalExpr>>,
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
        let (functions, udafs) = Grouping::functions(node, &mut sources)?;
        let mut grouping = Grouping::new(
            node,
            window.spec,
            Windowing::GroupWindow,
            Some(time_column),
            keys,
            sources,
            Accumulators::new(functions, udafs),
        )?;
        grouping.updating = window.updating;
        Ok(grouping)
    }

    /// Whether its results update: its windows send early or late results.
    pub(crate) fn is_updating(&self) -> bool {
        self.updating
    }

    /// The grouping `node` computes without a window; `retracting` when its input rows
    /// update (so they may be taken back).
    pub(crate) fn plan_updating(node: &AggregateNode, retracting: bool) -> Result<Grouping, Error> {
        let input = node.input.schema();
        let mut sources = Vec::new();
        let mut keys = Vec::new();
        for expression in &node.group_expr {
            if let Expr::GroupingSet(_) = expression {
                return Err(Error::unsupported(
                    "GROUPING SETS, CUBE and ROLLUP are not supported by SQL streamlets",
                ));
            }
            check_type(expression, input.as_ref(), "grouping by")?;
            sources.push(Source::Key(keys.len()));
            keys.push(expression.clone());
        }
        let (functions, udafs) = Grouping::functions(node, &mut sources)?;
        if retracting && let Some(udaf) = udafs.iter().find(|udaf| !udaf.retracts()) {
            return Err(Error::unsupported(format!(
                "the aggregate function {} over rows that update: its accumulator cannot take \
                 a value back",
                udaf.name()
            )));
        }
        let accumulators = if retracting {
            Accumulators::retracting(functions, udafs)
        } else {
            Accumulators::new(functions, udafs)
        };
        // The window engine's specification is not used without a window.
        let spec = WindowSpec::tumbling(std::time::Duration::from_millis(1));
        Grouping::new(
            node,
            spec,
            Windowing::Updating,
            None,
            keys,
            sources,
            accumulators,
        )
    }

    /// The grouping `node` computes over rows a window below fires, grouping them by that
    /// window's bounds; `bound` tells which input columns hold which bound.
    pub(crate) fn plan_over_fired(
        node: &AggregateNode,
        bound: impl Fn(usize) -> Option<FiredBound>,
    ) -> Result<Grouping, Error> {
        let input = node.input.schema();
        let mut sources = Vec::new();
        let mut keys = Vec::new();
        let mut end = None;
        let mut start = None;
        for expression in &node.group_expr {
            let held = match expression {
                Expr::Column(column) => input.maybe_index_of_column(column).and_then(&bound),
                _ => None,
            };
            match held {
                Some(FiredBound::End) if end.is_none() => {
                    end = Some((keys.len(), expression.clone()));
                    sources.push(Source::WindowEnd);
                }
                Some(FiredBound::Start(after_watermark)) if start.is_none() => {
                    start = Some((keys.len(), after_watermark));
                    sources.push(Source::WindowStart);
                }
                _ => {
                    if let Expr::GroupingSet(_) = expression {
                        return Err(Error::unsupported(
                            "GROUPING SETS, CUBE and ROLLUP are not supported by SQL streamlets",
                        ));
                    }
                    check_type(expression, input.as_ref(), "grouping by")?;
                    sources.push(Source::Key(keys.len()));
                }
            }
            keys.push(expression.clone());
        }
        let Some((end, time_column)) = end else {
            return Err(Error::unsupported(
                "GROUP BY over the results of a join or of a window, without the end of a \
                 window below among its keys: SQL streamlets group such results by the \
                 bounds of the window that gave them (as TUMBLE_END or HOP_END), and do not \
                 run aggregates without a window yet",
            ));
        };
        let windowing = Windowing::Fired { end, start };
        // Each window below becomes a window of one millisecond, its last, in which its rows
        // are grouped; it fires when the watermark passes the end of both.
        let spec = WindowSpec::tumbling(std::time::Duration::from_millis(1));
        let (functions, udafs) = Grouping::functions(node, &mut sources)?;
        Grouping::new(
            node,
            spec,
            windowing,
            Some(time_column),
            keys,
            sources,
            Accumulators::new(functions, udafs),
        )
    }

    /// The aggregate functions `node` calls, each added to `sources` as an output column,
    /// and those run by DataFusion's accumulators.
    fn functions(
        node: &AggregateNode,
        sources: &mut Vec<Source>,
    ) -> Result<(Vec<Function>, Vec<Udaf>), Error> {
        let input = node.input.schema();
        let mut functions = Vec::new();
        let mut udafs = Vec::new();
        for expression in &node.aggr_expr {
            let (function, _) = aggregate_call(expression, input.as_ref(), &mut udafs)?;
            sources.push(Source::Aggregate(functions.len()));
            functions.push(function);
        }
        Ok((functions, udafs))
    }

    fn new(
        node: &AggregateNode,
        spec: WindowSpec,
        windowing: Windowing,
        time_column: Option<Expr>,
        keys: Vec<Expr>,
        sources: Vec<Source>,
        accumulators: Accumulators,
    ) -> Result<Grouping, Error> {
        let input = node.input.schema();
        let arguments = node
            .aggr_expr
            .iter()
            .map(|expression| Ok(aggregate_call(expression, input.as_ref(), &mut Vec::new())?.1))
            .collect::<Result<Vec<_>, Error>>()?;
        let time = match time_column {
            Some(column) => Some(physical(std::slice::from_ref(&column), input)?.remove(0)),
            None => None,
        };
        Ok(Grouping {
            spec,
            windowing,
            updating: false,
            time,
            keys: physical(&keys, input)?,
            arguments: physical(&arguments, input)?,
            accumulators,
            sources,
            schema: Arc::new(node.schema.as_arrow().clone()),
        })
    }

    /// Which bound of its windows an output column holds, for a grouping above this one.
    pub(crate) fn fired_bound(&self, column: usize) -> Option<FiredBound> {
        match self.sources.get(column)? {
            Source::WindowEnd => Some(FiredBound::End),
            Source::WindowStart => Some(FiredBound::Start(self.bound_after_watermark(column))),
            _ => None,
        }
    }

    /// Whether the rows are those a window below fired, grouped by its bounds.
    pub(crate) fn is_over_fired(&self) -> bool {
        matches!(self.windowing, Windowing::Fired { .. })
    }

    /// Gives panes of rows a window below fired that window's bounds, from their keys.
    pub(crate) fn restore_windows(&self, panes: &mut [GroupPane]) {
        let Windowing::Fired { end, start } = self.windowing else {
            return;
        };
        for pane in panes {
            if let Value::Integer(end) = pane.key[end] {
                pane.window_end = end;
            }
            if let Some((start, _)) = start
                && let Value::Integer(start) = pane.key[start]
            {
                pane.window_start = start;
            }
        }
    }

    /// For an output column holding a window bound, the least value it can take in rows
    /// of windows that have not fired, as an offset from the window operator's watermark:
    /// such windows end after it. `None` for other columns, and for the start of a session
    /// (which can begin any time before).
    pub(crate) fn bound_after_watermark(&self, column: usize) -> Option<i64> {
        use runnel_streamlet::window::Windows;
        match self.sources.get(column)? {
            Source::WindowEnd => Some(1),
            Source::WindowStart => match (self.windowing, self.spec.windows()) {
                (Windowing::Fired { start, .. }, _) => {
                    start.and_then(|(_, after_watermark)| after_watermark)
                }
                (_, Windows::Tumbling { size } | Windows::Sliding { size, .. }) => Some(1 - size),
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

    /// The aggregate functions, to run without a window.
    pub(crate) fn aggregates(&self) -> &Accumulators {
        &self.accumulators
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
        let time = match &self.time {
            Some(time) => Some(evaluate(std::slice::from_ref(time))?.remove(0)),
            None => None,
        };
        let keys = evaluate(&self.keys)?;
        let arguments = evaluate(&self.arguments)?;
        let key_cells: Vec<Cells<'_>> = keys.iter().map(Cells::of).collect();
        let argument_cells: Vec<Cells<'_>> = arguments.iter().map(Cells::of).collect();
        let times = time.as_ref().map(TimeCells::of);
        let mut rows = Vec::with_capacity(batch.num_rows());
        for (row, index) in indices.iter().enumerate() {
            let mut time = match &times {
                Some(times) => times.get(row).ok_or_else(|| {
                    Error::Evaluate("the event time of the record is null".to_owned())
                })?,
                None => 0,
            };
            if self.is_over_fired() {
                // The last millisecond of the window below.
                time -= 1;
            }
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
        self.build(panes.iter().map(|pane| {
            (
                pane.window_start,
                pane.window_end,
                pane.key.as_slice(),
                pane.value.as_slice(),
            )
        }))
    }

    /// The aggregate's output rows for `changes` of a grouping without a window, in order.
    pub(crate) fn changes_batch(&self, changes: &[Change]) -> Result<RecordBatch, Error> {
        self.build(
            changes
                .iter()
                .map(|(key, values, _)| (0, 0, key.as_slice(), values.as_slice())),
        )
    }

    /// Rows of window bounds, keys and aggregate results.
    fn build<'a>(
        &self,
        rows: impl ExactSizeIterator<Item = (i64, i64, &'a [Value], &'a [Value])> + Clone,
    ) -> Result<RecordBatch, Error> {
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(field, source)| {
                let data_type = field.data_type();
                let rows = rows.clone();
                match *source {
                    Source::WindowStart => {
                        Arc::new(Int64Array::from_iter_values(rows.map(|row| row.0))) as ArrayRef
                    }
                    Source::WindowEnd => {
                        Arc::new(Int64Array::from_iter_values(rows.map(|row| row.1)))
                    }
                    Source::Key(at) => array_of(data_type, rows.map(|row| &row.2[at])),
                    Source::Aggregate(at) => array_of(data_type, rows.map(|row| &row.3[at])),
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
fn aggregate_call(
    expression: &Expr,
    schema: &dyn ExprSchema,
    udafs: &mut Vec<Udaf>,
) -> Result<(Function, Expr), Error> {
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
    if let Some(function) = Function::named(name, params.distinct, float) {
        return Ok((function, argument.clone()));
    }
    if params.distinct {
        return Err(Error::unsupported(format!(
            "the aggregate function {name}(DISTINCT) is not supported by SQL streamlets yet: \
             DISTINCT goes with COUNT"
        )));
    }
    // Any other function, DataFusion's or the app's, with its own accumulator.
    let (_, field) = argument.to_field(schema).map_err(Error::from_planner)?;
    udafs.push(Udaf::plan(call.func.clone(), field)?);
    Ok((Function::Udaf(udafs.len() - 1), argument.clone()))
}
