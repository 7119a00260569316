//! SQL streamlets: instances declared by a query in the blueprint rather than registered in
//! the app. The app plans each query (with `runnel-sql`) against the schemas of the topics
//! it reads, describes the streamlet as the type [`sql_type_name`], and hands verification
//! the [`QueryProblem`]s it found, which are reported at their place in the query: in the
//! blueprint, or in the query's own file (`sql-file`), which the caller reads into
//! [`BlueprintFiles`](crate::BlueprintFiles).

use std::ops::Range;

/// The type name an app registers a SQL streamlet instance under: `sql:<instance>`.
///
/// ```
/// assert_eq!(runnel_blueprint::sql_type_name("top-pages"), "sql:top-pages");
/// ```
pub fn sql_type_name(instance: &str) -> String {
    format!("sql:{instance}")
}

/// What the app found wrong with a streamlet the blueprint declares itself. For a SQL
/// streamlet, what planning its query found: verification reports it as `InvalidSqlQuery`
/// at the query's line and column in the blueprint. For a Python streamlet, what describing
/// it found (the module does not import, the interpreter does not run): reported as
/// `InvalidPythonStreamlet` at its `python` reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryProblem {
    /// The SQL or Python streamlet instance.
    pub instance: String,
    /// What is wrong.
    pub message: String,
    /// Where in the query (1-based line and column), when known; `None` for a Python
    /// streamlet.
    pub position: Option<(u64, u64)>,
}

/// The byte offset of `line` and `column` (1-based, the column in characters) in `text`;
/// the end of the text past its last line.
pub(crate) fn offset_of(text: &str, line: u64, column: u64) -> usize {
    let mut offset = 0;
    for (index, text_line) in text.split_inclusive('\n').enumerate() {
        if index as u64 + 1 == line {
            let column = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
            let within: usize = text_line
                .trim_end_matches('\n')
                .chars()
                .take(column)
                .map(char::len_utf8)
                .sum();
            return offset + within;
        }
        offset += text_line.len();
    }
    text.len()
}

/// The byte offset in the blueprint of `line` and `column` (1-based) of the query held by
/// the TOML string at `span`: past the opening quotes, and past the newline that TOML
/// drops right after `"""` or `'''`. Escapes in a basic string are counted as written, so
/// a place after one on the same line is off by the escape's length.
pub(crate) fn query_offset(text: &str, span: &Range<usize>, line: u64, column: u64) -> usize {
    let Some(written) = text.get(span.clone()) else {
        return span.start;
    };
    let mut start = span.start;
    let content = if let Some(rest) = written
        .strip_prefix("\"\"\"")
        .or_else(|| written.strip_prefix("'''"))
    {
        start += 3;
        if let Some(after) = rest.strip_prefix("\r\n") {
            start += 2;
            after
        } else if let Some(after) = rest.strip_prefix('\n') {
            start += 1;
            after
        } else {
            rest
        }
    } else if let Some(rest) = written.strip_prefix(['"', '\'']) {
        start += 1;
        rest
    } else {
        written
    };
    let lines = content.split_inclusive('\n').count() as u64;
    if line == 0 || line > lines {
        return start;
    }
    (start + offset_of(content, line, column)).min(span.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_in_a_multi_line_query_map_to_the_file() {
        let text = "[streamlets.q]\nsql = \"\"\"\nSELECT a,\n  b FROM t\n\"\"\"\n";
        let start = text.find("\"\"\"").unwrap();
        let span = start..text.rfind("\"\"\"").unwrap() + 3;
        let offset = query_offset(text, &span, 2, 3);
        assert_eq!(&text[offset..offset + 1], "b");
        let inline = "q = { sql = \"SELECT x FROM t\" }";
        let start = inline.find('"').unwrap();
        let span = start..inline.rfind('"').unwrap() + 1;
        let offset = query_offset(inline, &span, 1, 8);
        assert_eq!(&inline[offset..offset + 1], "x");
    }
}
