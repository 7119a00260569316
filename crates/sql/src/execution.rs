//! [`Execution`]: a query run over records handed to it, without a streamlet around it: what
//! an ad hoc query over topics (`APP sql`) runs.

use crate::flow::Flow;
use crate::{Error, Processed, Query, RowKind, Table};

/// A query running over the records given to it, table by table, in the order they come:
/// the results of a stateless query come per record, those of windows as watermarks
/// (following the records' event times) pass their ends and at [`finish`](Self::finish),
/// those of joins as matches are found.
///
/// ```
/// use runnel_sql::{Column, ColumnType, Execution, Query, Table};
/// let clicks = Table::new("clicks", vec![
///     Column::new("user", ColumnType::String),
///     Column::new("at", ColumnType::Long),
/// ]);
/// let query = Query::plan(
///     "SELECT user, COUNT(*) AS clicks FROM clicks GROUP BY user, TUMBLE(at, INTERVAL '1' MINUTE)",
///     &[clicks],
///     "Clicks",
/// ).unwrap();
/// let mut execution = Execution::new(&query);
/// // ("a", 1000) and ("a", 2000), Avro encoded: a string, then a zigzag long.
/// let rejected = execution.add("clicks", None, &[&[2, b'a', 208, 15], &[2, b'a', 160, 31]], &[0, 0]);
/// assert!(rejected.is_empty());
/// assert!(execution.take_results().is_empty()); // the minute has not passed
/// execution.finish();
/// assert_eq!(execution.take_results(), [vec![2, b'a', 4]]); // ("a", 2)
/// ```
#[derive(Debug)]
pub struct Execution<'q> {
    query: &'q Query,
    /// The operators of a stateful query.
    flow: Option<Flow<'q>>,
    /// Results of a stateless query not taken yet.
    results: Vec<Vec<u8>>,
}

impl<'q> Execution<'q> {
    /// The query, with empty state; windows follow the default watermarks (5 s out of
    /// order).
    pub fn new(query: &'q Query) -> Execution<'q> {
        let flow = query.is_stateful().then(|| {
            let mut flow = Flow::new(query, runnel_streamlet::watermark::Watermarks::default());
            for input in 0..query.inputs().len() {
                flow.add_partition(input, 0, 0);
            }
            flow
        });
        Execution {
            query,
            flow,
            results: Vec::new(),
        }
    }

    /// Runs `records` of the input `table` (written with `writer`'s schema, or the
    /// table's), each from the partition at its index in `partitions` (watermarks are
    /// kept per partition). Returns the records that could not be read or computed, by
    /// index, with why.
    ///
    /// # Panics
    ///
    /// If the query does not read `table`, or `partitions` is shorter than `records`.
    pub fn add(
        &mut self,
        table: &str,
        writer: Option<&Table>,
        records: &[&[u8]],
        partitions: &[u32],
    ) -> Vec<(usize, Error)> {
        let processed = match &mut self.flow {
            Some(flow) => {
                let input = self.query.input_index(table);
                for partition in partitions {
                    flow.add_partition(input, *partition, 0);
                }
                flow.add(
                    input,
                    writer,
                    records,
                    &partitions[..records.len()],
                    0,
                    false,
                )
            }
            None => {
                let processed: Processed = self.query.process_written(table, writer, records);
                self.results
                    .extend(processed.results.into_iter().map(|(_, bytes)| bytes));
                Processed {
                    results: Vec::new(),
                    rejected: processed.rejected,
                }
            }
        };
        processed.rejected
    }

    /// Ends the input: every window fires.
    pub fn finish(&mut self) {
        if let Some(flow) = &mut self.flow {
            flow.advance(0, None, true);
        }
    }

    /// The results so far, Avro encoded with the query's
    /// [`output_schema`](Query::output_schema), taken. For a query whose results update
    /// ([`Query::is_updating`]) each says how: use [`take_changes`](Execution::take_changes).
    pub fn take_results(&mut self) -> Vec<Vec<u8>> {
        self.take_changes()
            .into_iter()
            .map(|(_, bytes)| bytes)
            .collect()
    }

    /// The results so far, each with how it changes the result table (always
    /// [`RowKind::Insert`] unless the query [updates](Query::is_updating)), taken.
    pub fn take_changes(&mut self) -> Vec<(RowKind, Vec<u8>)> {
        match &mut self.flow {
            Some(flow) => flow
                .take_results()
                .into_iter()
                .map(|produced| (produced.kind.unwrap_or(RowKind::Insert), produced.bytes))
                .collect(),
            None => std::mem::take(&mut self.results)
                .into_iter()
                .map(|bytes| (RowKind::Insert, bytes))
                .collect(),
        }
    }
}
