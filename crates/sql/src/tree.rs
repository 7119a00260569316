//! [`Node`]: a query planned as a tree of operators, from DataFusion's logical plan. The
//! leaves scan the inputs, each with the stateless stages over it (`WHERE`, computed
//! columns); above them come the stateful operators, group-window aggregates and joins,
//! and the stateless stages over their results.

use std::sync::Arc;

use datafusion_common::DFSchema;
use datafusion_expr::{Expr, LogicalPlan};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_expr::expressions::Column;

use crate::group_window::{GroupWindow, WINDOW_END, WINDOW_START};
use crate::grouping::{FiredBound, Grouping};
use crate::join::{JoinPlan, TimeBound};
use crate::query::{Stage, physical, unsupported};
use crate::{Error, Table};

/// One operator of a planned query, with its inputs.
#[derive(Debug)]
pub(crate) enum Node {
    /// The records of an input, through the stateless stages over its scan.
    Scan {
        /// The input, by index in the query's inputs.
        input: usize,
        /// In order.
        stages: Vec<Stage>,
    },
    /// Stateless stages over a stateful operator's results.
    Stages {
        stages: Vec<Stage>,
        input: Box<Node>,
    },
    /// A `GROUP BY` with a group window, over one input's scan.
    Window {
        grouping: Box<Grouping>,
        input: Box<Node>,
    },
    /// A `GROUP BY` without a window, whose results update.
    Aggregate {
        grouping: Box<Grouping>,
        input: Box<Node>,
    },
    /// A join.
    Join {
        plan: Box<JoinPlan>,
        left: Box<Node>,
        right: Box<Node>,
    },
}

impl Node {
    /// Whether the node runs with state (a window or a join at or below it).
    pub(crate) fn is_stateful(&self) -> bool {
        !matches!(self, Node::Scan { .. })
    }

    /// Whether the node's results update ([`RowKind`](crate::RowKind)): an aggregate
    /// without a window at or below it.
    pub(crate) fn is_updating(&self) -> bool {
        match self {
            Node::Aggregate { .. } => true,
            Node::Window { grouping, .. } => grouping.is_updating(),
            Node::Stages { input, .. } => input.is_updating(),
            Node::Join { plan, .. } => plan.is_updating(),
            Node::Scan { .. } => false,
        }
    }

    /// Where the least value of `column` (plus `offset`) in rows still to come from this
    /// node is known, following the column down through stateless stages to a window's
    /// bound or a scan's column; `None` where it is not (a join's or an aggregate's rows).
    pub(crate) fn clock(&self, column: usize, offset: i64) -> Option<Clock> {
        match self {
            Node::Stages { stages, input } => {
                let (column, offset) = column_below(stages, column, offset)?;
                let below = input.clock(column, offset)?;
                Some(below.one_down())
            }
            Node::Window { grouping, .. } => Some(Clock::Window {
                depth: 0,
                offset: offset.checked_add(grouping.bound_after_watermark(column)?)?,
            }),
            Node::Scan { .. } => Some(Clock::Scan {
                depth: 0,
                column,
                offset,
            }),
            Node::Join { .. } | Node::Aggregate { .. } => None,
        }
    }
}

/// Where the least time of rows still to come from a node is known, `depth` nodes down
/// from it through stateless stages ([`Node::clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The watermark of a window, plus `offset`.
    Window { depth: usize, offset: i64 },
    /// The watermark of a scan over its `column`, plus `offset`.
    Scan {
        depth: usize,
        column: usize,
        offset: i64,
    },
}

impl Clock {
    /// The same clock, one node further down.
    fn one_down(self) -> Clock {
        match self {
            Clock::Window { depth, offset } => Clock::Window {
                depth: depth + 1,
                offset,
            },
            Clock::Scan {
                depth,
                column,
                offset,
            } => Clock::Scan {
                depth: depth + 1,
                column,
                offset,
            },
        }
    }
}

/// The first of `plan`'s bounds whose columns both sides' clocks follow, which expires the
/// join's rows: a range between two columns (`B.t BETWEEN A.t AND A.t + 10000`), or an
/// equality of two windows' bounds (an equality of other columns is a key, which says
/// nothing of time).
fn time_bound(plan: &JoinPlan, left: &Node, right: &Node) -> Option<TimeBound> {
    plan.bounds.iter().copied().find(|bound| {
        match (left.clock(bound.left, 0), right.clock(bound.right, 0)) {
            (Some(Clock::Window { .. }), Some(Clock::Window { .. })) => true,
            (Some(_), Some(_)) => bound.ranged,
            _ => false,
        }
    })
}

/// Plans `plan` as a tree over `tables` (the catalog's, with window columns where the
/// query has windows), taking the group windows in order and adding each table scanned to
/// `inputs` the first time.
pub(crate) fn plan_tree(
    plan: &LogicalPlan,
    windows: &mut impl Iterator<Item = GroupWindow>,
    tables: &[Table],
    inputs: &mut Vec<String>,
) -> Result<Node, Error> {
    let mut stages = Vec::new();
    let mut node = plan;
    let below = loop {
        match node {
            LogicalPlan::Projection(projection) => {
                let expressions = physical(&projection.expr, projection.input.schema())?;
                stages.push(Stage::Project(
                    expressions,
                    Arc::new(projection.schema.as_arrow().clone()),
                ));
                node = &projection.input;
            }
            LogicalPlan::Filter(filter) => {
                let predicate = physical(
                    std::slice::from_ref(&filter.predicate),
                    filter.input.schema(),
                )?
                .remove(0);
                stages.push(Stage::Filter(predicate));
                node = &filter.input;
            }
            LogicalPlan::SubqueryAlias(alias) => node = &alias.input,
            LogicalPlan::TableScan(scan) => {
                let name = scan.table_name.table();
                assert!(
                    tables.iter().any(|table| table.name() == name),
                    "the catalog knows only these tables"
                );
                let input = match inputs.iter().position(|input| input == name) {
                    Some(index) => index,
                    None => {
                        inputs.push(name.to_owned());
                        inputs.len() - 1
                    }
                };
                // Filters and the columns the optimizer pushed into the scan (joins are
                // optimized so): the filters read the whole row, as decoded, and the
                // columns the query needs are kept of it.
                let table_schema = Arc::new(
                    DFSchema::try_from_qualified_schema(
                        scan.table_name.clone(),
                        &scan.source.schema(),
                    )
                    .map_err(Error::from_planner)?,
                );
                let mut scanned = Vec::new();
                for filter in &scan.filters {
                    let predicate =
                        physical(std::slice::from_ref(filter), &table_schema)?.remove(0);
                    scanned.push(Stage::Filter(predicate));
                }
                if let Some(projection) = &scan.projection {
                    let columns = projection
                        .iter()
                        .map(|&index| {
                            let name = table_schema.field(index).name();
                            Arc::new(Column::new(name, index)) as Arc<dyn PhysicalExpr>
                        })
                        .collect();
                    let schema = Arc::new(scan.projected_schema.as_arrow().clone());
                    scanned.push(Stage::Project(columns, schema));
                }
                break Node::Scan {
                    input,
                    stages: scanned,
                };
            }
            LogicalPlan::Aggregate(aggregate) => {
                let input = plan_tree(&aggregate.input, windows, tables, inputs)?;
                let bound = |column| fired_bound(&input, column);
                let by_window_end = aggregate.group_expr.iter().any(|expression| {
                    let Expr::Column(column) = expression else {
                        return false;
                    };
                    aggregate
                        .input
                        .schema()
                        .maybe_index_of_column(column)
                        .and_then(bound)
                        == Some(FiredBound::End)
                });
                let by_group_window = matches!(input, Node::Scan { .. })
                    && aggregate.group_expr.iter().any(|expression| {
                        matches!(expression, Expr::Column(column) if column.name == WINDOW_START)
                    });
                if by_window_end && input.is_updating() {
                    return Err(Error::unsupported(
                        "grouping the results of windows with early or late results (EMIT, \
                         allowed-lateness) by their bounds: SQL streamlets group such results \
                         only when each window gives one",
                    ));
                }
                if by_window_end {
                    // Rows a window below fired, grouped by that window's bounds.
                    let grouping = Grouping::plan_over_fired(aggregate, bound)?;
                    break Node::Window {
                        grouping: Box::new(grouping),
                        input: Box::new(input),
                    };
                }
                if !by_group_window {
                    let grouping = Grouping::plan_updating(aggregate, input.is_updating())?;
                    break Node::Aggregate {
                        grouping: Box::new(grouping),
                        input: Box::new(input),
                    };
                }
                let Some(window) = windows.next() else {
                    return Err(unsupported(node));
                };
                refuse_window_columns_before_grouping(&aggregate.input)?;
                break Node::Window {
                    grouping: Box::new(Grouping::plan(aggregate, &window)?),
                    input: Box::new(input),
                };
            }
            LogicalPlan::Join(join) => {
                let left = plan_tree(&join.left, windows, tables, inputs)?;
                let right = plan_tree(&join.right, windows, tables, inputs)?;
                let mut plan = JoinPlan::plan(join)?;
                plan.inputs_update = left.is_updating() || right.is_updating();
                if !plan.inputs_update {
                    plan.time_bound = time_bound(&plan, &left, &right);
                }
                break Node::Join {
                    plan: Box::new(plan),
                    left: Box::new(left),
                    right: Box::new(right),
                };
            }
            other => return Err(unsupported(other)),
        }
    };
    stages.reverse();
    Ok(match below {
        _ if stages.is_empty() => below,
        Node::Scan {
            input,
            stages: mut scanned,
        } => {
            scanned.extend(stages);
            Node::Scan {
                input,
                stages: scanned,
            }
        }
        stateful => Node::Stages {
            stages,
            input: Box::new(stateful),
        },
    })
}

/// Which bound of the windows of a window below `node` its rows' `column` holds: a window's
/// bound, passed on unchanged by the stages over it.
fn fired_bound(node: &Node, column: usize) -> Option<FiredBound> {
    match node {
        Node::Stages { stages, input } => match column_below(stages, column, 0)? {
            (column, 0) => fired_bound(input, column),
            _ => None,
        },
        Node::Window { grouping, .. } => grouping.fired_bound(column),
        Node::Scan { .. } | Node::Join { .. } | Node::Aggregate { .. } => None,
    }
}

/// Refuses a `WHERE` under a group window that reads a row's window, which is known only
/// once its window fires.
fn refuse_window_columns_before_grouping(mut plan: &LogicalPlan) -> Result<(), Error> {
    loop {
        plan = match plan {
            LogicalPlan::Filter(filter) => {
                reads_window(&filter.predicate)?;
                &filter.input
            }
            LogicalPlan::Projection(projection) => &projection.input,
            LogicalPlan::SubqueryAlias(alias) => &alias.input,
            _ => return Ok(()),
        };
    }
}

fn reads_window(predicate: &Expr) -> Result<(), Error> {
    match predicate
        .column_refs()
        .into_iter()
        .find(|column| column.name == WINDOW_START || column.name == WINDOW_END)
    {
        Some(column) => Err(Error::Plan {
            message: format!(
                "WHERE reads {}, which is known only once a window fires: filter on it in HAVING",
                column.name
            ),
            position: None,
        }),
        None => Ok(()),
    }
}

/// Where `column` (plus `offset`) of the rows `stages` give comes from in the rows they
/// take: a column passed on, or one plus or minus a constant; `None` for anything else.
pub(crate) fn column_below(
    stages: &[Stage],
    mut column: usize,
    mut offset: i64,
) -> Option<(usize, i64)> {
    use datafusion_expr::Operator;
    use datafusion_physical_expr::expressions::{BinaryExpr, Column, Literal};
    for stage in stages.iter().rev() {
        let Stage::Project(expressions, _) = stage else {
            continue;
        };
        let expression: &dyn datafusion_physical_expr::PhysicalExpr =
            expressions.get(column)?.as_ref();
        if let Some(passed) = expression.downcast_ref::<Column>() {
            column = passed.index();
            continue;
        }
        let binary = expression.downcast_ref::<BinaryExpr>()?;
        let passed = binary.left().downcast_ref::<Column>()?;
        let constant = match binary.right().downcast_ref::<Literal>()?.value() {
            datafusion_common::ScalarValue::Int64(Some(value)) => *value,
            datafusion_common::ScalarValue::Int32(Some(value)) => i64::from(*value),
            _ => return None,
        };
        offset = match binary.op() {
            Operator::Plus => offset.checked_add(constant)?,
            Operator::Minus => offset.checked_sub(constant)?,
            _ => return None,
        };
        column = passed.index();
    }
    Some((column, offset))
}
