//! [`Query`]: a SQL query over [`Table`]s, planned once, then run on batch after batch.

use std::sync::Arc;
use std::time::Duration;

use datafusion_common::DFSchemaRef;
use datafusion_common::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use datafusion_common::arrow::compute::{filter, filter_record_batch};
use datafusion_common::arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion_expr::execution_props::ExecutionProps;
use datafusion_expr::logical_plan::Aggregate;
use datafusion_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion_expr::simplify::SimplifyContext;
use datafusion_expr::{Expr, LogicalPlan};
use datafusion_optimizer::eliminate_cross_join::EliminateCrossJoin;
use datafusion_optimizer::extract_equijoin_predicate::ExtractEquijoinPredicate;
use datafusion_optimizer::optimize_projections::OptimizeProjections;
use datafusion_optimizer::push_down_filter::PushDownFilter;
use datafusion_optimizer::simplify_expressions::ExprSimplifier;
use datafusion_optimizer::{Optimizer, OptimizerContext};
use datafusion_physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion_sql::planner::{ParserOptions, SqlToRel};
use datafusion_sql::sqlparser::dialect::GenericDialect;
use datafusion_sql::sqlparser::parser::Parser;

use datafusion_common::arrow::array::Int64Array;

use crate::decode::BatchDecoder;
use crate::emit::Emit;
use crate::encode::Output;
use crate::functions::{Catalog, Functions};
use crate::group_window::{WINDOW_END, WINDOW_START, rewrite_group_windows};
use crate::resolve::Resolution;
use crate::tree::{Node, plan_tree};
use crate::{Column, ColumnType, Error, Table};

/// One stateless step of a query, applied to each batch in turn.
#[derive(Debug)]
pub(crate) enum Stage {
    /// Keeps the rows for which the predicate is true.
    Filter(Arc<dyn PhysicalExpr>),
    /// Computes the next batch's columns.
    Project(Vec<Arc<dyn PhysicalExpr>>, SchemaRef),
}

/// A query planned against its input tables: which inputs it reads, the Avro schema of its
/// results, and the operators that compute them.
///
/// Planning reports every problem a user can fix at its place in the query: SQL that does
/// not parse, an unknown table or column (with the closest name), types that do not fit,
/// output columns without a field name, and constructs not supported yet, named.
///
/// ```
/// use runnel_sql::{Column, ColumnType, Query, Table};
/// let bids = Table::new("bids", vec![
///     Column::new("auction", ColumnType::Long),
///     Column::new("price", ColumnType::Long),
/// ]);
/// let query = Query::plan(
///     "SELECT auction, price * 89 / 100 AS euros FROM bids WHERE auction % 123 = 0",
///     &[bids],
///     "Converted",
/// ).unwrap();
/// assert_eq!(query.inputs()[0].name(), "bids");
/// assert_eq!(query.output_schema()["fields"][1], serde_json::json!({"name": "euros", "type": "long"}));
/// ```
#[derive(Debug)]
pub struct Query {
    /// The tables scanned, in the order the plan first scans them.
    inputs: Vec<Table>,
    /// The operators: a scan of one input through stateless stages, or a tree with windows
    /// and joins.
    tree: Node,
    /// The schema of each input as the plan reads it: the table's, and in a query with
    /// group windows the two window columns.
    scans: Vec<SchemaRef>,
    /// Whether the query has group windows (so scans add the window columns).
    windowed: bool,
    output: Output,
}

/// What a batch of records gave: each result with the index of the record it came from, in
/// record order, and each record that could not be read or computed, with why.
#[derive(Debug)]
pub struct Processed<T = Vec<u8>> {
    /// Results, Avro encoded with the [`Query::output_schema`], by input index.
    pub results: Vec<(usize, T)>,
    /// Records that failed, by input index.
    pub rejected: Vec<(usize, Error)>,
}

impl<T> Default for Processed<T> {
    fn default() -> Self {
        Processed {
            results: Vec::new(),
            rejected: Vec::new(),
        }
    }
}

impl<T> Processed<T> {
    /// Every one of `count` records rejected for the same `reason`.
    pub(crate) fn all_rejected(count: usize, reason: &str) -> Self {
        Processed {
            results: Vec::new(),
            rejected: (0..count)
                .map(|index| (index, Error::Evaluate(reason.to_owned())))
                .collect(),
        }
    }
}

impl Query {
    /// Plans `sql` over `tables` with the [standard functions](Functions::standard); results
    /// are Avro records named `record_name`.
    ///
    /// # Errors
    ///
    /// See [`Query`]; [`Error::position`] says where.
    pub fn plan(sql: &str, tables: &[Table], record_name: &str) -> Result<Query, Error> {
        Query::plan_with(sql, tables, record_name, &Functions::standard())
    }

    /// [`plan`](Query::plan), with the app's own functions.
    ///
    /// # Errors
    ///
    /// See [`Query`].
    pub fn plan_with(
        sql: &str,
        tables: &[Table],
        record_name: &str,
        functions: &Functions,
    ) -> Result<Query, Error> {
        Query::plan_with_lateness(sql, tables, record_name, functions, Duration::ZERO)
    }

    /// [`plan_with`](Query::plan_with), the query's group windows kept `allowed_lateness`
    /// (in event time) past their end, so that rows that come after their on-time result
    /// update it: at once, or as the query's `EMIT ... AFTER WATERMARK` says. Zero closes
    /// them as the watermark passes their end, and late rows are dropped and counted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_sql::{Functions, Query, Table};
    /// let clicks = Table::from_avro("clicks", &serde_json::json!({"type": "record", "name": "Click",
    ///     "fields": [{"name": "page", "type": "string"}, {"name": "at", "type": "long"}]})).unwrap();
    /// let sql = "SELECT page, COUNT(*) AS views FROM clicks GROUP BY page, TUMBLE(at, INTERVAL '1' MINUTE) \
    ///            EMIT WITHOUT DELAY AFTER WATERMARK";
    /// let hour = Duration::from_secs(3600);
    /// let query = Query::plan_with_lateness(sql, &[clicks.clone()], "Views", &Functions::standard(), hour).unwrap();
    /// assert!(query.is_updating());
    /// let refused = Query::plan(sql, &[clicks], "Views").unwrap_err();
    /// assert!(refused.to_string().contains("allowed-lateness"));
    /// ```
    ///
    /// # Errors
    ///
    /// See [`Query`]; also a query with `EMIT ... AFTER WATERMARK` and no lateness, or with
    /// lateness and no group window.
    pub fn plan_with_lateness(
        sql: &str,
        tables: &[Table],
        record_name: &str,
        functions: &Functions,
        allowed_lateness: Duration,
    ) -> Result<Query, Error> {
        let (sql, emit) = crate::emit::split_emit(sql)?;
        let unwrapped = crate::group_window::unwrap_table_arguments(sql);
        let mut statements = Parser::new(&GenericDialect {})
            .try_with_sql(&unwrapped)
            .and_then(|mut parser| parser.parse_statements())
            .map_err(|error| Error::from_parser(&error.to_string(), sql))?;
        let mut statement = match statements.len() {
            1 => statements.remove(0),
            0 => return Err(Error::unsupported("the query is empty: write one SELECT")),
            more => {
                return Err(Error::unsupported(format!(
                    "{more} statements: a SQL streamlet runs one SELECT"
                )));
            }
        };
        crate::dialect::rewrite_flink_spellings(&mut statement);
        let mut windows = rewrite_group_windows(&mut statement)?;
        if let Some(emit) = &emit {
            if windows.is_empty() {
                return Err(Error::Plan {
                    message: "EMIT says when group windows send results, and the query groups \
                              by none (TUMBLE, HOP or SESSION)"
                        .to_owned(),
                    position: Some(emit.position),
                });
            }
            if emit.late.is_some() && allowed_lateness.is_zero() {
                return Err(Error::Plan {
                    message: "EMIT ... AFTER WATERMARK sends results for rows that come after a \
                              window's end, and its windows are not kept past it: say how long \
                              in the streamlet's declaration, as allowed-lateness = \"10 minutes\""
                        .to_owned(),
                    position: Some(emit.position),
                });
            }
        }
        if !allowed_lateness.is_zero() && windows.is_empty() {
            return Err(Error::unsupported(
                "allowed-lateness keeps group windows past their end, and the query groups by \
                 none (TUMBLE, HOP or SESSION)",
            ));
        }
        if emit.is_some() || !allowed_lateness.is_zero() {
            for window in &mut windows {
                window.spec = Emit::apply(emit.as_ref(), window.spec, allowed_lateness);
                window.spec.check().map_err(|error| Error::Plan {
                    message: format!("the windows' firings: {error}"),
                    position: window.position,
                })?;
                window.updating = true;
            }
        }
        let windowed = !windows.is_empty();
        let planned_tables = if windowed {
            tables
                .iter()
                .map(with_window_columns)
                .collect::<Result<Vec<_>, _>>()?
        } else {
            tables.to_vec()
        };
        let catalog = Catalog::new(&planned_tables, functions);
        let options = ParserOptions {
            collect_spans: true,
            ..ParserOptions::new()
        };
        let plan = SqlToRel::new_with_options(&catalog, options)
            .sql_statement_to_plan(statement)
            .map_err(Error::from_planner)?;
        let mut plan = datafusion_optimizer::Analyzer::new()
            .execute_and_check(plan, catalog.options(), |_, _| {})
            .map_err(Error::from_planner)?;
        if has_join(&plan) {
            // Join conditions written in WHERE become the join's keys, and filters on one
            // side go below the join, so that its state keeps only the rows that can match.
            plan = Optimizer::with_rules(vec![
                Arc::new(EliminateCrossJoin::new()),
                Arc::new(PushDownFilter::new()),
                Arc::new(ExtractEquijoinPredicate::new()),
            ])
            .optimize(plan, &OptimizerContext::new(), |_, _| {})
            .map_err(Error::from_planner)?;
            // Then each side's scan keeps only the columns the query reads, so the join
            // keeps, copies and checkpoints no others.
            let narrowed = Optimizer::with_rules(vec![Arc::new(OptimizeProjections::new())])
                .optimize(plan.clone(), &OptimizerContext::new(), |_, _| {})
                .map_err(Error::from_planner)?;
            plan = with_window_inputs_of(narrowed, &plan)?;
        }
        let mut names = Vec::new();
        let tree = plan_tree(&plan, &mut windows.into_iter(), &planned_tables, &mut names)?;
        let find = |tables: &[Table], name: &String| {
            tables
                .iter()
                .find(|table| table.name() == name)
                .cloned()
                .expect("the catalog knows only these tables")
        };
        let inputs = names.iter().map(|name| find(tables, name)).collect();
        let scans = names
            .iter()
            .map(|name| find(&planned_tables, name).arrow_schema())
            .collect();
        let output = Output::new(plan.schema().as_arrow(), record_name)?;
        let query = Query {
            inputs,
            tree,
            scans,
            windowed,
            output,
        };
        Ok(query)
    }

    /// Whether the query keeps state: it groups by an event-time window (`GROUP BY ...,
    /// TUMBLE(...)`) or joins, so its results come from windows as they fire and from
    /// matches as they are found, rather than from each record alone
    /// ([`SqlStreamlet`](crate::SqlStreamlet) runs it either way).
    pub fn is_stateful(&self) -> bool {
        self.tree.is_stateful()
    }

    /// Whether the query's results update: it has an aggregate without a window (`GROUP BY
    /// category` over every row so far), so each result says how it changes the result
    /// table ([`RowKind`](crate::RowKind), in the header [`RowKind::HEADER`](crate::RowKind::HEADER)).
    ///
    /// ```
    /// use runnel_sql::{Column, ColumnType, Query, Table};
    /// let bids = Table::new("bids", vec![
    ///     Column::new("auction", ColumnType::Long),
    ///     Column::new("price", ColumnType::Long),
    /// ]);
    /// let highest = Query::plan(
    ///     "SELECT auction, MAX(price) AS highest FROM bids GROUP BY auction",
    ///     &[bids],
    ///     "Highest",
    /// ).unwrap();
    /// assert!(highest.is_stateful() && highest.is_updating());
    /// ```
    pub fn is_updating(&self) -> bool {
        self.tree.is_updating()
    }

    /// The operators of the query.
    pub(crate) fn tree(&self) -> &Node {
        &self.tree
    }

    /// The tables the query reads (in `FROM`): the SQL streamlet's inlets.
    pub fn inputs(&self) -> &[Table] {
        &self.inputs
    }

    /// The Avro schema of the results: the SQL streamlet's outlet schema.
    pub fn output_schema(&self) -> &serde_json::Value {
        self.output.schema()
    }

    /// Runs the query over Avro records of the table `table` (one of
    /// [`inputs`](Query::inputs)).
    ///
    /// A record that does not decode, or on which the query fails (a division by zero, a
    /// cast that does not fit), is rejected with the reason; the others give their results.
    ///
    /// ```
    /// use runnel_sql::{Column, ColumnType, Query, Table};
    /// let numbers = Table::new("numbers", vec![Column::new("n", ColumnType::Long)]);
    /// let query = Query::plan("SELECT n * 2 AS twice FROM numbers WHERE n > 0", &[numbers], "Twice").unwrap();
    /// // 21, -1 (zigzag encoded), and a record cut short.
    /// let processed = query.process("numbers", &[&[42], &[1], &[]]);
    /// assert_eq!(processed.results, [(0, vec![84])]);
    /// assert_eq!(processed.rejected[0].0, 2);
    /// ```
    ///
    /// # Panics
    ///
    /// If `table` is not an input, or the query [is stateful](Query::is_stateful): its
    /// results come from windows and joins, not from each record ([`Execution`](crate::Execution) runs it).
    pub fn process(&self, table: &str, records: &[&[u8]]) -> Processed {
        self.process_written(table, None, records)
    }

    /// [`process`](Query::process) for records written with another schema, `writer`,
    /// than the table's (a producer's older or newer schema): each is read with the
    /// writer's schema and resolved to the table's as Avro resolves it (fields by name,
    /// promotions, the table's defaults for fields the writer lacks).
    ///
    /// ```
    /// use runnel_sql::{Query, Table};
    /// use serde_json::json;
    /// let now = Table::from_avro("readings", &json!({"type": "record", "name": "R", "fields": [
    ///     {"name": "celsius", "type": "double"},
    ///     {"name": "unit", "type": "string", "default": "C"}]})).unwrap();
    /// let before = Table::from_avro("readings", &json!({"type": "record", "name": "R", "fields": [
    ///     {"name": "celsius", "type": "float"}]})).unwrap();
    /// let query = Query::plan("SELECT unit FROM readings WHERE celsius > 1", &[now], "Unit").unwrap();
    /// let processed = query.process_written_with("readings", &before, &[&2.5f32.to_le_bytes()]);
    /// assert_eq!(processed.results, [(0, vec![2, b'C'])]);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`process`](Query::process).
    pub fn process_written_with(
        &self,
        table: &str,
        writer: &Table,
        records: &[&[u8]],
    ) -> Processed {
        self.process_written(table, Some(writer), records)
    }

    /// [`process`](Query::process) of records written with `writer`'s schema, or the
    /// table's.
    pub(crate) fn process_written(
        &self,
        table: &str,
        writer: Option<&Table>,
        records: &[&[u8]],
    ) -> Processed {
        let Node::Scan { stages, .. } = &self.tree else {
            panic!(
                "a stateful query's results come from its windows and joins: run it as a SqlStreamlet"
            )
        };
        self.read(
            self.input_index(table),
            writer,
            records,
            |batch, indices| {
                let (indices, batch) = run_stages(stages, batch, indices)?;
                let columns = self.output.cast(batch.columns().to_vec())?;
                Ok(self.encode(&indices, &columns))
            },
        )
    }

    /// The index of the input `table`.
    ///
    /// # Panics
    ///
    /// If the query does not read `table`.
    pub(crate) fn input_index(&self, table: &str) -> usize {
        self.inputs
            .iter()
            .position(|input| input.name() == table)
            .unwrap_or_else(|| panic!("the query reads only its inputs, not {table}"))
    }

    /// Decodes `records` of the input `input` (written with `writer`'s schema, or the
    /// table's), resolves them to the table's schema and hands the batch to `finish`,
    /// which gives each result with its record's index.
    pub(crate) fn read<T>(
        &self,
        input: usize,
        writer: Option<&Table>,
        records: &[&[u8]],
        finish: impl Fn(RecordBatch, UInt32Array) -> Result<Vec<(usize, T)>, Error>,
    ) -> Processed<T> {
        let (decoded, rejected) = self.decode(input, writer, records);
        let mut processed = Processed {
            results: Vec::new(),
            rejected,
        };
        decoded.run(&mut processed, finish);
        processed
    }

    /// Decodes `records` of the input `input` (written with `writer`'s schema, or the
    /// table's) into one batch resolved to the table's schema, once for every part of the
    /// query that reads the input; and the records that could not be read, by index.
    pub(crate) fn decode(
        &self,
        input: usize,
        writer: Option<&Table>,
        records: &[&[u8]],
    ) -> (Decoded, Vec<(usize, Error)>) {
        let table = &self.inputs[input];
        let resolution = match writer.map(|writer| Resolution::new(writer, table)) {
            None => None,
            Some(Ok(resolution)) => Some(resolution),
            Some(Err(error)) => {
                let all = Processed::<()>::all_rejected(records.len(), &error.to_string());
                return (Decoded { rows: None }, all.rejected);
            }
        };
        let mut decoder = BatchDecoder::new(writer.unwrap_or(table));
        let mut rejected = Vec::new();
        let mut indices = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            match decoder.append(record) {
                Ok(()) => indices.push(index as u32),
                Err(error) => rejected.push((index, error)),
            }
        }
        let indices = UInt32Array::from(indices);
        let resolved = match &resolution {
            Some(resolution) => resolution.resolve(&decoder.finish()),
            None => Ok(decoder.finish()),
        };
        let with_windows = |batch: RecordBatch| {
            if self.windowed {
                with_unset_window_columns(batch, &self.scans[input])
            } else {
                Ok(batch)
            }
        };
        match resolved.and_then(with_windows) {
            Ok(batch) => (
                Decoded {
                    rows: Some((batch, indices)),
                },
                rejected,
            ),
            Err(error) => {
                let message = error.to_string();
                rejected.extend(
                    indices
                        .values()
                        .iter()
                        .map(|index| (*index as usize, Error::Evaluate(message.clone()))),
                );
                rejected.sort_by_key(|(index, _)| *index);
                (Decoded { rows: None }, rejected)
            }
        }
    }

    /// Each row of `batch`, the last stage's, written as Avro with the output schema.
    pub(crate) fn encode_batch(&self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>, Error> {
        let columns = self.output.cast(batch.columns().to_vec())?;
        let indices = UInt32Array::from_iter_values(0..batch.num_rows() as u32);
        Ok(self
            .encode(&indices, &columns)
            .into_iter()
            .map(|(_, bytes)| bytes)
            .collect())
    }

    /// Each row of `columns` written as Avro, with its input index.
    fn encode(&self, indices: &UInt32Array, columns: &[ArrayRef]) -> Vec<(usize, Vec<u8>)> {
        // Each row is written into one buffer, then copied into a value of exactly its
        // length: one allocation per result, none wasted.
        let mut buffer = Vec::with_capacity(256);
        let mut results = Vec::with_capacity(indices.len());
        for (row, index) in indices.values().iter().enumerate() {
            buffer.clear();
            self.output.write_row(columns, row, &mut buffer);
            results.push((*index as usize, buffer.as_slice().to_vec()));
        }
        results
    }
}

/// The records of one input read as one batch ([`Query::decode`]), which every part of
/// the query reading that input runs on.
pub(crate) struct Decoded {
    /// The rows read and the index of each one's record; `None` when none could be.
    rows: Option<(RecordBatch, UInt32Array)>,
}

impl Decoded {
    /// Runs `finish` over the rows, adding its results and the rows it fails on to
    /// `processed`.
    pub(crate) fn run<T>(
        &self,
        processed: &mut Processed<T>,
        finish: impl Fn(RecordBatch, UInt32Array) -> Result<Vec<(usize, T)>, Error>,
    ) {
        if let Some((batch, indices)) = &self.rows {
            each_row(batch.clone(), indices.clone(), processed, finish);
        }
    }

    /// The rows read, for a part of the query that reads them as they are.
    pub(crate) fn processed<T>(
        &self,
        finish: impl Fn(RecordBatch, UInt32Array) -> Result<Vec<(usize, T)>, Error>,
    ) -> Processed<T> {
        let mut processed = Processed::default();
        self.run(&mut processed, finish);
        processed
    }
}

/// Runs `finish` over `batch`, whose rows came from the inputs at `indices`; if it
/// fails, over each row alone, so that only the rows it fails on are rejected.
pub(crate) fn each_row<T>(
    batch: RecordBatch,
    indices: UInt32Array,
    processed: &mut Processed<T>,
    finish: impl Fn(RecordBatch, UInt32Array) -> Result<Vec<(usize, T)>, Error>,
) {
    match finish(batch.clone(), indices.clone()) {
        Ok(results) => processed.results.extend(results),
        Err(_) => {
            for row in 0..batch.num_rows() {
                let index = indices.slice(row, 1);
                match finish(batch.slice(row, 1), index.clone()) {
                    Ok(results) => processed.results.extend(results),
                    Err(error) => processed.rejected.push((index.value(0) as usize, error)),
                }
            }
            processed.results.sort_by_key(|(index, _)| *index);
        }
    }
    processed.rejected.sort_by_key(|(index, _)| *index);
}

/// `stages` over one batch, whose rows came from the inputs at `indices`: the indices of
/// the rows that remain, and the last stage's batch.
pub(crate) fn run_stages(
    stages: &[Stage],
    mut batch: RecordBatch,
    mut indices: UInt32Array,
) -> Result<(UInt32Array, RecordBatch), Error> {
    let evaluate_error =
        |error: datafusion_common::DataFusionError| Error::Evaluate(error.find_root().to_string());
    let arrow_error =
        |error: datafusion_common::arrow::error::ArrowError| Error::Evaluate(error.to_string());
    for stage in stages {
        match stage {
            Stage::Filter(predicate) => {
                let mask = predicate
                    .evaluate(&batch)
                    .and_then(|value| value.into_array(batch.num_rows()))
                    .map_err(evaluate_error)?;
                let mask = mask
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| Error::Evaluate("the WHERE clause is not a boolean".into()))?;
                batch = filter_record_batch(&batch, mask).map_err(arrow_error)?;
                let kept = filter(&indices, mask).map_err(arrow_error)?;
                indices = kept
                    .as_any()
                    .downcast_ref::<UInt32Array>()
                    .expect("filtering keeps the type")
                    .clone();
            }
            Stage::Project(expressions, schema) => {
                let columns = expressions
                    .iter()
                    .map(|expression| {
                        expression
                            .evaluate(&batch)
                            .and_then(|value| value.into_array(batch.num_rows()))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(evaluate_error)?;
                let options = datafusion_common::arrow::array::RecordBatchOptions::new()
                    .with_row_count(Some(batch.num_rows()));
                batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
                    .map_err(arrow_error)?;
            }
        }
    }
    Ok((indices, batch))
}

/// `table` as a windowed query reads it: with the columns [`WINDOW_START`] and
/// [`WINDOW_END`], which it must not have already.
fn with_window_columns(table: &Table) -> Result<Table, Error> {
    let mut columns = table.columns().to_vec();
    for name in [WINDOW_START, WINDOW_END] {
        if columns.iter().any(|column| column.name == name) {
            return Err(Error::Plan {
                message: format!(
                    "table '{}' has a column '{name}', which a query with a group window adds \
                     (the window's bounds): rename it in the producer's schema",
                    table.name()
                ),
                position: None,
            });
        }
        columns.push(Column::new(name, ColumnType::Long));
    }
    Ok(Table::new(table.name(), columns))
}

/// A decoded batch of the input with the two window columns the plan reads, zero until a
/// window fires (nothing reads them before: `WHERE` may not).
fn with_unset_window_columns(batch: RecordBatch, scan: &SchemaRef) -> Result<RecordBatch, Error> {
    let unset: ArrayRef = Arc::new(Int64Array::from(vec![0; batch.num_rows()]));
    let mut columns = batch.columns().to_vec();
    columns.push(unset.clone());
    columns.push(unset);
    RecordBatch::try_new(scan.clone(), columns).map_err(|error| Error::Evaluate(error.to_string()))
}

/// Whether `plan` joins.
fn has_join(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Join(_)) || plan.inputs().into_iter().any(has_join)
}

/// Whether `aggregate` groups by a group window's bounds.
fn is_windowed(aggregate: &Aggregate) -> bool {
    aggregate.group_expr.iter().any(|expression| {
        matches!(expression, Expr::Column(column)
            if column.name == WINDOW_START || column.name == WINDOW_END)
    })
}

/// `narrowed` (`original` with the columns each node reads pushed into its scans) with
/// the input of each group window as in `original`: a window reads its event-time
/// column, which no expression of the plan names, so the narrowing drops it. The
/// windows are in the same order in both plans, and their expressions read columns the
/// original input has.
fn with_window_inputs_of(
    narrowed: LogicalPlan,
    original: &LogicalPlan,
) -> Result<LogicalPlan, Error> {
    let mut inputs = Vec::new();
    original
        .apply(|node| {
            if let LogicalPlan::Aggregate(aggregate) = node
                && is_windowed(aggregate)
            {
                inputs.push(aggregate.input.clone());
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .map_err(Error::from_planner)?;
    let mut inputs = inputs.into_iter();
    narrowed
        .transform_down(|node| match node {
            LogicalPlan::Aggregate(aggregate) if is_windowed(&aggregate) => {
                let input = inputs.next().expect("both plans have the same windows");
                let restored =
                    Aggregate::try_new(input, aggregate.group_expr, aggregate.aggr_expr)?;
                Ok(Transformed::yes(LogicalPlan::Aggregate(restored)))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|transformed| transformed.data)
        .map_err(Error::from_planner)
}

/// The physical expressions of `expressions` over rows of `schema`.
///
/// Each is simplified first, as DataFusion's optimizer would: constants folded, and the
/// functions that only exist to be rewritten (`coalesce`, `nvl`...) rewritten.
pub(crate) fn physical(
    expressions: &[Expr],
    schema: &DFSchemaRef,
) -> Result<Vec<Arc<dyn PhysicalExpr>>, Error> {
    let properties = ExecutionProps::new();
    let context = PhysicalPlanningContext::default();
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(schema.clone())
            .build(),
    );
    expressions
        .iter()
        .map(|expression| {
            let simplified = simplifier
                .simplify(expression.clone())
                .map_err(Error::from_planner)?;
            create_physical_expr(&simplified, schema, &properties, &context)
                .map_err(Error::from_planner)
        })
        .collect()
}

/// The error for a plan node SQL streamlets do not run yet.
pub(crate) fn unsupported(node: &LogicalPlan) -> Error {
    let construct = match node {
        LogicalPlan::Aggregate(_) => {
            "GROUP BY without a group window (TUMBLE, HOP or SESSION) is not supported by SQL \
             streamlets yet: its results change as rows arrive, which needs retractions"
        }
        LogicalPlan::Sort(_) => {
            "ORDER BY is not supported: an unbounded stream has no end to sort at"
        }
        LogicalPlan::Limit(_) => "LIMIT is not supported: an unbounded stream has no end",
        LogicalPlan::Distinct(_) => "DISTINCT is not supported by SQL streamlets yet",
        LogicalPlan::Union(_) => "UNION is not supported by SQL streamlets yet",
        LogicalPlan::Window(_) => "window functions (OVER) are not supported by SQL streamlets yet",
        LogicalPlan::Subquery(_) => "subqueries are not supported by SQL streamlets yet",
        LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => {
            "a query without FROM: a SQL streamlet reads its inputs, named in FROM"
        }
        _ => {
            return Error::unsupported(format!(
                "'{}' is not supported by SQL streamlets: they run SELECT ... FROM ... WHERE ...",
                node.display()
            ));
        }
    };
    Error::unsupported(construct)
}
