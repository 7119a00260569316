//! [`Udaf`]: an aggregate function run by DataFusion's own accumulator (the app's, or one
//! of DataFusion's beyond `COUNT` to `AVG`, such as `stddev` or `approx_distinct`) inside
//! Runnel's windows and aggregates without a window.
//!
//! The window engine keeps, checkpoints and merges accumulators as values, so this one is
//! kept as the accumulator's state (`Accumulator::state`, DataFusion's form for merging
//! partial aggregates), and each step brings a DataFusion accumulator back from it: merge
//! the state in, add (or take back) a value, take the state out again. That costs an
//! accumulator per step, where the built-in functions add in place; a function whose state
//! is not made of scalars Runnel keeps (`median`'s list of every value) is refused at
//! planning.

use std::sync::Arc;

use datafusion_common::ScalarValue;
use datafusion_common::arrow::array::ArrayRef;
use datafusion_common::arrow::datatypes::{FieldRef, Schema};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::{Accumulator, AggregateUDF};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_expr::expressions::Column;

use crate::Error;
use crate::value::{Cells, Value, array_of, is_supported};

/// An aggregate function with DataFusion's accumulator, over one argument.
#[derive(Clone)]
pub(crate) struct Udaf {
    function: Arc<AggregateUDF>,
    argument: FieldRef,
    result: FieldRef,
    /// The fields of its accumulator's state.
    state: Vec<FieldRef>,
    /// Whether its accumulator takes values back (`retract_batch`).
    retracts: bool,
}

impl std::fmt::Debug for Udaf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Udaf")
            .field("function", &self.function.name())
            .finish_non_exhaustive()
    }
}

impl Udaf {
    /// `function` over an argument of `argument`'s type, if Runnel can keep its state.
    pub(crate) fn plan(function: Arc<AggregateUDF>, argument: FieldRef) -> Result<Udaf, Error> {
        let name = function.name().to_owned();
        let planning = |error: datafusion_common::DataFusionError| {
            Error::unsupported(format!(
                "the aggregate function {name}: {}",
                error.find_root()
            ))
        };
        let result = function
            .return_field(std::slice::from_ref(&argument))
            .map_err(planning)?;
        let state = function
            .state_fields(StateFieldsArgs {
                name: &name,
                input_fields: std::slice::from_ref(&argument),
                return_field: result.clone(),
                ordering_fields: &[],
                is_distinct: false,
            })
            .map_err(planning)?;
        for field in state.iter().chain(std::iter::once(&result)) {
            if !is_supported(field.data_type()) {
                return Err(Error::unsupported(format!(
                    "the aggregate function {name}: it keeps {} as {}, which SQL streamlets do \
                     not keep in windows yet (scalars only)",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        let mut udaf = Udaf {
            function,
            argument,
            result,
            state,
            retracts: false,
        };
        udaf.retracts = udaf.accumulator()?.supports_retract_batch();
        Ok(udaf)
    }

    /// The function's name.
    pub(crate) fn name(&self) -> &str {
        self.function.name()
    }

    /// Whether its accumulator takes values back.
    pub(crate) fn retracts(&self) -> bool {
        self.retracts
    }

    fn accumulator(&self) -> Result<Box<dyn Accumulator>, Error> {
        let schema = Schema::new(vec![self.argument.clone()]);
        let argument: Arc<dyn PhysicalExpr> = Arc::new(Column::new(self.argument.name(), 0));
        self.function
            .accumulator(AccumulatorArgs {
                return_field: self.result.clone(),
                schema: &schema,
                ignore_nulls: false,
                order_bys: &[],
                is_reversed: false,
                name: self.function.name(),
                is_distinct: false,
                exprs: &[argument],
                expr_fields: std::slice::from_ref(&self.argument),
            })
            .map_err(|error| Error::Evaluate(error.find_root().to_string()))
    }

    /// An accumulator holding `state`.
    fn holding(&self, state: &[Value]) -> Result<Box<dyn Accumulator>, Error> {
        let mut accumulator = self.accumulator()?;
        if !state.is_empty() {
            accumulator
                .merge_batch(&self.state_arrays(state))
                .map_err(evaluate)?;
        }
        Ok(accumulator)
    }

    fn state_arrays(&self, state: &[Value]) -> Vec<ArrayRef> {
        self.state
            .iter()
            .zip(state)
            .map(|(field, value)| array_of(field.data_type(), std::iter::once(value)))
            .collect()
    }

    fn state_of(accumulator: &mut dyn Accumulator) -> Result<Vec<Value>, Error> {
        accumulator
            .state()
            .map_err(evaluate)?
            .iter()
            .map(scalar_value)
            .collect()
    }

    /// The state of an accumulator that has seen nothing.
    pub(crate) fn create(&self) -> Vec<Value> {
        self.accumulator()
            .and_then(|mut accumulator| Udaf::state_of(accumulator.as_mut()))
            .unwrap_or_default()
    }

    /// Adds `value` to `state`, or takes it back.
    pub(crate) fn add(&self, state: &mut Vec<Value>, value: &Value, retract: bool) {
        let step = || -> Result<Vec<Value>, Error> {
            let mut accumulator = self.holding(state)?;
            let values = [array_of(self.argument.data_type(), std::iter::once(value))];
            if retract {
                accumulator.retract_batch(&values).map_err(evaluate)?;
            } else {
                accumulator.update_batch(&values).map_err(evaluate)?;
            }
            Udaf::state_of(accumulator.as_mut())
        };
        match step() {
            Ok(next) => *state = next,
            Err(error) => {
                tracing::error!(function = self.name(), "a value is not aggregated: {error}")
            }
        }
    }

    /// Merges `other` into `state`.
    pub(crate) fn merge(&self, state: &mut Vec<Value>, other: &[Value]) {
        let step = || -> Result<Vec<Value>, Error> {
            let mut accumulator = self.holding(state)?;
            accumulator
                .merge_batch(&self.state_arrays(other))
                .map_err(evaluate)?;
            Udaf::state_of(accumulator.as_mut())
        };
        match step() {
            Ok(next) => *state = next,
            Err(error) => tracing::error!(function = self.name(), "states are not merged: {error}"),
        }
    }

    /// The function's result for `state`; null when it cannot be computed (logged).
    pub(crate) fn result(&self, state: &[Value]) -> Value {
        let evaluated = self
            .holding(state)
            .and_then(|mut accumulator| accumulator.evaluate().map_err(evaluate))
            .and_then(|result| scalar_value(&result));
        evaluated.unwrap_or_else(|error| {
            tracing::error!(function = self.name(), "no result: {error}");
            Value::Null
        })
    }
}

fn evaluate(error: datafusion_common::DataFusionError) -> Error {
    Error::Evaluate(error.find_root().to_string())
}

/// A scalar as a value.
fn scalar_value(scalar: &ScalarValue) -> Result<Value, Error> {
    let array = scalar.to_array().map_err(evaluate)?;
    if !is_supported(array.data_type()) {
        return Err(Error::Evaluate(format!(
            "a value of type {} where a scalar was planned",
            array.data_type()
        )));
    }
    Ok(Cells::of(&array).get(0))
}
