//! Flink's group window functions, rewritten in the parsed query before planning.
//!
//! `GROUP BY bidder, TUMBLE(date_time, INTERVAL '10' SECOND)` groups rows by key and by
//! event-time window. The window function is taken out of `GROUP BY` and recorded as a
//! [`GroupWindow`]; in its place the query groups by two columns every row of a windowed
//! table carries, [`WINDOW_START`] and [`WINDOW_END`] (as Flink's windowing table functions
//! add them), and the auxiliary functions that read a row's window become those columns:
//!
//! | Flink | becomes |
//! |---|---|
//! | `TUMBLE(t, size)`, `HOP(t, slide, size)`, `SESSION(t, gap)` in `GROUP BY` | `window_start, window_end` |
//! | `TUMBLE_START(...)`, `HOP_START(...)`, `SESSION_START(...)` | `window_start` |
//! | `TUMBLE_END(...)`, `HOP_END(...)`, `SESSION_END(...)` | `window_end` |
//! | `TUMBLE_ROWTIME(...)`, `HOP_ROWTIME(...)`, `SESSION_ROWTIME(...)` | `window_end - 1` |
//! | `FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(time), size))` (or `HOP`) | `FROM t`, the window recorded for the `SELECT`, which groups by `window_start, window_end` itself |
//!
//! DataFusion then plans an ordinary `GROUP BY`, and the window operator fills the two
//! columns when a window fires.

use std::ops::ControlFlow;
use std::time::Duration;

use datafusion_sql::sqlparser::ast::{
    BinaryOperator, DateTimeField, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    GroupByExpr, Ident, ObjectName, Select, SetExpr, Spanned, Statement, TableFactor, Value,
    ValueWithSpan, visit_expressions_mut,
};
use runnel_streamlet::window::WindowSpec;

use crate::{Error, Position};

/// The column holding the first millisecond of a row's window.
pub const WINDOW_START: &str = "window_start";
/// The column holding the first millisecond after a row's window.
pub const WINDOW_END: &str = "window_end";

/// The event-time window a query groups by.
#[derive(Clone, Debug)]
pub(crate) struct GroupWindow {
    /// Which windows, and (by default) when they fire: once the watermark passes their end.
    pub(crate) spec: WindowSpec,
    /// The column holding each row's event time, in milliseconds since the epoch.
    pub(crate) time_column: String,
    /// Where the window function is in the query.
    pub(crate) position: Option<Position>,
    /// Whether it sends results besides the on-time one (`EMIT`, `allowed-lateness`), each
    /// replacing the one before.
    pub(crate) updating: bool,
}

/// The three kinds of group window, by the name of their function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tumble,
    Hop,
    Session,
}

impl Kind {
    fn named(name: &str) -> Option<Kind> {
        match name.to_ascii_lowercase().as_str() {
            "tumble" => Some(Kind::Tumble),
            "hop" => Some(Kind::Hop),
            "session" => Some(Kind::Session),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Tumble => "TUMBLE",
            Kind::Hop => "HOP",
            Kind::Session => "SESSION",
        }
    }

    /// The arguments after the time column, as a usage message writes them.
    fn size_arguments(self) -> String {
        let sizes: Vec<String> = self
            .sizes()
            .iter()
            .map(|size| format!("INTERVAL '<{size}>' SECOND"))
            .collect();
        sizes.join(", ")
    }

    /// What the arguments after the time column are, in order.
    fn sizes(self) -> &'static [&'static str] {
        match self {
            Kind::Tumble => &["size"],
            Kind::Hop => &["slide", "size"],
            Kind::Session => &["gap"],
        }
    }
}

/// What an auxiliary function (`TUMBLE_START`...) reads of a row's window.
#[derive(Clone, Copy, Debug)]
enum Part {
    Start,
    End,
    Rowtime,
}

/// The window function named by an auxiliary function's name: `TUMBLE_END` is `TUMBLE`'s
/// end.
fn auxiliary(name: &str) -> Option<(Kind, Part)> {
    let (kind, part) = name.rsplit_once('_')?;
    let part = match part.to_ascii_lowercase().as_str() {
        "start" => Part::Start,
        "end" => Part::End,
        "rowtime" => Part::Rowtime,
        _ => return None,
    };
    Some((Kind::named(kind)?, part))
}

/// Takes the group windows out of the `GROUP BY`s of `statement` and rewrites the
/// functions that read them, as the module says. The windows come in the order of the
/// `SELECT`s that group by them, each after those of the subqueries in its `FROM` (left to
/// right): the order of the aggregates in the plan, children first.
pub(crate) fn rewrite_group_windows(statement: &mut Statement) -> Result<Vec<GroupWindow>, Error> {
    let mut found = Vec::new();
    if let Statement::Query(query) = statement {
        rewrite_set(&mut query.body, &mut found)?;
    }
    Ok(found)
}

/// The group windows found so far.
type Found = Vec<GroupWindow>;

fn rewrite_set(body: &mut SetExpr, found: &mut Found) -> Result<(), Error> {
    match body {
        SetExpr::Select(select) => rewrite_select(select, found),
        SetExpr::Query(query) => rewrite_set(&mut query.body, found),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_set(left, found)?;
            rewrite_set(right, found)
        }
        _ => Ok(()),
    }
}

fn rewrite_select(select: &mut Select, found: &mut Found) -> Result<(), Error> {
    let mut table_function = None;
    let one_table = match select.from.as_slice() {
        [from] => from.joins.is_empty(),
        _ => false,
    };
    for table in &mut select.from {
        let factors = std::iter::once(&mut table.relation)
            .chain(table.joins.iter_mut().map(|join| &mut join.relation));
        for factor in factors {
            if let TableFactor::Derived { subquery, .. } = factor {
                rewrite_set(&mut subquery.body, found)?;
            }
            if let Some(window) = window_table_function(factor)? {
                if !one_table {
                    return Err(Error::Unsupported {
                        message: "a window table function joined with another table: SQL \
                                  streamlets group one table's windows (window joins are not \
                                  supported yet)"
                            .to_owned(),
                        position: window.position,
                    });
                }
                table_function = Some(window);
            }
        }
    }
    let by_table_function = table_function.is_some();
    if let Some(window) = table_function {
        let groups_by = |name: &str| match &select.group_by {
            GroupByExpr::Expressions(expressions, _) => {
                expressions.iter().any(|expression| match expression {
                    Expr::Identifier(ident) => normalized(ident) == name,
                    Expr::CompoundIdentifier(parts) => {
                        parts.last().is_some_and(|ident| normalized(ident) == name)
                    }
                    _ => false,
                })
            }
            GroupByExpr::All(_) => false,
        };
        if !(groups_by(WINDOW_START) && groups_by(WINDOW_END)) {
            return Err(Error::Unsupported {
                message: "a window table function without GROUP BY window_start, window_end: \
                          SQL streamlets aggregate each window (window joins, Top-N and \
                          deduplication over windows are not supported yet)"
                    .to_owned(),
                position: window.position,
            });
        }
        found.push(window);
    }
    let mut here: Option<(Kind, String)> = None;
    if let GroupByExpr::Expressions(expressions, _) = &mut select.group_by {
        let mut rewritten = Vec::with_capacity(expressions.len() + 1);
        for expression in expressions.drain(..) {
            let Some((kind, arguments)) = window_call(&expression) else {
                rewritten.push(expression);
                continue;
            };
            let position = position_of(&expression);
            if here.is_some() || by_table_function {
                return Err(Error::Unsupported {
                    message: format!(
                        "a second group window ({}) in one GROUP BY: a SELECT groups by one window",
                        kind.name()
                    ),
                    position,
                });
            }
            let one_table = match select.from.as_slice() {
                [from] => {
                    from.joins.is_empty() && matches!(from.relation, TableFactor::Table { .. })
                }
                _ => false,
            };
            if !one_table {
                return Err(Error::Unsupported {
                    message: format!(
                        "a group window ({}) over a subquery or a join: SQL streamlets group \
                         the rows of one table by window, and the results of a window by its \
                         bounds",
                        kind.name()
                    ),
                    position,
                });
            }
            let window = group_window(kind, arguments, position)?;
            let span = expression.span();
            rewritten.push(Expr::Identifier(Ident::with_span(span, WINDOW_START)));
            rewritten.push(Expr::Identifier(Ident::with_span(span, WINDOW_END)));
            here = Some((kind, arguments_text(arguments)));
            found.push(window);
        }
        *expressions = rewritten;
    }
    let mut problem = None;
    let mut rewrite = |expression: &mut Expr| {
        if let Some(replacement) = read_window(expression, here.as_ref(), &mut problem) {
            *expression = replacement;
        }
        if problem.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    for item in &mut select.projection {
        let _ = visit_expressions_mut(item, &mut rewrite);
    }
    if let Some(having) = &mut select.having {
        let _ = visit_expressions_mut(having, &mut rewrite);
    }
    match problem {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// A window table function in `FROM` (Flink's `TABLE(TUMBLE(TABLE bids,
/// DESCRIPTOR(date_time), INTERVAL '10' SECOND))`, or `HOP` with a slide before the size),
/// replaced by the table it windows: its window, when `factor` is one.
fn window_table_function(factor: &mut TableFactor) -> Result<Option<GroupWindow>, Error> {
    let TableFactor::TableFunction { expr, alias } = factor else {
        return Ok(None);
    };
    let position = position_of(expr);
    let Some((name, arguments)) = call(expr) else {
        return Ok(None);
    };
    let kind = match name.to_ascii_lowercase().as_str() {
        "tumble" => Kind::Tumble,
        "hop" => Kind::Hop,
        "session" | "cumulate" => {
            return Err(Error::Unsupported {
                message: format!(
                    "the window table function {}: SQL streamlets take TUMBLE and HOP as \
                     table functions, and SESSION in GROUP BY (GROUP BY key, SESSION(t, gap))",
                    name.to_ascii_uppercase()
                ),
                position,
            });
        }
        _ => return Ok(None),
    };
    let usage = || {
        format!(
            "TABLE({}(TABLE <table>, DESCRIPTOR(<event-time column>), {}))",
            kind.name(),
            kind.size_arguments()
        )
    };
    // Flink's parameter names, for arguments passed by name.
    let names: &[&str] = match kind {
        Kind::Hop => &["data", "timecol", "slide", "size"],
        _ => &["data", "timecol", "size"],
    };
    let mut given: Vec<Option<Expr>> = vec![None; names.len()];
    for (at, argument) in arguments.iter().enumerate() {
        let (slot, value) = match argument {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) => (Some(at), value),
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(value),
                ..
            } => (
                names
                    .iter()
                    .position(|known| name.value.eq_ignore_ascii_case(known)),
                value,
            ),
            _ => (None, &Expr::Value(Value::Null.into())),
        };
        match slot.and_then(|slot| given.get_mut(slot)) {
            Some(place) if place.is_none() => *place = Some(value.clone()),
            _ => {
                return Err(Error::Plan {
                    message: format!("{} takes {}", kind.name(), usage()),
                    position,
                });
            }
        }
    }
    let given: Vec<Expr> = match given.into_iter().collect::<Option<Vec<Expr>>>() {
        Some(given) => given,
        None => {
            return Err(Error::Plan {
                message: format!("{} takes {}", kind.name(), usage()),
                position,
            });
        }
    };
    let table = match &given[0] {
        Expr::Identifier(ident) => ObjectName::from(vec![ident.clone()]),
        Expr::CompoundIdentifier(parts) => ObjectName::from(parts.clone()),
        other => {
            return Err(Error::Plan {
                message: format!(
                    "the data of {} is a table, not {other}: {}",
                    kind.name(),
                    usage()
                ),
                position: position_of(other),
            });
        }
    };
    let time_column = match call(&given[1]) {
        Some((descriptor, [column])) if descriptor.eq_ignore_ascii_case("descriptor") => {
            column.clone()
        }
        _ => {
            return Err(Error::Plan {
                message: format!(
                    "the time column of {} is DESCRIPTOR(<event-time column>), not {}: {}",
                    kind.name(),
                    given[1],
                    usage()
                ),
                position: position_of(&given[1]),
            });
        }
    };
    // As the group window function would name them: the time column, then the sizes.
    let mut legacy = vec![time_column];
    legacy.extend(
        given[2..]
            .iter()
            .map(|size| FunctionArg::Unnamed(FunctionArgExpr::Expr(size.clone()))),
    );
    let window = group_window(kind, &legacy, position)?;
    *factor = TableFactor::Table {
        name: table,
        alias: alias.take(),
        args: None,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_hints: Vec::new(),
    };
    Ok(Some(window))
}

/// `TABLE <name>` passed to a function (`TUMBLE(TABLE bids, ...)`, as Flink's window table
/// functions take their data), which sqlparser does not read: the `TABLE` is blanked out,
/// leaving the table's name, every other character where it was.
pub(crate) fn unwrap_table_arguments(sql: &str) -> std::borrow::Cow<'_, str> {
    use datafusion_sql::sqlparser::dialect::GenericDialect;
    use datafusion_sql::sqlparser::tokenizer::{Token, Tokenizer};
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() else {
        return sql.into();
    };
    let significant: Vec<&datafusion_sql::sqlparser::tokenizer::TokenWithSpan> = tokens
        .iter()
        .filter(|token| !matches!(token.token, Token::Whitespace(_)))
        .collect();
    let mut blanks = Vec::new();
    for (at, token) in significant.iter().enumerate() {
        let Token::Word(word) = &token.token else {
            continue;
        };
        let after_open = at > 0
            && matches!(
                significant[at - 1].token,
                Token::LParen | Token::Comma | Token::RArrow
            );
        let before_name = matches!(
            significant.get(at + 1).map(|next| &next.token),
            Some(Token::Word(_))
        );
        if word.quote_style.is_none()
            && word.value.eq_ignore_ascii_case("table")
            && after_open
            && before_name
        {
            blanks.push(token.span.start);
        }
    }
    if blanks.is_empty() {
        return sql.into();
    }
    let mut text = sql.to_owned();
    for start in blanks {
        let offset = Position {
            line: start.line,
            column: start.column,
        }
        .offset_in(sql);
        text.replace_range(offset..offset + "table".len(), "     ");
    }
    text.into()
}

/// The column (or expression) an auxiliary function stands for, or `None` when
/// `expression` is not one. Sets `problem` when it is one that does not fit `window`.
fn read_window(
    expression: &Expr,
    window: Option<&(Kind, String)>,
    problem: &mut Option<Error>,
) -> Option<Expr> {
    let (name, arguments) = call(expression)?;
    let (kind, part) = auxiliary(&name)?;
    let position = position_of(expression);
    let function = name.to_ascii_uppercase();
    match window {
        None => {
            *problem = Some(Error::Plan {
                message: format!(
                    "{function} reads the window of a GROUP BY {}(...), which this SELECT does not have",
                    kind.name()
                ),
                position,
            });
            return None;
        }
        Some((grouped, written)) if *grouped != kind || arguments_text(arguments) != *written => {
            *problem = Some(Error::Plan {
                message: format!(
                    "{function} must name the window grouped by: {}({written})",
                    grouped.name()
                ),
                position,
            });
            return None;
        }
        Some(_) => {}
    }
    let span = expression.span();
    let column = |name: &str| Expr::Identifier(Ident::with_span(span, name));
    Some(match part {
        Part::Start => column(WINDOW_START),
        Part::End => column(WINDOW_END),
        Part::Rowtime => Expr::Nested(Box::new(Expr::BinaryOp {
            left: Box::new(column(WINDOW_END)),
            op: BinaryOperator::Minus,
            right: Box::new(Expr::Value(ValueWithSpan {
                value: Value::Number("1".into(), false),
                span,
            })),
        })),
    })
}

/// The kind and arguments of a call of `TUMBLE`, `HOP` or `SESSION`.
fn window_call(expression: &Expr) -> Option<(Kind, &[FunctionArg])> {
    let (name, arguments) = call(expression)?;
    Some((Kind::named(&name)?, arguments))
}

/// The name and arguments of a function call with an argument list.
fn call(expression: &Expr) -> Option<(String, &[FunctionArg])> {
    let Expr::Function(function) = expression else {
        return None;
    };
    let [name] = function.name.0.as_slice() else {
        return None;
    };
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    Some((name.to_string(), &list.args))
}

/// The arguments as written, for comparing an auxiliary function's with its window's.
fn arguments_text(arguments: &[FunctionArg]) -> String {
    arguments
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The window of `kind` its arguments describe: a time column, then intervals.
fn group_window(
    kind: Kind,
    arguments: &[FunctionArg],
    position: Option<Position>,
) -> Result<GroupWindow, Error> {
    let usage = || {
        format!(
            "{}(<event-time column>, {})",
            kind.name(),
            kind.size_arguments()
        )
    };
    let expressions: Vec<&Expr> = arguments
        .iter()
        .filter_map(|argument| match argument {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expression)) => Some(expression),
            _ => None,
        })
        .collect();
    if expressions.len() != arguments.len() || expressions.len() != 1 + kind.sizes().len() {
        return Err(Error::Plan {
            message: format!(
                "{} takes {} arguments: {}",
                kind.name(),
                1 + kind.sizes().len(),
                usage()
            ),
            position,
        });
    }
    let time_column = match expressions[0] {
        Expr::Identifier(ident) => normalized(ident),
        Expr::CompoundIdentifier(parts) => normalized(parts.last().expect("compound")),
        other => {
            return Err(Error::Plan {
                message: format!(
                    "the first argument of {} is the event-time column, not {other}: {}",
                    kind.name(),
                    usage()
                ),
                position: position_of(other),
            });
        }
    };
    let mut sizes = Vec::with_capacity(2);
    for (expression, role) in expressions[1..].iter().zip(kind.sizes()) {
        let millis = interval_millis(expression).map_err(|problem| Error::Plan {
            message: format!("the {role} of {}: {problem}", kind.name()),
            position: position_of(expression),
        })?;
        sizes.push(Duration::from_millis(millis));
    }
    let spec = match kind {
        Kind::Tumble => WindowSpec::tumbling(sizes[0]),
        Kind::Hop => WindowSpec::sliding(sizes[1], sizes[0]),
        Kind::Session => WindowSpec::session(sizes[0]),
    };
    spec.check().map_err(|error| Error::Plan {
        message: format!("{}: {error}", kind.name()),
        position,
    })?;
    Ok(GroupWindow {
        spec,
        time_column,
        position,
        updating: false,
    })
}

/// An identifier as DataFusion resolves it: lowercased unless quoted.
fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// The length of `INTERVAL '10' SECOND` or `INTERVAL '10 seconds'` in milliseconds.
pub(crate) fn interval_millis(expression: &Expr) -> Result<u64, String> {
    let expected = || {
        format!(
            "expected an interval, as INTERVAL '10' SECOND or INTERVAL '1.5 minutes', found {expression}"
        )
    };
    let Expr::Interval(interval) = expression else {
        return Err(expected());
    };
    let text = match interval.value.as_ref() {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(text) | Value::Number(text, _),
            ..
        }) => text.trim().to_owned(),
        _ => return Err(expected()),
    };
    let (amount, unit) = match &interval.leading_field {
        Some(field) => (text.as_str(), field_millis(field).ok_or_else(expected)?),
        None => {
            let (amount, unit) = text.split_once(char::is_whitespace).ok_or_else(expected)?;
            (amount, unit_millis(unit.trim()).ok_or_else(expected)?)
        }
    };
    let amount: f64 = amount.parse().map_err(|_| expected())?;
    let millis = amount * unit as f64;
    if !(millis >= 1.0 && millis.fract() == 0.0 && millis < i64::MAX as f64) {
        return Err(format!(
            "{expression} is not a whole, positive number of milliseconds"
        ));
    }
    Ok(millis as u64)
}

fn field_millis(field: &DateTimeField) -> Option<u64> {
    Some(match field {
        DateTimeField::Millisecond | DateTimeField::Milliseconds => 1,
        DateTimeField::Second | DateTimeField::Seconds => 1_000,
        DateTimeField::Minute | DateTimeField::Minutes => 60_000,
        DateTimeField::Hour | DateTimeField::Hours => 3_600_000,
        DateTimeField::Day | DateTimeField::Days => 86_400_000,
        _ => return None,
    })
}

fn unit_millis(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "ms" | "millisecond" | "milliseconds" => 1,
        "s" | "second" | "seconds" => 1_000,
        "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "day" | "days" => 86_400_000,
        _ => return None,
    })
}

/// Where `expression` starts in the query, when its span is known.
fn position_of(expression: &Expr) -> Option<Position> {
    let start = expression.span().start;
    (start.line > 0).then_some(Position {
        line: start.line,
        column: start.column,
    })
}
