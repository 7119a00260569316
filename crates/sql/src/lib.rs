//! SQL for Runnel: queries over topics' records, parsed and planned by
//! [Apache DataFusion](https://datafusion.apache.org), run on Arrow batches decoded straight
//! from Avro.
//!
//! A [`Table`] is an input: a name (the table in `FROM`) and the columns of its records, from
//! its topic's Avro schema ([`Table::from_avro`]). [`Query::plan`] parses and plans a query
//! over tables, infers the Avro schema of its results ([`Query::output_schema`]) and reports
//! every problem at its line and column ([`Error::position`]).
//! [`Query::process`] then runs it over a batch of Avro records: [`BatchDecoder`] reads them
//! into an Arrow batch, DataFusion's physical expressions filter and compute, and the
//! results are written back as Avro, each with the index of the record it came from, so
//! the caller can commit and trace each input.
//!
//! ```
//! use runnel_sql::{Column, ColumnType, Query, Table};
//! let readings = Table::new("readings", vec![
//!     Column::new("sensor", ColumnType::String),
//!     Column::new("celsius", ColumnType::Double),
//! ]);
//! let query = Query::plan(
//!     "SELECT upper(sensor) AS sensor, celsius * 9 / 5 + 32 AS fahrenheit FROM readings \
//!      WHERE celsius > 30",
//!     &[readings],
//!     "Hot",
//! ).unwrap();
//! assert_eq!(query.output_schema()["fields"][1]["type"], "double");
//! ```
//!
//! What runs: SELECT with projections, WHERE, scalar functions (DataFusion's and the app's,
//! [`Functions`]), CASE and casts; `GROUP BY` an event-time window (Flink's `TUMBLE`, `HOP`,
//! `SESSION`) with `COUNT`, `COUNT(DISTINCT)`, `SUM`, `MIN`, `MAX`, `AVG` and `HAVING`,
//! early results (`EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK`), and a window's results
//! grouped by its bounds; inner equi-joins, whose state a bound on their
//! time columns expires; and `GROUP BY` without a window, whose results update
//! ([`Query::is_updating`], [`RowKind`]). Queries with state ([`Query::is_stateful`]) run
//! in [`SqlStreamlet`] on Runnel's window engine with watermarks and checkpointed state.
//! What does not run (outer joins without a time bound, joins of updating rows, ...) is
//! refused, named, at planning. Guide: `docs/sql.md`.

mod accumulators;
mod decode;
mod dialect;
mod emit;
mod encode;
mod error;
mod execution;
mod flow;
mod functions;
mod group_window;
mod grouping;
mod join;
mod json;
mod postcard_rows;
mod query;
mod resolve;
mod row_kind;
mod rows;
mod streamlet;
mod table;
mod tracked;
mod tree;
mod udaf;
mod updating;
mod value;

pub use decode::BatchDecoder;
pub use error::{Error, Position};
pub use execution::Execution;
pub use functions::Functions;
pub use group_window::{WINDOW_END, WINDOW_START};
pub use query::{Processed, Query};
pub use row_kind::RowKind;
pub use streamlet::{OUTLET, SqlStreamlet};
pub use table::{Column, ColumnType, Table, record_name};

/// The DataFusion crates this one builds on, for apps writing their own functions.
pub mod datafusion {
    pub use datafusion_common as common;
    pub use datafusion_common::arrow;
    pub use datafusion_expr as expr;
}
