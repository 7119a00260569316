//! [`Functions`]: the scalar and aggregate functions a query may call: DataFusion's, and
//! the app's own.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion_common::arrow::datatypes::DataType;
use datafusion_common::config::ConfigOptions;
use datafusion_common::{DataFusionError, TableReference};
use datafusion_expr::logical_plan::builder::LogicalTableSource;
use datafusion_expr::planner::{ContextProvider, ExprPlanner};
use datafusion_expr::{AggregateUDF, HigherOrderUDF, ScalarUDF, TableSource, WindowUDF};

use crate::Table;

/// The functions queries may call: DataFusion's scalar functions (`abs`, `lower`,
/// `concat`, `date_trunc`, the string and math functions...) and aggregates, Flink's JSON
/// functions (`JSON_VALUE`, `JSON_QUERY`, `JSON_EXISTS`), and
/// any the app registers, in Rust.
///
/// ```
/// use std::sync::Arc;
/// use runnel_sql::{Column, ColumnType, Functions, Query, Table};
/// use runnel_sql::datafusion::arrow::datatypes::DataType;
/// use runnel_sql::datafusion::expr::{ColumnarValue, Volatility, create_udf};
///
/// // cents_to_euros(BIGINT) -> BIGINT, as the app defines it.
/// let cents_to_euros = create_udf(
///     "cents_to_euros",
///     vec![DataType::Int64],
///     DataType::Int64,
///     Volatility::Immutable,
///     Arc::new(|arguments: &[ColumnarValue]| {
///         use runnel_sql::datafusion::arrow::{array::Int64Array, compute::kernels::numeric};
///         let arrays = ColumnarValue::values_to_arrays(arguments)?;
///         let rate = Int64Array::new_scalar(89);
///         let hundred = Int64Array::new_scalar(100);
///         let euros = numeric::div(&numeric::mul(&arrays[0], &rate)?, &hundred)?;
///         Ok(ColumnarValue::Array(euros))
///     }),
/// );
/// let functions = Functions::standard().with_scalar(cents_to_euros);
/// let bids = Table::new("bids", vec![Column::new("price", ColumnType::Long)]);
/// let query = Query::plan_with("SELECT cents_to_euros(price) AS euros FROM bids", &[bids], "Euros", &functions).unwrap();
/// // A function's result may be null, unless its implementation says otherwise.
/// assert_eq!(query.output_schema()["fields"][0]["type"], serde_json::json!(["null", "long"]));
/// ```
#[derive(Clone, Debug)]
pub struct Functions {
    scalars: HashMap<String, Arc<ScalarUDF>>,
    aggregates: HashMap<String, Arc<AggregateUDF>>,
}

impl Functions {
    /// DataFusion's scalar and aggregate functions, and Flink's `JSON_VALUE`, `JSON_QUERY`
    /// and `JSON_EXISTS`.
    pub fn standard() -> Self {
        let mut functions = Functions {
            scalars: HashMap::new(),
            aggregates: HashMap::new(),
        };
        for scalar in datafusion_functions::all_default_functions() {
            functions = functions.with_scalar_arc(scalar);
        }
        for aggregate in datafusion_functions_aggregate::all_default_aggregate_functions() {
            functions = functions.with_aggregate_arc(aggregate);
        }
        for json in crate::json::functions() {
            functions = functions.with_scalar(json);
        }
        functions
    }

    /// Adds a scalar function (made with DataFusion's `create_udf`, or a `ScalarUDFImpl`);
    /// it replaces a standard one of the same name.
    pub fn with_scalar(self, function: ScalarUDF) -> Self {
        self.with_scalar_arc(Arc::new(function))
    }

    /// Adds an aggregate function (DataFusion's `create_udaf`, or an `AggregateUDFImpl`).
    pub fn with_aggregate(self, function: AggregateUDF) -> Self {
        self.with_aggregate_arc(Arc::new(function))
    }

    fn with_scalar_arc(mut self, function: Arc<ScalarUDF>) -> Self {
        for alias in function.aliases() {
            self.scalars.insert(alias.clone(), function.clone());
        }
        self.scalars.insert(function.name().to_owned(), function);
        self
    }

    fn with_aggregate_arc(mut self, function: Arc<AggregateUDF>) -> Self {
        for alias in function.aliases() {
            self.aggregates.insert(alias.clone(), function.clone());
        }
        self.aggregates.insert(function.name().to_owned(), function);
        self
    }
}

impl Default for Functions {
    fn default() -> Self {
        Functions::standard()
    }
}

/// What the planner asks for: the query's tables and the functions.
pub(crate) struct Catalog<'a> {
    tables: HashMap<String, Arc<dyn TableSource>>,
    functions: &'a Functions,
    options: ConfigOptions,
    expression_planners: Vec<Arc<dyn ExprPlanner>>,
}

impl<'a> Catalog<'a> {
    pub(crate) fn new(tables: &[Table], functions: &'a Functions) -> Self {
        let tables = tables
            .iter()
            .map(|table| {
                let source: Arc<dyn TableSource> =
                    Arc::new(LogicalTableSource::new(table.arrow_schema()));
                (table.name().to_owned(), source)
            })
            .collect();
        let mut options = ConfigOptions::default();
        options.sql_parser.collect_spans = true;
        Catalog {
            tables,
            functions,
            options,
            expression_planners: vec![Arc::new(
                datafusion_functions::core::planner::CoreFunctionPlanner::default(),
            )],
        }
    }

    pub(crate) fn options(&self) -> &ConfigOptions {
        &self.options
    }
}

impl ContextProvider for Catalog<'_> {
    fn get_table_source(
        &self,
        name: TableReference,
    ) -> datafusion_common::Result<Arc<dyn TableSource>> {
        self.tables.get(name.table()).cloned().ok_or_else(|| {
            let mut known: Vec<&str> = self.tables.keys().map(String::as_str).collect();
            known.sort_unstable();
            DataFusionError::Plan(format!(
                "table '{}' is not an input of this query; its inputs are {}",
                name.table(),
                known
                    .iter()
                    .map(|known| format!("'{known}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    fn get_function_meta(&self, name: &str) -> Option<Arc<ScalarUDF>> {
        self.functions.scalars.get(name).cloned()
    }

    fn get_higher_order_meta(&self, _name: &str) -> Option<Arc<HigherOrderUDF>> {
        None
    }

    fn get_aggregate_meta(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        self.functions.aggregates.get(name).cloned()
    }

    fn get_window_meta(&self, _name: &str) -> Option<Arc<WindowUDF>> {
        None
    }

    fn get_variable_type(&self, _variable_names: &[String]) -> Option<DataType> {
        None
    }

    fn options(&self) -> &ConfigOptions {
        &self.options
    }

    fn udf_names(&self) -> Vec<String> {
        self.functions.scalars.keys().cloned().collect()
    }

    fn higher_order_function_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn udaf_names(&self) -> Vec<String> {
        self.functions.aggregates.keys().cloned().collect()
    }

    fn udwf_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn get_expr_planners(&self) -> &[Arc<dyn ExprPlanner>] {
        &self.expression_planners
    }
}
