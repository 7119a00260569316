//! [`Accumulators`]: a query's aggregate functions (`COUNT`, `COUNT(DISTINCT)`, `SUM`,
//! `MIN`, `MAX`, `AVG`) as one [`Aggregate`] of the window engine, so each key's window
//! keeps one accumulator per function, merged for sliding windows and sessions, and
//! checkpointed with the window state.

use std::collections::BTreeMap;

use runnel_streamlet::window::Aggregate;
use serde::{Deserialize, Serialize};

use crate::grouping::Arguments;
use crate::udaf::Udaf;
use crate::value::Value;

/// An aggregate function, as the query calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Function {
    /// `COUNT(x)`: the rows where `x` is not null (`COUNT(*)` counts a constant).
    Count,
    /// `COUNT(DISTINCT x)`: the distinct values of `x` that are not null.
    CountDistinct,
    /// `SUM(x)` of integers (wrapping on overflow) or, with `float`, of floating-point
    /// numbers; null without a value.
    Sum {
        /// Whether `x` is `REAL` or `DOUBLE`.
        float: bool,
    },
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `AVG(x)`, a `DOUBLE`.
    Average,
    /// A function with DataFusion's accumulator: the one at this index of the
    /// [`Accumulators`]' own.
    Udaf(usize),
}

impl Function {
    /// The function DataFusion named `name`, with `distinct`.
    pub(crate) fn named(name: &str, distinct: bool, float: bool) -> Option<Function> {
        Some(match (name, distinct) {
            ("count", false) => Function::Count,
            ("count", true) => Function::CountDistinct,
            ("sum", false) => Function::Sum { float },
            ("min", _) => Function::Min,
            ("max", _) => Function::Max,
            ("avg", false) => Function::Average,
            _ => return None,
        })
    }

    /// Whether removing what a part of a window saw is exact: integer counts and sums.
    fn subtracts(self) -> bool {
        matches!(
            self,
            Function::Count | Function::CountDistinct | Function::Sum { float: false }
        )
    }
}

/// The running state of one function in one window of one key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Accumulator {
    /// Rows counted.
    Count(i64),
    /// How often each value was seen.
    Distinct(Multiset),
    /// The sum of the values that were not null, and how many there were.
    Sum { total: Value, count: i64 },
    /// The least or greatest value so far (`Null` before the first).
    Extreme(Value),
    /// The sum and number of the values that were not null.
    Average { total: f64, count: i64 },
    /// A DataFusion accumulator's state.
    Udaf(Vec<Value>),
}

/// Values with how often each was seen, written as a list of pairs (JSON maps have string
/// keys only).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "Vec<(Value, i64)>", into = "Vec<(Value, i64)>")]
pub(crate) struct Multiset(BTreeMap<Value, i64>);

impl From<Vec<(Value, i64)>> for Multiset {
    fn from(pairs: Vec<(Value, i64)>) -> Self {
        Multiset(pairs.into_iter().collect())
    }
}

impl From<Multiset> for Vec<(Value, i64)> {
    fn from(set: Multiset) -> Self {
        set.0.into_iter().collect()
    }
}

impl Multiset {
    fn add(&mut self, value: &Value, times: i64) {
        let count = self.0.entry(value.clone()).or_insert(0);
        *count += times;
        if *count == 0 {
            self.0.remove(value);
        }
    }
}

/// A query's aggregate functions, each reading one argument of the input row.
#[derive(Clone, Debug)]
pub(crate) struct Accumulators {
    functions: Vec<Function>,
    /// The functions with DataFusion's accumulators, by [`Function::Udaf`]'s index.
    udafs: Vec<Udaf>,
    /// Whether rows can be taken back ([`retract`](Accumulators::retract)): `MIN` and `MAX`
    /// then keep every value with its multiplicity, not only the extreme.
    retracting: bool,
}

impl Accumulators {
    pub(crate) fn new(functions: Vec<Function>, udafs: Vec<Udaf>) -> Self {
        Accumulators {
            functions,
            udafs,
            retracting: false,
        }
    }

    /// Functions over rows that may be taken back, as the results of an aggregate without
    /// a window are when they update.
    pub(crate) fn retracting(functions: Vec<Function>, udafs: Vec<Udaf>) -> Self {
        Accumulators {
            functions,
            udafs,
            retracting: true,
        }
    }

    /// Takes back a row [`add`](Aggregate::add) added, with the same `arguments`.
    pub(crate) fn retract(&self, accumulators: &mut [Accumulator], arguments: &[Value]) {
        debug_assert!(
            self.retracting,
            "only retracting accumulators take rows back"
        );
        self.apply(accumulators, arguments, -1);
    }

    /// Adds (`sign` 1) or takes back (-1) a row's `arguments`; nulls count for nothing.
    fn apply(&self, accumulators: &mut [Accumulator], arguments: &[Value], sign: i64) {
        for ((function, accumulator), value) in self
            .functions
            .iter()
            .zip(accumulators.iter_mut())
            .zip(arguments)
        {
            if value.is_null() {
                continue;
            }
            match accumulator {
                Accumulator::Count(count) => *count += sign,
                Accumulator::Distinct(seen) => seen.add(value, sign),
                Accumulator::Sum { total, count } => {
                    add_number(total, value, sign);
                    *count += sign;
                }
                Accumulator::Extreme(extreme) => {
                    assert!(sign > 0, "retracting extremes keep multisets");
                    keep_extreme(*function, extreme, value);
                }
                Accumulator::Average { total, count } => {
                    *total += sign as f64 * as_float(value);
                    *count += sign;
                }
                Accumulator::Udaf(state) => {
                    let Function::Udaf(at) = function else {
                        unreachable!("a DataFusion accumulator's state is its function's");
                    };
                    self.udafs[*at].add(state, value, sign < 0);
                }
            }
        }
    }
}

impl Aggregate for Accumulators {
    /// Each function's argument.
    type Input = Arguments;
    type Accumulator = Vec<Accumulator>;
    /// Each function's result.
    type Output = Vec<Value>;

    fn create(&self) -> Vec<Accumulator> {
        self.functions
            .iter()
            .map(|function| match function {
                Function::Count => Accumulator::Count(0),
                Function::CountDistinct => Accumulator::Distinct(Multiset::default()),
                Function::Sum { float } => Accumulator::Sum {
                    total: if *float {
                        Value::Float(0.0)
                    } else {
                        Value::Integer(0)
                    },
                    count: 0,
                },
                Function::Min | Function::Max if self.retracting => {
                    Accumulator::Distinct(Multiset::default())
                }
                Function::Min | Function::Max => Accumulator::Extreme(Value::Null),
                Function::Average => Accumulator::Average {
                    total: 0.0,
                    count: 0,
                },
                Function::Udaf(at) => Accumulator::Udaf(self.udafs[*at].create()),
            })
            .collect()
    }

    fn add(&self, accumulators: &mut Vec<Accumulator>, arguments: &Arguments) {
        self.apply(accumulators, arguments, 1);
    }

    fn merge(&self, accumulators: &mut Vec<Accumulator>, others: &Vec<Accumulator>) {
        for ((function, accumulator), other) in self
            .functions
            .iter()
            .zip(accumulators.iter_mut())
            .zip(others)
        {
            match (accumulator, other) {
                (Accumulator::Count(count), Accumulator::Count(other)) => *count += other,
                (Accumulator::Distinct(seen), Accumulator::Distinct(other)) => {
                    for (value, times) in &other.0 {
                        seen.add(value, *times);
                    }
                }
                (
                    Accumulator::Sum { total, count },
                    Accumulator::Sum {
                        total: other_total,
                        count: other_count,
                    },
                ) => {
                    add_number(total, other_total, 1);
                    *count += other_count;
                }
                (Accumulator::Extreme(extreme), Accumulator::Extreme(other)) => {
                    keep_extreme(*function, extreme, other);
                }
                (
                    Accumulator::Average { total, count },
                    Accumulator::Average {
                        total: other_total,
                        count: other_count,
                    },
                ) => {
                    *total += other_total;
                    *count += other_count;
                }
                (Accumulator::Udaf(state), Accumulator::Udaf(other)) => {
                    let Function::Udaf(at) = function else {
                        unreachable!("a DataFusion accumulator's state is its function's");
                    };
                    self.udafs[*at].merge(state, other);
                }
                _ => unreachable!("accumulators of one function merge"),
            }
        }
    }

    fn subtract(&self, accumulators: &mut Vec<Accumulator>, others: &Vec<Accumulator>) -> bool {
        if !self.functions.iter().all(|function| function.subtracts()) {
            return false;
        }
        for (accumulator, other) in accumulators.iter_mut().zip(others) {
            match (accumulator, other) {
                (Accumulator::Count(count), Accumulator::Count(other)) => *count -= other,
                (Accumulator::Distinct(seen), Accumulator::Distinct(other)) => {
                    for (value, times) in &other.0 {
                        seen.add(value, -times);
                    }
                }
                (
                    Accumulator::Sum { total, count },
                    Accumulator::Sum {
                        total: other_total,
                        count: other_count,
                    },
                ) => {
                    add_number(total, other_total, -1);
                    *count -= other_count;
                }
                _ => unreachable!("only counts and integer sums subtract"),
            }
        }
        true
    }

    fn result(&self, accumulators: &Vec<Accumulator>) -> Vec<Value> {
        accumulators
            .iter()
            .zip(&self.functions)
            .map(|(accumulator, function)| match accumulator {
                Accumulator::Count(count) => Value::Integer(*count),
                Accumulator::Distinct(seen) => match function {
                    Function::Min => seen.0.keys().next().cloned().unwrap_or(Value::Null),
                    Function::Max => seen.0.keys().next_back().cloned().unwrap_or(Value::Null),
                    _ => Value::Integer(seen.0.len() as i64),
                },
                Accumulator::Sum { count: 0, .. } | Accumulator::Average { count: 0, .. } => {
                    Value::Null
                }
                Accumulator::Sum { total, .. } => total.clone(),
                Accumulator::Extreme(extreme) => extreme.clone(),
                Accumulator::Average { total, count } => Value::Float(total / *count as f64),
                Accumulator::Udaf(state) => match function {
                    Function::Udaf(at) => self.udafs[*at].result(state),
                    _ => unreachable!("a DataFusion accumulator's state is its function's"),
                },
            })
            .collect()
    }
}

/// Keeps `value` as a minimum's or maximum's `extreme` if it is less or greater (a null
/// extreme has seen nothing; a null value is nothing).
fn keep_extreme(function: Function, extreme: &mut Value, value: &Value) {
    if value.is_null() {
        return;
    }
    let replaces = extreme.is_null()
        || match function {
            Function::Min => value < extreme,
            _ => value > extreme,
        };
    if replaces {
        *extreme = value.clone();
    }
}

/// Adds `sign * value` to `total`: integers wrapping, as Flink's and Java's do.
fn add_number(total: &mut Value, value: &Value, sign: i64) {
    match total {
        Value::Integer(total) => {
            if let Value::Integer(value) = value {
                *total = total.wrapping_add(value.wrapping_mul(sign));
            }
        }
        Value::Float(total) => *total += sign as f64 * as_float(value),
        _ => {}
    }
}

fn as_float(value: &Value) -> f64 {
    match value {
        Value::Integer(value) => *value as f64,
        Value::Float(value) => *value,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(functions: Vec<Function>, rows: &[Vec<Value>]) -> Vec<Value> {
        let accumulators = Accumulators::new(functions, Vec::new());
        let mut state = accumulators.create();
        for row in rows {
            accumulators.add(&mut state, &row.iter().cloned().collect());
        }
        accumulators.result(&state)
    }

    #[test]
    fn each_function_skips_nulls() {
        let functions = vec![
            Function::Count,
            Function::CountDistinct,
            Function::Sum { float: false },
            Function::Min,
            Function::Max,
            Function::Average,
        ];
        let row = |value: Value| vec![value; 6];
        let results = run(
            functions,
            &[
                row(Value::Integer(4)),
                row(Value::Null),
                row(Value::Integer(4)),
                row(Value::Integer(1)),
            ],
        );
        assert_eq!(
            results,
            [
                Value::Integer(3),
                Value::Integer(2),
                Value::Integer(9),
                Value::Integer(1),
                Value::Integer(4),
                Value::Float(3.0),
            ]
        );
    }

    #[test]
    fn nothing_but_nulls_sums_and_averages_to_null() {
        let results = run(
            vec![
                Function::Count,
                Function::Sum { float: true },
                Function::Average,
                Function::Max,
            ],
            &[vec![Value::Null; 4]],
        );
        assert_eq!(
            results,
            [Value::Integer(0), Value::Null, Value::Null, Value::Null]
        );
    }

    #[test]
    fn subtracting_a_merged_part_restores_the_rest() {
        let accumulators = Accumulators::new(
            vec![Function::CountDistinct, Function::Sum { float: false }],
            Vec::new(),
        );
        let (mut whole, mut part) = (accumulators.create(), accumulators.create());
        for value in [3, 5, 3] {
            accumulators.add(&mut whole, &Arguments::from_elem(Value::Integer(value), 2));
        }
        accumulators.add(&mut part, &Arguments::from_elem(Value::Integer(5), 2));
        accumulators.merge(&mut whole, &part);
        assert!(accumulators.subtract(&mut whole, &part));
        assert!(accumulators.subtract(&mut whole, &part));
        assert_eq!(
            accumulators.result(&whole),
            [Value::Integer(1), Value::Integer(6)]
        );
        let averages = Accumulators::new(vec![Function::Average], Vec::new());
        assert!(!averages.subtract(&mut averages.create(), &averages.create()));
    }

    #[test]
    fn distinct_values_checkpoint_as_pairs() {
        let accumulators = Accumulators::new(vec![Function::CountDistinct], Vec::new());
        let mut state = accumulators.create();
        accumulators.add(
            &mut state,
            &Arguments::from_elem(Value::Text("a".into()), 1),
        );
        let json = serde_json::to_string(&state).unwrap();
        let restored: Vec<Accumulator> = serde_json::from_str(&json).unwrap();
        assert_eq!(accumulators.result(&restored), [Value::Integer(1)]);
    }
}
