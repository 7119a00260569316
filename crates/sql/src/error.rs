//! [`Error`]: what can go wrong planning a query or running it.

use std::fmt;

/// Where in a query's text something is: 1-based line and column, as editors count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1, in characters.
    pub column: u64,
}

impl Position {
    /// The byte offset of this line and column in `text` (its end, past the last line).
    pub(crate) fn offset_in(self, text: &str) -> usize {
        let mut offset = 0;
        for (index, content) in text.split_inclusive('\n').enumerate() {
            if index as u64 + 1 == self.line {
                let column = self.column.saturating_sub(1) as usize;
                return offset
                    + content
                        .char_indices()
                        .nth(column)
                        .map_or(content.len(), |(at, _)| at);
            }
            offset += content.len();
        }
        text.len()
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A query that cannot run, or a record it cannot read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not SQL.
    #[error("{message}")]
    Syntax {
        /// What the parser expected.
        message: String,
        /// Where it stopped.
        position: Option<Position>,
    },
    /// Valid SQL that does not fit the inputs: an unknown table or column (with the closest
    /// name), or a type error naming the column.
    #[error("{message}")]
    Plan {
        /// What does not fit.
        message: String,
        /// Where, when the planner knows.
        position: Option<Position>,
    },
    /// A construct SQL streamlets do not run yet, named.
    #[error("{message}")]
    Unsupported {
        /// The construct, and what to write instead where there is an alternative.
        message: String,
        /// Where, when known.
        position: Option<Position>,
    },
    /// An input's schema has a field SQL cannot read.
    #[error("table '{table}': {message}")]
    Schema {
        /// The table (inlet) whose schema it is.
        table: String,
        /// The field and its type.
        message: String,
    },
    /// A record that is not a value of its table's schema.
    #[error("invalid avro for table '{table}': {message}")]
    Decode {
        /// The table the record was read for.
        table: String,
        /// What was wrong.
        message: String,
    },
    /// Evaluating the query failed on a record (a cast that does not fit, a division by
    /// zero).
    #[error("evaluating the query failed: {0}")]
    Evaluate(String),
}

impl Error {
    /// Where in the query's text the problem is, when known.
    ///
    /// ```
    /// use runnel_sql::{Column, ColumnType, Query, Table};
    /// let bids = Table::new("bids", vec![Column::new("price", ColumnType::Long)]);
    /// let error = Query::plan("SELECT pricee FROM bids", &[bids], "Out").unwrap_err();
    /// assert_eq!(error.position().unwrap().to_string(), "1:8");
    /// ```
    pub fn position(&self) -> Option<Position> {
        match self {
            Error::Syntax { position, .. }
            | Error::Plan { position, .. }
            | Error::Unsupported { position, .. } => *position,
            _ => None,
        }
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Error {
        Error::Unsupported {
            message: message.into(),
            position: None,
        }
    }

    /// The error for SQL that does not parse, at the place sqlparser names ("at Line: 1,
    /// Column: 8"), or just past the end of `sql` when it ended too early.
    pub(crate) fn from_parser(message: &str, sql: &str) -> Error {
        let message = message
            .strip_prefix("sql parser error: ")
            .unwrap_or(message);
        let (text, position) = match message.rfind(" at Line: ") {
            Some(at) => {
                let place = &message[at + " at Line: ".len()..];
                let mut numbers = place
                    .split(|c: char| !c.is_ascii_digit())
                    .filter(|part| !part.is_empty())
                    .map(|part| part.parse::<u64>().ok());
                let position = match (numbers.next().flatten(), numbers.next().flatten()) {
                    (Some(line), Some(column)) => Some(Position { line, column }),
                    _ => None,
                };
                (message[..at].to_owned(), position)
            }
            // The query ended too early: the place is just past its end.
            None if message.ends_with("found: EOF") => {
                let text = sql.trim_end();
                let line = text.lines().count().max(1) as u64;
                let column = text.lines().last().map_or(0, |last| last.chars().count()) as u64 + 1;
                (message.to_owned(), Some(Position { line, column }))
            }
            None => (message.to_owned(), None),
        };
        Error::Syntax {
            message: lowercase_first(&text),
            position,
        }
    }

    /// The error for what DataFusion reported while planning: its diagnostic's message and
    /// place where it has one, else its own message without DataFusion's prefixes.
    pub(crate) fn from_planner(error: datafusion_common::DataFusionError) -> Error {
        use datafusion_common::DataFusionError;
        let position = error.diagnostic().and_then(|diagnostic| {
            diagnostic.span.map(|span| Position {
                line: span.start.line,
                column: span.start.column,
            })
        });
        let root = error.find_root();
        let message = match root {
            DataFusionError::SQL(parser, _) => {
                return Error::Syntax {
                    message: strip_prefix(&parser.to_string()),
                    position,
                };
            }
            DataFusionError::NotImplemented(message) => {
                return Error::Unsupported {
                    message: lowercase_first(message),
                    position,
                };
            }
            DataFusionError::SchemaError(schema, _) => schema.to_string(),
            DataFusionError::Plan(message) => message.clone(),
            other => other.to_string(),
        };
        Error::Plan {
            message: lowercase_first(&strip_prefix(&message)),
            position,
        }
    }
}

/// A message without the "sql parser error: " kind of prefix DataFusion adds.
fn strip_prefix(message: &str) -> String {
    for prefix in [
        "sql parser error: ",
        "SQL error: ",
        "Error during planning: ",
    ] {
        if let Some(rest) = message.strip_prefix(prefix) {
            return rest.to_owned();
        }
    }
    message.to_owned()
}

/// Error messages are lowercase, as the rest of Runnel's.
fn lowercase_first(message: &str) -> String {
    let mut characters = message.chars();
    match characters.next() {
        Some(first) if characters.clone().next().is_some_and(char::is_lowercase) => {
            first.to_lowercase().chain(characters).collect()
        }
        _ => message.to_owned(),
    }
}
