//! SQL streamlets: instances declared by a query in the blueprint rather than registered in
//! the app. The app plans each query (with `runnel-sql`) against the schemas of the topics
//! it reads, describes the streamlet as the type [`sql_type_name`], and hands verification
//! the [`QueryProblem`]s it found, which are reported at their place in the query: in the
//! blueprint, or in the query's own file (`sql-file`), which the caller reads into
//! [`SqlFiles`].

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::code::Code;
use crate::facts::Facts;
use crate::file::{BlueprintFile, Located, SqlEntry};
use crate::report::Report;

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

/// The text of each query file a blueprint names (`sql-file = "top-pages.sql"`, a path
/// relative to the blueprint's directory), read by the caller: verification itself reads
/// nothing. Problems in a file's query are located in that file, and
/// [`render_human_with_files`](crate::render_human_with_files) quotes it.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::SqlFiles;
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"queries/hot.sql\"\n";
/// let files = SqlFiles::read(Path::new("app/blueprint.toml"), text, |path| {
///     assert_eq!(path, Path::new("app/queries/hot.sql"));
///     Ok("SELECT * FROM readings\n".to_owned())
/// });
/// assert_eq!(files.text_of(Path::new("app/queries/hot.sql")), Some("SELECT * FROM readings\n"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqlFiles {
    /// The blueprint's directory, which the paths are relative to.
    directory: PathBuf,
    /// Each path as written, and its text or why it could not be read.
    files: BTreeMap<String, Result<String, String>>,
}

impl SqlFiles {
    /// Reads, with `read`, each query file the blueprint `text` (at `blueprint`) names,
    /// given the file's path (the blueprint's directory joined with the path as written).
    pub fn read(
        blueprint: &Path,
        text: &str,
        mut read: impl FnMut(&Path) -> std::io::Result<String>,
    ) -> SqlFiles {
        let directory = blueprint.parent().unwrap_or(Path::new("")).to_owned();
        let mut report = Report::new(blueprint, text);
        let parsed = crate::parse::parse_file(text, &mut report);
        let files = sql_entries(&parsed)
            .filter_map(|(_, sql)| sql.file.as_ref())
            .map(|file| {
                let text =
                    read(&directory.join(&file.path.value)).map_err(|error| error.to_string());
                (file.path.value.clone(), text)
            })
            .collect();
        SqlFiles { directory, files }
    }

    /// Reads each query file the blueprint `text` at `blueprint` names from the disk.
    pub fn beside(blueprint: &Path, text: &str) -> SqlFiles {
        SqlFiles::read(blueprint, text, |path| std::fs::read_to_string(path))
    }

    /// The text of the query file at `path` (as [`read`](SqlFiles::read) gave it), if read.
    pub fn text_of(&self, path: &Path) -> Option<&str> {
        self.files
            .iter()
            .find(|(written, _)| self.directory.join(written) == path)
            .and_then(|(_, read)| read.as_deref().ok())
    }

    /// The path of the file written `written` in the blueprint.
    pub(crate) fn path_of(&self, written: &str) -> PathBuf {
        self.directory.join(written)
    }

    /// Puts each file's text into its streamlet's query, and reports the files that could
    /// not be read at their `sql-file`.
    pub(crate) fn fill(&self, parsed: &mut BlueprintFile, report: &mut Report<'_>) {
        let Some(streamlets) = parsed.streamlets.as_mut() else {
            return;
        };
        for entry in &mut streamlets.entries {
            let name = &entry.name.value;
            let Some(sql) = entry.sql.as_mut() else {
                continue;
            };
            let Some(file) = &sql.file else {
                continue;
            };
            let written = &file.path.value;
            let problem = match self.files.get(written) {
                Some(Ok(text)) => {
                    sql.query = Located::new(text.clone(), file.path.span.clone());
                    continue;
                }
                Some(Err(reason)) => format!(
                    "cannot read its query file {}: {reason}",
                    self.path_of(written).display()
                ),
                None => format!(
                    "its query file {} was not read: this blueprint was read without the files \
                     it names",
                    self.path_of(written).display()
                ),
            };
            report.at(
                Code::InvalidSqlQuery,
                file.path.span.clone(),
                format!("SQL streamlet '{name}': {problem}"),
                Facts::new().streamlet(name).key("sql-file"),
            );
        }
    }
}

/// Each SQL streamlet's name and declaration, in file order.
fn sql_entries(parsed: &BlueprintFile) -> impl Iterator<Item = (&str, &SqlEntry)> + '_ {
    parsed
        .streamlets
        .iter()
        .flat_map(|streamlets| &streamlets.entries)
        .filter_map(|entry| Some((entry.name.value.as_str(), entry.sql.as_ref()?)))
}

/// The blueprint `text` with each `sql-file = "..."` replaced by `sql = '''...'''` holding
/// the file's text, for a blueprint that must stand alone (in an image, or in a Kubernetes
/// ConfigMap, away from its files). A file that was not read is left as it is.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{SqlFiles, inline_sql_files, parse};
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"hot.sql\"\n";
/// let files = SqlFiles::read(Path::new("blueprint.toml"), text, |_| Ok("SELECT * FROM r WHERE c = 'x'".into()));
/// let inlined = inline_sql_files(text, &files);
/// assert_eq!(inlined, "name = \"demo\"\n[streamlets.hot]\nsql = '''\nSELECT * FROM r WHERE c = 'x'\n'''\n");
/// let blueprint = parse(Path::new("blueprint.toml"), &inlined).blueprint.unwrap();
/// assert_eq!(blueprint.streamlets[0].sql.as_ref().unwrap().query, "SELECT * FROM r WHERE c = 'x'\n");
/// ```
pub fn inline_sql_files(text: &str, files: &SqlFiles) -> String {
    let mut report = Report::new(Path::new(""), text);
    let parsed = crate::parse::parse_file(text, &mut report);
    let mut replacements: Vec<(Range<usize>, String)> = sql_entries(&parsed)
        .filter_map(|(_, sql)| sql.file.as_ref())
        .filter_map(|file| match files.files.get(&file.path.value) {
            Some(Ok(query)) => Some((file.declaration.clone(), toml_query(query))),
            _ => None,
        })
        .collect();
    replacements.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut inlined = text.to_owned();
    for (span, replacement) in replacements {
        inlined.replace_range(span, &replacement);
    }
    inlined
}

/// `sql = ...` holding `query`: a multi-line literal string when it can hold it as it is
/// (the newline after the opening quotes is not part of it), else a basic one with escapes.
fn toml_query(query: &str) -> String {
    let ending = if query.ends_with('\n') { "" } else { "\n" };
    let literal = !query.contains("'''")
        && query
            .chars()
            .all(|c| c == '\n' || c == '\t' || !c.is_control());
    if literal {
        return format!("sql = '''\n{query}{ending}'''");
    }
    let mut escaped = String::with_capacity(query.len());
    for c in query.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' | '\t' => escaped.push(c),
            c if c.is_control() => escaped.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => escaped.push(c),
        }
    }
    format!("sql = \"\"\"\n{escaped}{ending}\"\"\"")
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

    #[test]
    fn an_inlined_query_reads_back_as_it_was_whatever_it_holds() {
        let text = "name = \"app\"\n[streamlets.q]\nsql-file = \"q.sql\"\nrecord-name = \"R\"\n";
        for query in [
            "SELECT a FROM t WHERE b = 'x'",
            "SELECT a FROM t\n-- a comment with ''' in it\nWHERE b = \"c\\d\"\n",
            "SELECT a FROM t WHERE b = '\u{7}'",
        ] {
            let files = SqlFiles::read(Path::new("blueprint.toml"), text, |_| Ok(query.into()));
            let inlined = inline_sql_files(text, &files);
            assert!(!inlined.contains("sql-file"), "{inlined}");
            let blueprint = crate::parse(Path::new("blueprint.toml"), &inlined)
                .blueprint
                .unwrap_or_else(|| panic!("{inlined}"));
            let sql = blueprint.streamlets[0].sql.as_ref().unwrap();
            assert_eq!(
                sql.query.trim_end_matches('\n'),
                query.trim_end_matches('\n')
            );
            assert_eq!(sql.record_name.as_deref(), Some("R"));
        }
    }
}
