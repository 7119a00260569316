//! Flink SQL's spellings that DataFusion spells otherwise, rewritten in the parsed query
//! before planning, so queries written for Flink run with as few changes as possible:
//!
//! | Flink | DataFusion |
//! |---|---|
//! | `MOD(a, b)` | `a % b` |
//! | `t - INTERVAL '10' SECOND`, `t + INTERVAL ...` | `t - 10000`: event times are `BIGINT` milliseconds |

use std::ops::ControlFlow;

use datafusion_sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned, Statement,
    Value, ValueWithSpan, visit_expressions_mut,
};

use crate::group_window::interval_millis;

/// Rewrites Flink's spellings in `statement`.
pub(crate) fn rewrite_flink_spellings(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |expression| {
        if let Expr::BinaryOp {
            op: BinaryOperator::Plus | BinaryOperator::Minus,
            right,
            ..
        } = expression
            && let Ok(millis) = interval_millis(right)
        {
            **right = Expr::Value(ValueWithSpan {
                value: Value::Number(millis.to_string(), false),
                span: right.span(),
            });
        }
        if let Some((left, right)) = modulo_arguments(expression) {
            *expression = Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(left),
                op: BinaryOperator::Modulo,
                right: Box::new(right),
            }));
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The two arguments of a call of `MOD`.
fn modulo_arguments(expression: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Function(function) = expression else {
        return None;
    };
    let [name] = function.name.0.as_slice() else {
        return None;
    };
    if !name.to_string().eq_ignore_ascii_case("mod") {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let argument = |argument: &FunctionArg| match argument {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(expression)) => Some(expression.clone()),
        _ => None,
    };
    match list.args.as_slice() {
        [left, right] => Some((argument(left)?, argument(right)?)),
        _ => None,
    }
}
