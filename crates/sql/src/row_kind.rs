//! [`RowKind`]: how a result row of a query whose results update changes its result table.

use serde::{Deserialize, Serialize};

/// How a result row changes the query's result table, as Flink's `RowKind`: a query with
/// an aggregate without a window (`GROUP BY category` over every row so far) updates its
/// results as rows come, so each result record says whether it adds a row, takes one back
/// or replaces one. Such records carry the kind in the header [`RowKind::HEADER`].
///
/// ```
/// use runnel_sql::RowKind;
/// assert_eq!(RowKind::UpdateBefore.as_str(), "-U");
/// assert_eq!(RowKind::parse("+U"), Some(RowKind::UpdateAfter));
/// assert!(RowKind::Delete.is_retraction());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RowKind {
    /// A new row.
    Insert,
    /// The row an update replaces, taken back; the next change of its key is the new row.
    UpdateBefore,
    /// The row that replaces the one taken back before it.
    UpdateAfter,
    /// A row taken back for good.
    Delete,
}

impl RowKind {
    /// The header that carries a result record's kind, in the short form
    /// ([`as_str`](RowKind::as_str)).
    pub const HEADER: &'static str = "runnel.row.kind";

    /// Flink's short form: `+I`, `-U`, `+U`, `-D`.
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// The kind written in the short form, if it is one.
    pub fn parse(short: &str) -> Option<RowKind> {
        [
            RowKind::Insert,
            RowKind::UpdateBefore,
            RowKind::UpdateAfter,
            RowKind::Delete,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == short)
    }

    /// Whether the row is taken back: its values are to be subtracted from the table.
    pub fn is_retraction(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }
}
