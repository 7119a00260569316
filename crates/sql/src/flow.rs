//! [`Flow`]: a stateful query running. Records of an input go through the stateless stages
//! of each scan of it, into a group window (keyed by the `GROUP BY`, in the window engine)
//! or a join (kept by key, matched against the other side); what a window fires and what a
//! join matches goes on up the tree, through the stages over it, to the results. Windows
//! follow watermarks from their rows' event times, per input partition. The state of every
//! window, join and aggregate is checkpointed together, by what changed (`changelog.rs`).

use std::collections::BTreeMap;

use datafusion_common::arrow::array::{RecordBatch, UInt32Array};
use datafusion_common::arrow::compute::concat_batches;
use runnel_streamlet::checkpoint::Snapshots;
use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::{Added, PaneInfo, Window, WindowOperator};

use crate::accumulators::Accumulators;
use crate::grouping::{GroupKey, GroupPane, Grouping};
use crate::join::{JoinPlan, JoinState, Row, Side};
use crate::query::{Processed, Stage, each_row, run_stages};
use crate::tree::{self, Node};
use crate::updating::{Change, Updating};
use crate::value::{Cells, Value};
use crate::{Error, Query, RowKind, Table};

mod changelog;

/// A window's state: its operator over group keys and accumulators.
pub(crate) type Operator = WindowOperator<GroupKey, Accumulators>;

/// What a result record is stamped with, when it comes from a window's pane: the pane's
/// event time, and its window and what the pane says of itself, which the record's headers
/// carry (`docs/wire-format.md`). Made into text only for the query's results: the rows a
/// window hands on inside the query (q5's counts to their join) carry it as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) time: i64,
    pub(crate) window: Window,
    pub(crate) pane: PaneInfo,
}

impl Stamp {
    /// The headers of a result record with this stamp.
    pub(crate) fn headers(&self) -> [(&'static str, String); 8] {
        self.pane.header_values(self.window)
    }
}

/// A result of the query: its record, Avro encoded, and what else it carries.
#[derive(Debug, PartialEq)]
pub(crate) struct Produced {
    pub(crate) bytes: Vec<u8>,
    /// When a window gave it.
    pub(crate) stamp: Option<Stamp>,
    /// When the query's results update.
    pub(crate) kind: Option<RowKind>,
}

/// What the rows of a batch carry beyond their values, row by row.
#[derive(Default)]
struct Marks {
    /// Rows of windows' panes: their stamps.
    stamps: Option<Vec<Stamp>>,
    /// Rows that update: their kinds.
    kinds: Option<Vec<RowKind>>,
}

impl Marks {
    /// The marks of the rows at `indices`.
    fn select(self, indices: &UInt32Array) -> Marks {
        let rows = indices.values().iter().map(|index| *index as usize);
        Marks {
            stamps: self
                .stamps
                .map(|stamps| rows.clone().map(|row| stamps[row]).collect()),
            kinds: self.kinds.map(|kinds| rows.map(|row| kinds[row]).collect()),
        }
    }
}

/// Where a node's results go.
#[derive(Clone, Copy, Debug)]
enum Parent {
    /// They are the query's results.
    Root,
    /// Into a node, as its left or right input (only joins tell them apart).
    Node(usize, Side),
}

/// Where the least time still to come on one side of a join is known: the value of a
/// column of its rows is at least `offset` after a watermark.
#[derive(Clone, Copy, Debug)]
enum Clock {
    /// The watermark of the window at this node.
    Window { node: usize, offset: i64 },
    /// The watermark of the scan at this node, over the column it observes.
    Scan {
        node: usize,
        column: usize,
        offset: i64,
    },
}

impl Clock {
    /// The clock `found` from the node at `at`, by the index of the node it reads.
    fn placed(found: tree::Clock, at: usize) -> Clock {
        match found {
            tree::Clock::Window { depth, offset } => Clock::Window {
                node: at + depth,
                offset,
            },
            tree::Clock::Scan {
                depth,
                column,
                offset,
            } => Clock::Scan {
                node: at + depth,
                column,
                offset,
            },
        }
    }
}

/// A scan's watermark over one column of its rows, for a join above it.
struct ScanClock {
    column: usize,
    watermarks: WatermarkHolder,
}

/// The least time, in milliseconds of event time, a join's watermarks move between two
/// scans of its rows for those no row still to come can match.
const MIN_EXPIRY_STEP: i64 = 100;

/// A node of the running tree.
enum Running<'q> {
    /// An input's records through stateless stages.
    Scan {
        input: usize,
        stages: &'q [Stage],
        /// The watermark of a time column, where a join above expires rows by it.
        clock: Option<ScanClock>,
    },
    /// Stateless stages over a stateful node's results.
    Stages { stages: &'q [Stage] },
    /// A group window.
    Window {
        feed: Feed<'q>,
        grouping: &'q Grouping,
        operator: Box<Operator>,
        watermarks: WatermarkHolder,
    },
    /// A `GROUP BY` without a window.
    Aggregate {
        feed: Feed<'q>,
        grouping: &'q Grouping,
        state: Updating,
    },
    /// A join.
    Join {
        plan: &'q JoinPlan,
        state: Box<JoinState>,
        /// Where the least time still to come is known on the left and the right side.
        clocks: [Option<Clock>; 2],
        /// The times (on its grid) it last forgot rows at.
        expired_at: (Option<i64>, Option<i64>),
    },
}

/// What a window groups.
enum Feed<'q> {
    /// The records of an input, through the stateless stages of its scan.
    Records { input: usize, stages: &'q [Stage] },
    /// The rows a window below fires (at this node), grouped by its bounds: this window's
    /// watermark follows that one's.
    Fired { window: usize },
    /// The rows of the node below, an aggregate without a window's or a join's.
    Rows,
}

/// A stateful query's operators and state.
pub(crate) struct Flow<'q> {
    query: &'q Query,
    nodes: Vec<(Running<'q>, Parent)>,
    /// Results not taken yet, Avro encoded, each with its stamp when a window gave it.
    results: Vec<Produced>,
    /// Rows too late for all their windows since the last [`take_late`](Flow::take_late).
    late: u64,
    /// The processing time of the records or the advance being run.
    now: i64,
    /// When the next checkpoint writes every entry (`changelog.rs`).
    snapshots: Snapshots,
    /// The latest event time read from each input whose rows have one.
    latest: Vec<Option<i64>>,
}

impl std::fmt::Debug for Flow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("nodes", &self.nodes.len())
            .field("results", &self.results.len())
            .finish_non_exhaustive()
    }
}

impl<'q> Flow<'q> {
    /// The operators of `query` with empty state, windows following `watermarks`.
    pub(crate) fn new(query: &'q Query, watermarks: Watermarks) -> Flow<'q> {
        let mut flow = Flow {
            query,
            nodes: Vec::new(),
            results: Vec::new(),
            late: 0,
            now: 0,
            snapshots: Snapshots::default(),
            latest: vec![None; query.inputs().len()],
        };
        flow.add_node(query.tree(), Parent::Root, watermarks);
        flow
    }

    fn add_node(&mut self, node: &'q Node, parent: Parent, watermarks: Watermarks) {
        let at = self.nodes.len();
        match node {
            Node::Scan { input, stages } => {
                self.nodes.push((
                    Running::Scan {
                        input: *input,
                        stages,
                        clock: None,
                    },
                    parent,
                ));
            }
            Node::Stages { stages, input } => {
                self.nodes.push((Running::Stages { stages }, parent));
                self.add_node(input, Parent::Node(at, Side::Left), watermarks);
            }
            Node::Window { grouping, input } => {
                let feed = match input.as_ref() {
                    Node::Scan { input, stages } => Feed::Records {
                        input: *input,
                        stages,
                    },
                    _ => Feed::Fired { window: at },
                };
                let mut operator = Operator::new(grouping.spec(), grouping.accumulators());
                operator.track_changes();
                let running = Running::Window {
                    feed,
                    grouping,
                    operator: Box::new(operator),
                    watermarks: WatermarkHolder::new(watermarks),
                };
                self.nodes.push((running, parent));
                if !matches!(input.as_ref(), Node::Scan { .. }) {
                    self.add_node(input, Parent::Node(at, Side::Left), watermarks);
                    // Planning traced the window's bounds through stages to a window.
                    let below = (at + 1..self.nodes.len())
                        .find(|node| !matches!(self.nodes[*node].0, Running::Stages { .. }))
                        .filter(|node| matches!(self.nodes[*node].0, Running::Window { .. }))
                        .expect("rows grouped by window bounds come from a window");
                    if let Running::Window { feed, .. } = &mut self.nodes[at].0 {
                        *feed = Feed::Fired { window: below };
                    }
                }
            }
            Node::Aggregate { grouping, input } => {
                let feed = match input.as_ref() {
                    Node::Scan { input, stages } => Feed::Records {
                        input: *input,
                        stages,
                    },
                    _ => Feed::Rows,
                };
                let running = Running::Aggregate {
                    feed,
                    grouping,
                    state: Updating::default(),
                };
                self.nodes.push((running, parent));
                if !matches!(input.as_ref(), Node::Scan { .. }) {
                    self.add_node(input, Parent::Node(at, Side::Left), watermarks);
                }
            }
            Node::Join { plan, left, right } => {
                let running = Running::Join {
                    plan,
                    state: Box::default(),
                    clocks: [None, None],
                    expired_at: (None, None),
                };
                self.nodes.push((running, parent));
                let left_at = self.nodes.len();
                self.add_node(left, Parent::Node(at, Side::Left), watermarks);
                let right_at = self.nodes.len();
                self.add_node(right, Parent::Node(at, Side::Right), watermarks);
                if let Some(bound) = plan.time_bound {
                    let placed = |side: &Node, side_at: usize, column: usize| {
                        side.clock(column, 0)
                            .map(|clock| Clock::placed(clock, side_at))
                    };
                    let found = [
                        placed(left, left_at, bound.left),
                        placed(right, right_at, bound.right),
                    ];
                    for clock in found.into_iter().flatten() {
                        self.observe(clock, watermarks);
                    }
                    if let Running::Join { clocks, .. } = &mut self.nodes[at].0 {
                        *clocks = found;
                    }
                }
            }
        }
    }

    /// Has the scan a scan `clock` reads keep a watermark of its column.
    fn observe(&mut self, clock: Clock, strategy: Watermarks) {
        if let Clock::Scan { node, column, .. } = clock
            && let Running::Scan { clock, .. } = &mut self.nodes[node].0
        {
            clock.get_or_insert_with(|| ScanClock {
                column,
                watermarks: WatermarkHolder::new(strategy),
            });
        }
    }

    /// Whether the rows of input `input` have an event time: a window or a join's time
    /// bound reads them.
    pub(crate) fn has_event_time(&self, input: usize) -> bool {
        self.nodes.iter().any(|(node, _)| {
            matches!(node,
                Running::Window { feed: Feed::Records { input: over, .. }, .. }
                | Running::Scan { input: over, clock: Some(_), .. } if *over == input)
        })
    }

    /// The latest event time read from input `input`, once a row of it had one.
    pub(crate) fn latest_time(&self, input: usize) -> Option<i64> {
        self.latest[input]
    }

    /// Adds a partition of input `input` to the watermarks of the windows and scans over it.
    pub(crate) fn add_partition(&mut self, input: usize, partition: u32, now: i64) {
        for (node, _) in &mut self.nodes {
            match node {
                Running::Window {
                    feed: Feed::Records { input: over, .. },
                    watermarks,
                    ..
                }
                | Running::Scan {
                    input: over,
                    clock: Some(ScanClock { watermarks, .. }),
                    ..
                } if *over == input => watermarks.add_partition(partition, now),
                _ => {}
            }
        }
    }

    /// Runs `records` of input `input` (written with `writer`'s schema, or the table's; the
    /// partition of each in `partitions`) through the tree at processing time `now`. Event
    /// times move the windows' watermarks on unless `follows_script`. Returns the records
    /// that could not be read or computed, by index, with why.
    pub(crate) fn add(
        &mut self,
        input: usize,
        writer: Option<&Table>,
        records: &[&[u8]],
        partitions: &[u32],
        now: i64,
        follows_script: bool,
    ) -> Processed<()> {
        self.now = now;
        let query = self.query;
        // Decoded once, however many parts of the query read the input (q7 reads the
        // bids twice: for the window's maximum and for the join).
        let (decoded, unread) = query.decode(input, writer, records);
        let mut rejected: BTreeMap<usize, Error> = unread.into_iter().collect();
        for at in 0..self.nodes.len() {
            let (node, parent) = &mut self.nodes[at];
            let parent = *parent;
            match node {
                Running::Window {
                    feed:
                        Feed::Records {
                            input: over,
                            stages,
                        },
                    grouping,
                    operator,
                    watermarks,
                } if *over == input => {
                    let grouped = decoded.processed(|batch, indices| {
                        let (indices, batch) = run_stages(stages, batch, indices)?;
                        grouping.rows(&batch, indices.values())
                    });
                    let mut panes = Vec::new();
                    for (index, row) in grouped.results {
                        self.latest[input] = self.latest[input].max(Some(row.time));
                        if operator.add(row.key, row.time, &row.arguments, now, &mut panes)
                            == Added::Late
                        {
                            self.late += 1;
                        }
                        if !follows_script
                            && let Some(watermark) =
                                watermarks.observe(partitions[index], row.time, now)
                        {
                            operator.advance_watermark(watermark, now, &mut panes);
                        }
                    }
                    for (index, error) in grouped.rejected {
                        rejected.entry(index).or_insert(error);
                    }
                    let grouping: &'q Grouping = grouping;
                    self.fire(grouping, parent, &mut panes);
                }
                Running::Aggregate {
                    feed:
                        Feed::Records {
                            input: over,
                            stages,
                        },
                    grouping,
                    state,
                } if *over == input => {
                    let grouped = decoded.processed(|batch, indices| {
                        let (indices, batch) = run_stages(stages, batch, indices)?;
                        grouping.rows(&batch, indices.values())
                    });
                    for (index, error) in grouped.rejected {
                        rejected.entry(index).or_insert(error);
                    }
                    let rows = grouped.results.into_iter().map(|(_, row)| row).collect();
                    let changes = state.add(grouping.aggregates(), rows, None);
                    let grouping: &'q Grouping = grouping;
                    self.send_changes(grouping, parent, &changes);
                }
                Running::Scan {
                    input: over,
                    stages,
                    clock,
                } if *over == input => {
                    let scanned = decoded.processed(|batch, indices| {
                        let (indices, batch) = run_stages(stages, batch, indices)?;
                        Ok(match indices.values().first() {
                            Some(first) => vec![(*first as usize, (indices, batch))],
                            None => Vec::new(),
                        })
                    });
                    for (index, error) in scanned.rejected {
                        rejected.entry(index).or_insert(error);
                    }
                    let (indices, batches): (Vec<UInt32Array>, Vec<(usize, RecordBatch)>) = scanned
                        .results
                        .into_iter()
                        .map(|(first, (indices, batch))| (indices, (first, batch)))
                        .unzip();
                    if let Some(clock) = clock {
                        for (indices, (_, batch)) in indices.iter().zip(&batches) {
                            let times = Cells::of(batch.column(clock.column));
                            for (row, index) in indices.values().iter().enumerate() {
                                if let Value::Integer(time) = times.get(row) {
                                    self.latest[input] = self.latest[input].max(Some(time));
                                    let partition = partitions[*index as usize];
                                    clock.watermarks.observe(partition, time, now);
                                }
                            }
                        }
                    }
                    if let Some(batch) = concatenated(batches) {
                        self.push(parent, batch, Marks::default());
                    }
                }
                _ => {}
            }
        }
        self.follow_windows_below(now);
        self.expire();
        Processed {
            results: Vec::new(),
            rejected: rejected.into_iter().collect(),
        }
    }

    /// Has each join with a time bound forget the rows that can match nothing any more.
    fn expire(&mut self) {
        for at in 0..self.nodes.len() {
            let Running::Join { plan, clocks, .. } = &self.nodes[at].0 else {
                continue;
            };
            let (Some(bound), [Some(left), Some(right)]) = (plan.time_bound, *clocks) else {
                continue;
            };
            // Forgetting scans every kept row, so it runs once the least time to come
            // crosses into the next step of a grid a quarter of the bound's width wide
            // (rows are kept up to a step longer). On the grid, a restored join forgets
            // at the same times as the saved one would have.
            let step = (bound.upper.saturating_sub(bound.lower) / 4).max(MIN_EXPIRY_STEP);
            let on_grid =
                |time: Option<i64>| time.map(|time| time.saturating_sub(time.rem_euclid(step)));
            let from = (
                on_grid(self.least_to_come(left)),
                on_grid(self.least_to_come(right)),
            );
            let parent = self.nodes[at].1;
            if let Running::Join {
                plan,
                state,
                expired_at,
                ..
            } = &mut self.nodes[at].0
                && *expired_at != from
            {
                let plan: &'q JoinPlan = plan;
                let [left, right] = state.expire(plan, &bound, from.0, from.1);
                *expired_at = from;
                self.push_padded(plan, parent, Side::Left, &left);
                self.push_padded(plan, parent, Side::Right, &right);
            }
        }
    }

    /// Hands the rows of an outer join's `side` that matched nothing to `parent`, with
    /// nulls for the other side's columns.
    fn push_padded(&mut self, plan: &JoinPlan, parent: Parent, side: Side, rows: &[Row]) {
        if rows.is_empty() {
            return;
        }
        match plan.padded(side, rows) {
            Ok(batch) => self.push(parent, batch, Marks::default()),
            Err(error) => tracing::error!("rows that matched nothing cannot be made: {error}"),
        }
    }

    /// The least time rows still to come can have, by `clock`, once there is a watermark.
    fn least_to_come(&self, clock: Clock) -> Option<i64> {
        let (watermark, offset) = match clock {
            Clock::Window { node, offset } => match &self.nodes[node].0 {
                Running::Window { operator, .. } => (operator.watermark(), offset),
                _ => return None,
            },
            Clock::Scan { node, offset, .. } => match &self.nodes[node].0 {
                Running::Scan {
                    clock: Some(observed),
                    ..
                } => (observed.watermarks.current(), offset),
                _ => return None,
            },
        };
        (watermark > i64::MIN).then(|| watermark.saturating_add(offset))
    }

    /// Moves every window on to processing time `now`: to the test kit's `scripted`
    /// watermark, or past partitions gone idle; with `finish`, to the end of time (a
    /// bounded input ended), so every window fires.
    pub(crate) fn advance(&mut self, now: i64, scripted: Option<i64>, finish: bool) {
        self.now = now;
        for at in 0..self.nodes.len() {
            let (node, parent) = &mut self.nodes[at];
            let parent = *parent;
            if let Running::Window {
                grouping,
                operator,
                watermarks,
                feed,
            } = node
            {
                let mut panes = Vec::new();
                operator.advance_processing_time(now, &mut panes);
                let watermark = match scripted {
                    // It follows the window below.
                    _ if matches!(feed, Feed::Fired { .. }) => None,
                    _ if finish => Some(watermarks.finish()),
                    Some(scripted) => Some(scripted),
                    None => watermarks.check_idle(now),
                };
                if let Some(watermark) = watermark {
                    operator.advance_watermark(watermark, now, &mut panes);
                }
                let grouping: &'q Grouping = grouping;
                self.fire(grouping, parent, &mut panes);
            } else if let Running::Scan {
                clock: Some(observed),
                ..
            } = node
            {
                if finish {
                    observed.watermarks.finish();
                } else if scripted.is_none() {
                    observed.watermarks.check_idle(now);
                }
            }
        }
        self.follow_windows_below(now);
        self.expire();
    }

    /// Moves each window over the rows of a window below on to that window's watermark,
    /// lowest first, so that it fires the groups of the windows that fired below.
    fn follow_windows_below(&mut self, now: i64) {
        for at in (0..self.nodes.len()).rev() {
            let Running::Window {
                feed: Feed::Fired { window },
                ..
            } = &self.nodes[at].0
            else {
                continue;
            };
            let Running::Window { operator, .. } = &self.nodes[*window].0 else {
                unreachable!("a window follows a window");
            };
            let watermark = operator.watermark();
            let parent = self.nodes[at].1;
            let Running::Window {
                grouping, operator, ..
            } = &mut self.nodes[at].0
            else {
                unreachable!("matched above");
            };
            if watermark <= operator.watermark() {
                continue;
            }
            let mut panes = Vec::new();
            operator.advance_watermark(watermark, now, &mut panes);
            let grouping: &'q Grouping = grouping;
            self.fire(grouping, parent, &mut panes);
        }
    }

    /// When the windows next need [`advance`](Flow::advance) without new input: a
    /// processing-time trigger, or a partition going idle (unless watermarks are scripted).
    pub(crate) fn next_deadline(&self, scripted: bool) -> Option<i64> {
        let scans = self.nodes.iter().filter_map(|(node, _)| match node {
            Running::Scan {
                clock: Some(observed),
                ..
            } => observed
                .watermarks
                .next_idle_deadline()
                .filter(|_| !scripted),
            _ => None,
        });
        self.windows()
            .flat_map(|(operator, watermarks)| {
                let idle = watermarks.next_idle_deadline().filter(|_| !scripted);
                operator.next_processing_deadline().into_iter().chain(idle)
            })
            .chain(scans)
            .min()
    }

    /// The least watermark of the windows, if there are any.
    pub(crate) fn watermark(&self) -> Option<i64> {
        self.windows()
            .map(|(operator, _)| operator.watermark())
            .min()
    }

    /// The results so far, taken.
    pub(crate) fn take_results(&mut self) -> Vec<Produced> {
        std::mem::take(&mut self.results)
    }

    /// The number of rows too late for their windows since the last call.
    pub(crate) fn take_late(&mut self) -> u64 {
        std::mem::take(&mut self.late)
    }

    fn windows(&self) -> impl Iterator<Item = (&Operator, &WatermarkHolder)> {
        self.nodes.iter().filter_map(|(node, _)| match node {
            Running::Window {
                operator,
                watermarks,
                ..
            } => Some((operator.as_ref(), watermarks)),
            _ => None,
        })
    }

    /// Sends the rows of `panes`, which `grouping`'s window fired, to `parent`.
    fn fire(&mut self, grouping: &Grouping, parent: Parent, panes: &mut [GroupPane]) {
        if panes.is_empty() {
            return;
        }
        grouping.restore_windows(panes);
        match grouping.batch(panes) {
            Ok(batch) => {
                let stamps = panes
                    .iter()
                    .map(|pane| Stamp {
                        time: pane.timestamp,
                        window: pane.window(),
                        pane: pane.info(),
                    })
                    .collect();
                // With early results, each after a window's first replaces the one before.
                let kinds = grouping.is_updating().then(|| {
                    panes
                        .iter()
                        .map(|pane| match pane {
                            _ if pane.retraction => RowKind::UpdateBefore,
                            _ if pane.index == 0 => RowKind::Insert,
                            _ => RowKind::UpdateAfter,
                        })
                        .collect()
                });
                let marks = Marks {
                    stamps: Some(stamps),
                    kinds,
                };
                self.push(parent, batch, marks);
            }
            Err(error) => tracing::error!("the rows of fired windows cannot be made: {error}"),
        }
    }

    /// Sends the rows of `changes`, which `grouping`'s aggregate without a window made, to
    /// `parent`.
    fn send_changes(&mut self, grouping: &Grouping, parent: Parent, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        match grouping.changes_batch(changes) {
            Ok(batch) => {
                let kinds = changes.iter().map(|(_, _, kind)| *kind).collect();
                let marks = Marks {
                    stamps: None,
                    kinds: Some(kinds),
                };
                self.push(parent, batch, marks);
            }
            Err(error) => tracing::error!("the rows of updated groups cannot be made: {error}"),
        }
    }

    /// Hands `batch` (with the marks of its rows) to `target`, which runs it and hands its
    /// results on.
    fn push(&mut self, target: Parent, batch: RecordBatch, marks: Marks) {
        let (at, side) = match target {
            Parent::Root => {
                self.finish(&batch, marks);
                return;
            }
            Parent::Node(at, side) => (at, side),
        };
        let parent = self.nodes[at].1;
        match &mut self.nodes[at].0 {
            Running::Stages { stages } => {
                let stages: &'q [Stage] = stages;
                let Some((indices, batch)) = stages_over(stages, batch) else {
                    return;
                };
                self.push(parent, batch, marks.select(&indices));
            }
            Running::Join { plan, state, .. } => {
                let time_column = plan.time_bound.map(|bound| match side {
                    Side::Left => bound.left,
                    Side::Right => bound.right,
                });
                let plan: &'q JoinPlan = plan;
                match state.join(plan, side, &batch, marks.kinds.as_deref(), time_column) {
                    Ok(matched) => {
                        if matched.batch.num_rows() > 0 {
                            let marks = Marks {
                                stamps: None,
                                kinds: matched.kinds,
                            };
                            self.push(parent, matched.batch, marks);
                        }
                        self.push_padded(plan, parent, side, &matched.unmatched);
                    }
                    Err(error) => tracing::error!("joining rows failed, they are dropped: {error}"),
                }
            }
            Running::Window {
                feed: Feed::Fired { .. },
                grouping,
                operator,
                ..
            } => {
                let grouping: &'q Grouping = grouping;
                let indices: Vec<u32> = (0..batch.num_rows() as u32).collect();
                let rows = match grouping.rows(&batch, &indices) {
                    Ok(rows) => rows,
                    Err(error) => {
                        tracing::error!("grouping fired rows failed, they are dropped: {error}");
                        return;
                    }
                };
                let mut panes = Vec::new();
                for (_, row) in rows {
                    if operator.add(row.key, row.time, &row.arguments, self.now, &mut panes)
                        == Added::Late
                    {
                        self.late += 1;
                    }
                }
                self.fire(grouping, parent, &mut panes);
            }
            Running::Aggregate {
                feed: Feed::Rows,
                grouping,
                state,
            } => {
                let grouping: &'q Grouping = grouping;
                let indices: Vec<u32> = (0..batch.num_rows() as u32).collect();
                let rows = match grouping.rows(&batch, &indices) {
                    Ok(rows) => rows.into_iter().map(|(_, row)| row).collect(),
                    Err(error) => {
                        tracing::error!("grouping rows failed, they are dropped: {error}");
                        return;
                    }
                };
                let changes = state.add(grouping.aggregates(), rows, marks.kinds.as_deref());
                self.send_changes(grouping, parent, &changes);
            }
            Running::Scan { .. } | Running::Window { .. } | Running::Aggregate { .. } => {
                unreachable!("scans, and windows and aggregates over scans, take records, not rows")
            }
        }
    }

    /// Encodes the query's result rows.
    fn finish(&mut self, batch: &RecordBatch, marks: Marks) {
        let encoded = match self.query.encode_batch(batch) {
            Ok(encoded) => encoded,
            Err(error) => {
                tracing::error!("results could not be written, they are dropped: {error}");
                return;
            }
        };
        let produced = |(at, bytes): (usize, Vec<u8>)| Produced {
            bytes,
            stamp: marks.stamps.as_ref().map(|stamps| stamps[at]),
            kind: match &marks.kinds {
                Some(kinds) => Some(kinds[at]),
                // The results of a query that updates are all marked, inserts too.
                None if self.query.is_updating() => Some(RowKind::Insert),
                None => None,
            },
        };
        let produced: Vec<Produced> = encoded.into_iter().enumerate().map(produced).collect();
        self.results.extend(produced);
    }
}

/// `stages` over `batch`, whose rows are numbered from 0: the numbers of the rows that
/// remain and their batch. Rows the stages fail on are logged and dropped.
fn stages_over(stages: &[Stage], batch: RecordBatch) -> Option<(UInt32Array, RecordBatch)> {
    let indices = UInt32Array::from_iter_values(0..batch.num_rows() as u32);
    let mut processed = Processed::default();
    each_row(batch, indices, &mut processed, |batch, indices| {
        let (indices, batch) = run_stages(stages, batch, indices)?;
        Ok(match indices.values().first() {
            Some(first) => vec![(*first as usize, (indices, batch))],
            None => Vec::new(),
        })
    });
    for (row, error) in &processed.rejected {
        tracing::error!(row, "the query failed on a row, which is dropped: {error}");
    }
    let (indices, batches): (Vec<UInt32Array>, Vec<RecordBatch>) = processed
        .results
        .into_iter()
        .map(|(_, result)| result)
        .unzip();
    let batch = concatenated(batches.into_iter().map(|batch| (0, batch)).collect())?;
    let indices = indices
        .iter()
        .flat_map(|indices| indices.values().iter().copied());
    Some((UInt32Array::from_iter_values(indices), batch))
}

/// The batches as one, or `None` when there are none.
fn concatenated(batches: Vec<(usize, RecordBatch)>) -> Option<RecordBatch> {
    let schema = batches.first()?.1.schema();
    let batches: Vec<RecordBatch> = batches.into_iter().map(|(_, batch)| batch).collect();
    Some(concat_batches(&schema, &batches).expect("batches of one schema concatenate"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Column, ColumnType};
    use runnel_streamlet::checkpoint::{ChangelogEntries, ReplayTarget};

    /// A record of `(key: string, value: long, at: long)`, Avro encoded.
    fn record(key: &str, value: i64, at: i64) -> Vec<u8> {
        fn long(mut bytes: Vec<u8>, value: i64) -> Vec<u8> {
            let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
            while zigzag >= 0x80 {
                bytes.push((zigzag as u8) | 0x80);
                zigzag >>= 7;
            }
            bytes.push(zigzag as u8);
            bytes
        }
        let mut bytes = long(Vec::new(), key.len() as i64);
        bytes.extend_from_slice(key.as_bytes());
        long(long(bytes, value), at)
    }

    fn table(name: &str) -> Table {
        Table::new(
            name,
            vec![
                Column::new("k", ColumnType::String),
                Column::new("v", ColumnType::Long),
                Column::new("at", ColumnType::Long),
            ],
        )
    }

    fn add(flow: &mut Flow<'_>, input: usize, records: &[Vec<u8>]) {
        let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let partitions = vec![0; records.len()];
        let processed = flow.add(input, None, &records, &partitions, 0, false);
        assert!(processed.rejected.is_empty(), "{:?}", processed.rejected);
    }

    /// Checkpoints `flow` as its streamlet does: its changes go to `changelog`, and the
    /// checkpoint record's value comes back.
    fn checkpoint(flow: &mut Flow<'_>, changelog: &mut Vec<ChangelogEntries>) -> Vec<u8> {
        let (changes, saved, snapshot) = flow.take_changes();
        if snapshot {
            changelog.clear();
        }
        changelog.push(changes);
        saved
    }

    /// A flow of `query` restored as its streamlet restores one: `changelog`'s entries
    /// replayed in order, then the checkpoint record's value.
    fn restored<'q>(query: &'q Query, changelog: &[ChangelogEntries], saved: &[u8]) -> Flow<'q> {
        let mut flow = Flow::new(query, Watermarks::default());
        for entry in changelog.iter().flat_map(ChangelogEntries::iter) {
            let (key, value) = entry.unwrap();
            assert!(flow.apply(key, value), "every entry is the flow's");
        }
        flow.restore(Some(saved), Watermarks::default()).unwrap();
        flow
    }

    /// Runs `query` over two halves of each input, the second half after the checkpoints
    /// of the first (two: the second writes what changed after the first) restored into a
    /// new flow: the results after the checkpoint are the same as the uninterrupted flow's.
    /// Runs `sql` over four parts of rows of `t` and `u`, and a restore of it after the
    /// first two, and checks both give the same results for the last two; returns them.
    fn check_restore(sql: &str) -> Vec<(Option<i64>, Vec<u8>, Option<&'static str>)> {
        let query = Query::plan(sql, &[table("t"), table("u")], "Out").unwrap();
        let part = |input: usize, part: i64| -> Vec<Vec<u8>> {
            (part * 20..(part + 1) * 20)
                .map(|n| record(&format!("k{}", n % 3), n * (input as i64 + 1), n * 300))
                .collect()
        };
        let mut whole = Flow::new(&query, Watermarks::default());
        let mut changelog = Vec::new();
        let mut saved = Vec::new();
        for input in 0..query.inputs().len() {
            whole.add_partition(input, 0, 0);
        }
        for first in 0..2 {
            for input in 0..query.inputs().len() {
                add(&mut whole, input, &part(input, first));
            }
            saved = checkpoint(&mut whole, &mut changelog);
        }
        assert_eq!(
            changelog.len(),
            2,
            "the second checkpoint is not a snapshot"
        );
        whole.take_results();
        let mut restored = restored(&query, &changelog, &saved);
        assert_eq!(restored.held_entries(), whole.held_entries());
        for flow in [&mut whole, &mut restored] {
            for input in 0..query.inputs().len() {
                add(flow, input, &part(input, 2));
                add(flow, input, &part(input, 3));
            }
            flow.advance(0, None, true);
        }
        // Keys whose windows end together may fire in another order after a restore.
        let sorted = |flow: &mut Flow<'_>| {
            let mut results: Vec<_> = flow
                .take_results()
                .into_iter()
                .map(|result| {
                    (
                        result.stamp.map(|stamp| stamp.time),
                        result.bytes,
                        result.kind.map(RowKind::as_str),
                    )
                })
                .collect();
            results.sort();
            results
        };
        let results = sorted(&mut whole);
        assert!(results.len() > 5, "{}", results.len());
        assert_eq!(sorted(&mut restored), results);
        results
    }

    /// The rows every join keeps.
    fn kept(flow: &Flow<'_>) -> usize {
        flow.nodes
            .iter()
            .map(|(node, _)| match node {
                Running::Join { state, .. } => state.rows(),
                _ => 0,
            })
            .sum()
    }

    /// Runs `sql` over 20,000 records of `t` and `u`, 10 ms apart: the results, and the most
    /// rows its join kept after a batch.
    fn run_join(sql: &str) -> (usize, usize) {
        let query = Query::plan(sql, &[table("t"), table("u")], "Out").unwrap();
        let mut flow = Flow::new(&query, Watermarks::default());
        let (mut results, mut most) = (0, 0);
        for batch in 0..200_i64 {
            for input in 0..query.inputs().len() {
                let records: Vec<Vec<u8>> = (batch * 100..(batch + 1) * 100)
                    .map(|n| record(&format!("k{}", n % 5), n % 97, n * 10))
                    .collect();
                add(&mut flow, input, &records);
            }
            results += flow.take_results().len();
            most = most.max(kept(&flow));
        }
        flow.advance(0, None, true);
        (results + flow.take_results().len(), most)
    }

    /// The columns of the rows each side of each join keeps, after `records` of each
    /// input, and how many results came out.
    fn kept_widths(sql: &str, records: &[Vec<u8>]) -> (Vec<[Option<usize>; 2]>, usize) {
        let query = Query::plan(sql, &[table("t"), table("u")], "Out").unwrap();
        let mut flow = Flow::new(&query, Watermarks::default());
        for input in 0..query.inputs().len() {
            add(&mut flow, input, records);
        }
        let widths = flow
            .nodes
            .iter()
            .filter_map(|(node, _)| match node {
                Running::Join { state, .. } => Some(state.widths()),
                _ => None,
            })
            .collect();
        flow.advance(0, None, true);
        (widths, flow.take_results().len())
    }

    #[test]
    fn a_join_keeps_only_the_columns_the_query_reads() {
        let records = [record("x", 1, 100), record("y", 2, 200)];
        // `t` gives its key, `u` its key and `v`; `at` is read by the filter below the
        // join and not kept.
        let sql = "SELECT a.k, b.v FROM t a JOIN u b ON a.k = b.k WHERE b.at > 10";
        assert_eq!(kept_widths(sql, &records), (vec![[Some(1), Some(2)]], 2));
        // Beside a group window, which still reads its event-time column: `t`'s rows
        // keep `v` and `at`, not `k`.
        let sql = "SELECT a.v FROM t a JOIN ( \
              SELECT MAX(v) AS top, TUMBLE_ROWTIME(at, INTERVAL '1' SECOND) AS at \
              FROM t GROUP BY TUMBLE(at, INTERVAL '1' SECOND)) b \
            ON a.v = b.top WHERE a.at BETWEEN b.at - 999 AND b.at";
        let (widths, results) = kept_widths(sql, &records);
        assert_eq!(widths[0][0], Some(2));
        assert_eq!(results, 1);
    }

    #[test]
    fn a_join_with_a_time_bound_forgets_rows_no_later_row_can_match() {
        // Nexmark q7's shape: each second's highest value, joined back to its rows.
        let bounded = "SELECT a.k, a.v FROM t a JOIN ( \
              SELECT MAX(v) AS top, TUMBLE_ROWTIME(at, INTERVAL '1' SECOND) AS at \
              FROM t GROUP BY TUMBLE(at, INTERVAL '1' SECOND)) b \
            ON a.v = b.top WHERE a.at BETWEEN b.at - 999 AND b.at";
        let (results, most) = run_join(bounded);
        // The highest of 97 values appears about once per 97 records: about one a second.
        assert!(results > 150, "{results}");
        // 5 s of disorder allowed and a second's window: some 7 s of rows, of 200 s.
        assert!(most < 1_000, "{most} rows kept");
        // The same join without the bound keeps every row.
        let unbounded = "SELECT a.k, a.v FROM t a JOIN ( \
              SELECT MAX(v) AS top, TUMBLE_ROWTIME(at, INTERVAL '1' SECOND) AS at \
              FROM t GROUP BY TUMBLE(at, INTERVAL '1' SECOND)) b \
            ON a.v = b.top WHERE a.at <= b.at";
        let (_, most) = run_join(unbounded);
        assert!(most > 19_000, "{most}");
    }

    #[test]
    fn a_join_of_windows_on_their_bounds_forgets_the_windows_both_sides_passed() {
        let (results, most) = run_join(
            "SELECT a.k, a.n, b.n AS m FROM ( \
               SELECT k, COUNT(*) AS n, TUMBLE_END(at, INTERVAL '1' SECOND) AS ends FROM t \
               GROUP BY k, TUMBLE(at, INTERVAL '1' SECOND)) a \
             JOIN ( \
               SELECT k, COUNT(*) AS n, TUMBLE_END(at, INTERVAL '1' SECOND) AS ends FROM u \
               GROUP BY k, TUMBLE(at, INTERVAL '1' SECOND)) b \
             ON a.k = b.k AND a.ends = b.ends",
        );
        assert_eq!(results, 5 * 200, "every key's every second, joined");
        assert!(most < 100, "{most} rows kept");
    }

    /// Nexmark q5's shape: per hopping window, the keys with the most rows.
    const HOTTEST: &str = "SELECT a.k, a.n, a.starts FROM ( \
           SELECT k, COUNT(*) AS n, HOP_START(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS starts, \
                  HOP_END(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS ends \
           FROM t GROUP BY k, HOP(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND)) a \
         JOIN ( \
           SELECT MAX(n) AS most, starts, ends FROM ( \
             SELECT COUNT(*) AS n, HOP_START(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS starts, \
                    HOP_END(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS ends \
             FROM t GROUP BY k, HOP(at, INTERVAL '1' SECOND, INTERVAL '2' SECOND)) c \
           GROUP BY starts, ends) b \
         ON a.starts = b.starts AND a.ends = b.ends AND a.n >= b.most";

    #[test]
    fn the_results_of_windows_grouped_by_their_bounds_fire_with_them_and_are_forgotten() {
        let (results, most) = run_join(HOTTEST);
        // 100 rows a second over 5 keys, in windows of 2 s every second: every key ties in
        // every window but the first and last half-filled ones.
        assert_eq!(results, 5 * 201, "every key of every window, joined");
        assert!(most < 100, "{most} rows kept");
    }

    #[test]
    fn restored_windows_over_windows_fire_what_the_saved_ones_would() {
        check_restore(HOTTEST);
    }

    #[test]
    fn restored_windows_fire_what_the_saved_ones_would() {
        check_restore(
            "SELECT k, COUNT(DISTINCT v) AS n, AVG(v) AS mean, MIN(k) AS least FROM t \
             GROUP BY k, HOP(at, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
        );
    }

    #[test]
    fn a_restored_join_forgets_what_the_saved_one_would() {
        // q7's shape: the bids side expires by the scan's watermark of its time column.
        let sql = "SELECT a.k, a.v FROM t a JOIN ( \
              SELECT MAX(v) AS top, TUMBLE_ROWTIME(at, INTERVAL '1' SECOND) AS at \
              FROM t GROUP BY TUMBLE(at, INTERVAL '1' SECOND)) b \
            ON a.v = b.top WHERE a.at BETWEEN b.at - 999 AND b.at";
        let query = Query::plan(sql, &[table("t")], "Out").unwrap();
        let records = |from: i64, to: i64| -> Vec<Vec<u8>> {
            (from..to)
                .map(|n| record(&format!("k{}", n % 5), n % 97, n * 10))
                .collect()
        };
        let mut whole = Flow::new(&query, Watermarks::default());
        whole.add_partition(0, 0, 0);
        add(&mut whole, 0, &records(0, 5_000));
        let mut changelog = Vec::new();
        let saved = checkpoint(&mut whole, &mut changelog);
        let mut restored = restored(&query, &changelog, &saved);
        // The scan's watermark of its time column is restored, not started over: the
        // join goes on forgetting rows before new ones come.
        let scan_watermark = |flow: &Flow<'_>| {
            flow.nodes.iter().find_map(|(node, _)| match node {
                Running::Scan {
                    clock: Some(observed),
                    ..
                } => Some(observed.watermarks.current()),
                _ => None,
            })
        };
        assert!(scan_watermark(&whole).unwrap() > 40_000);
        assert_eq!(scan_watermark(&restored), scan_watermark(&whole));
        for flow in [&mut whole, &mut restored] {
            add(flow, 0, &records(5_000, 5_001));
        }
        assert!(kept(&whole) < 1_000, "{}", kept(&whole));
        assert_eq!(kept(&restored), kept(&whole));
    }

    #[test]
    fn restored_aggregates_update_what_the_saved_ones_would() {
        check_restore(
            "SELECT k, COUNT(*) AS n, MAX(v) AS top FROM ( \
               SELECT a.k, a.v FROM t a JOIN u b ON a.k = b.k AND a.v = b.v / 2) j \
             GROUP BY k",
        );
    }

    #[test]
    fn a_checkpoint_from_before_the_changelog_restores_the_whole_state() {
        let sql = "SELECT a.k, a.v, b.v AS w FROM t a JOIN ( \
               SELECT k, SUM(v) AS v FROM u GROUP BY k, TUMBLE(at, INTERVAL '4' SECOND) \
             ) b ON a.k = b.k AND a.v < b.v";
        let query = Query::plan(sql, &[table("t"), table("u")], "Out").unwrap();
        let records = |input: usize, from: i64, to: i64| -> Vec<Vec<u8>> {
            (from..to)
                .map(|n| record(&format!("k{}", n % 3), n * (input as i64 + 1), n * 300))
                .collect()
        };
        let mut whole = Flow::new(&query, Watermarks::default());
        for input in 0..2 {
            whole.add_partition(input, 0, 0);
            add(&mut whole, input, &records(input, 0, 40));
        }
        whole.take_results();
        // What checkpoints held before: every window, join and aggregate whole.
        let (mut windows, mut joins) = (Vec::new(), Vec::new());
        for (node, _) in &whole.nodes {
            match node {
                Running::Window {
                    operator,
                    watermarks,
                    ..
                } => windows.push(serde_json::json!({
                    "operator": operator.state(),
                    "watermarks": watermarks,
                })),
                Running::Join { state, .. } => joins.push(serde_json::to_value(state).unwrap()),
                _ => {}
            }
        }
        let legacy = serde_json::json!({ "windows": windows, "joins": joins, "aggregates": [] });
        let mut restored = restored(&query, &[], &serde_json::to_vec(&legacy).unwrap());
        assert_eq!(restored.held_entries(), whole.held_entries());
        let (_, _, snapshot) = restored.take_changes();
        assert!(
            snapshot,
            "the first checkpoint after it writes the whole state"
        );
        for flow in [&mut whole, &mut restored] {
            for input in 0..2 {
                add(flow, input, &records(input, 40, 80));
            }
            flow.advance(0, None, true);
        }
        let results = whole.take_results();
        assert!(results.len() > 5, "{}", results.len());
        assert_eq!(restored.take_results().len(), results.len());
    }

    #[test]
    fn a_join_by_integer_keys_forgets_no_row_by_their_values() {
        // The keys are not times: `u`'s large values must not make `t`'s small one go.
        let query = Query::plan(
            "SELECT a.k, b.k AS l FROM t a JOIN u b ON a.v = b.v",
            &[table("t"), table("u")],
            "Out",
        )
        .unwrap();
        let mut flow = Flow::new(&query, Watermarks::default());
        add(&mut flow, 0, &[record("early", 5, 0)]);
        let large: Vec<_> = (10_000..20_000).map(|v| record("large", v, v)).collect();
        add(&mut flow, 1, &large);
        add(&mut flow, 1, &[record("late", 5, 20_000)]);
        assert_eq!(kept(&flow), 10_002, "every row is kept");
        flow.advance(0, None, true);
        assert_eq!(
            flow.take_results().len(),
            1,
            "the late row matches the early one"
        );
    }

    #[test]
    fn a_restored_outer_join_pads_what_the_saved_one_would() {
        // Rows up to about the 15th of `t` match nothing; those after do, and their
        // matches before the checkpoint are restored with them.
        check_restore(
            "SELECT a.k, a.v, b.v AS w FROM t a LEFT JOIN u b \
             ON a.k = b.k AND b.at BETWEEN a.at - 1000 AND a.at + 1000 AND b.v > a.v + 20",
        );
    }

    #[test]
    fn a_restored_outer_join_without_a_bound_takes_back_what_the_saved_one_would() {
        // Rows of `t` wait for a row of `u` of their key with a value over theirs by 20:
        // padded at first, taken back when it comes, also after the restore.
        let results = check_restore(
            "SELECT a.k, a.v, b.v AS w FROM t a LEFT JOIN u b ON a.k = b.k AND b.v > a.v + 20",
        );
        let taken_back = results.iter().filter(|(_, _, kind)| *kind == Some("-D"));
        assert!(taken_back.count() > 3, "{results:?}");
    }

    #[test]
    fn a_restored_join_of_updating_rows_takes_back_what_the_saved_one_would() {
        // Each row of `t` with its key's count of `u` rows while under 20: as counts rise,
        // pairs are taken back, and rows whose count passed 20 are padded.
        let results = check_restore(
            "SELECT a.k, a.v, c.n FROM t a LEFT JOIN \
               (SELECT k, COUNT(*) AS n FROM u GROUP BY k) c ON a.k = c.k AND c.n < 20",
        );
        let taken_back = results.iter().filter(|(_, _, kind)| *kind == Some("-D"));
        assert!(taken_back.count() > 3, "{results:?}");
    }

    #[test]
    fn a_restored_join_matches_what_the_saved_one_would() {
        check_restore(
            "SELECT a.k, a.v, b.v AS w FROM t a JOIN ( \
               SELECT k, SUM(v) AS v FROM u GROUP BY k, TUMBLE(at, INTERVAL '4' SECOND) \
             ) b ON a.k = b.k AND a.v < b.v",
        );
    }
}
