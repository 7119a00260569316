//! How `APP sql` prints its results, as a table or JSON lines: the changes of a query whose
//! results update either each with its kind, or folded into the rows they leave.

use std::collections::HashMap;
use std::io::Write;

use runnel_sql::{Query, RowKind};
use serde_json::Value;

use crate::cli::ResultFormat;
use crate::error::AppError;

/// Prints result rows: JSON lines, or a table (aligned at the end of a bounded query; when
/// following, each row as it comes, aligned to the header). A bounded query whose results
/// update prints the rows its changes leave, unless asked for the changes themselves.
pub(super) struct Printer {
    format: ResultFormat,
    /// Rows print as they come, a table's each aligned to its header.
    follow: bool,
    /// Where the changes of a query whose results update are folded, to print the rows they
    /// leave at the end; `None` prints the rows as they come.
    final_rows: Option<FinalRows>,
    /// Whether each row carries its kind in a first column, `op`.
    with_kind: bool,
    /// The column names.
    header: Vec<String>,
    /// Whether a followed table's header is out.
    header_written: bool,
    /// The rows of a bounded table, printed aligned at the end.
    rows: Vec<Vec<String>>,
}

impl Printer {
    /// A printer of `query`'s results: a followed query, or one asked for its `changelog`,
    /// prints the changes of results that update; a bounded one the rows they leave.
    pub(super) fn new(query: &Query, format: ResultFormat, follow: bool, changelog: bool) -> Self {
        let updating = query.is_updating();
        let fold = updating && !follow && !changelog;
        let with_kind = updating && !fold;
        let header = with_kind
            .then(|| "op".to_owned())
            .into_iter()
            .chain(query.output_columns().into_iter().map(str::to_owned))
            .collect();
        Printer {
            format,
            follow,
            final_rows: fold.then(FinalRows::default),
            with_kind,
            header,
            header_written: false,
            rows: Vec::new(),
        }
    }

    /// Prints (or, for a bounded table or folded changes, keeps) the results `changes` of
    /// `query`.
    pub(super) fn print(
        &mut self,
        query: &Query,
        changes: Vec<(RowKind, Vec<u8>)>,
        out: &mut dyn Write,
    ) -> Result<(), AppError> {
        if self.follow && self.format == ResultFormat::Table && !self.header_written {
            self.write_table(&[], out)?;
            self.header_written = true;
        }
        let (kinds, results): (Vec<_>, Vec<_>) = changes.into_iter().unzip();
        let rows = query
            .json_rows(&results)
            .map_err(|error| AppError::Query(error.to_string()))?;
        for (kind, mut row) in kinds.into_iter().zip(rows) {
            if let Some(final_rows) = &mut self.final_rows {
                final_rows.apply(kind, row);
                continue;
            }
            if self.with_kind {
                row.insert(0, Value::from(kind.as_str()));
            }
            self.emit(row, out)?;
        }
        out.flush().map_err(output_error)
    }

    /// Prints what is kept: the folded rows, and a bounded table with its row count.
    pub(super) fn finish(&mut self, out: &mut dyn Write) -> Result<(), AppError> {
        if let Some(final_rows) = self.final_rows.take() {
            for row in final_rows.into_rows() {
                self.emit(row, out)?;
            }
        }
        if self.format == ResultFormat::Table && !self.follow {
            let rows = std::mem::take(&mut self.rows);
            self.write_table(&rows, out)?;
            let count = rows.len();
            writeln!(out, "({count} row{})", if count == 1 { "" } else { "s" })
                .map_err(output_error)?;
        }
        out.flush().map_err(output_error)
    }

    /// Prints `row`, or keeps it for a bounded table.
    fn emit(&mut self, row: Vec<Value>, out: &mut dyn Write) -> Result<(), AppError> {
        match self.format {
            ResultFormat::Json => {
                // Members in the order of the columns.
                let members: Vec<String> = self
                    .header
                    .iter()
                    .zip(&row)
                    .map(|(name, value)| format!("{}:{value}", Value::from(name.as_str())))
                    .collect();
                writeln!(out, "{{{}}}", members.join(",")).map_err(output_error)
            }
            ResultFormat::Table => {
                let cells: Vec<String> = row
                    .into_iter()
                    .map(|value| match value {
                        Value::String(text) => text,
                        other => other.to_string(),
                    })
                    .collect();
                if self.follow {
                    let line = self.line(&cells, &self.widths(&[]));
                    writeln!(out, "{line}").map_err(output_error)
                } else {
                    self.rows.push(cells);
                    Ok(())
                }
            }
        }
    }

    /// The header, a rule, and `rows`, aligned.
    fn write_table(&self, rows: &[Vec<String>], out: &mut dyn Write) -> Result<(), AppError> {
        let widths = self.widths(rows);
        let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
        for line in std::iter::once(&self.header)
            .chain(std::iter::once(&rule))
            .chain(rows)
        {
            writeln!(out, "{}", self.line(line, &widths)).map_err(output_error)?;
        }
        Ok(())
    }

    /// Each column's width: its name's, or its widest cell's among `rows`.
    fn widths(&self, rows: &[Vec<String>]) -> Vec<usize> {
        self.header
            .iter()
            .enumerate()
            .map(|(column, name)| {
                rows.iter()
                    .filter_map(|row| row.get(column))
                    .map(|cell| cell.chars().count())
                    .chain([name.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_owned()
    }
}

/// The rows a query's changes leave, in the order their groups first came: a row taken back
/// (`-U`, `-D`) leaves its place, and the row that replaces it (`+U`) takes that place.
#[derive(Default)]
struct FinalRows {
    rows: Vec<Option<Vec<Value>>>,
    /// Where the rows are, by their JSON text; equal rows each have a place.
    places: HashMap<String, Vec<usize>>,
    /// The place the last row taken back left, for the row that replaces it.
    vacated: Option<usize>,
}

impl FinalRows {
    fn apply(&mut self, kind: RowKind, row: Vec<Value>) {
        let text = Value::from(row.clone()).to_string();
        let vacated = self.vacated.take();
        if kind.is_retraction() {
            let place = self.places.get_mut(&text).and_then(Vec::pop);
            if self.places.get(&text).is_some_and(Vec::is_empty) {
                self.places.remove(&text);
            }
            match place {
                Some(place) => {
                    self.rows[place] = None;
                    self.vacated = Some(place);
                }
                None => tracing::warn!("the query took back a result it never gave: {text}"),
            }
            return;
        }
        let place = match vacated {
            Some(place) if kind == RowKind::UpdateAfter => {
                self.rows[place] = Some(row);
                place
            }
            _ => {
                self.rows.push(Some(row));
                self.rows.len() - 1
            }
        };
        self.places.entry(text).or_default().push(place);
    }

    fn into_rows(self) -> impl Iterator<Item = Vec<Value>> {
        self.rows.into_iter().flatten()
    }
}

fn output_error(source: std::io::Error) -> AppError {
    AppError::Write {
        path: "standard output".into(),
        source,
    }
}
