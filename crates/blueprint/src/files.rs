//! [`BlueprintFiles`]: the files a blueprint names beside itself, a SQL streamlet's query
//! (`sql-file`) and a topic's Avro schema (`schema-file`), read by the caller (verification
//! itself reads nothing), and [`inline_files`], the blueprint with their texts put in its
//! place for where it must stand alone.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::code::Code;
use crate::facts::Facts;
use crate::file::{BlueprintFile, FileEntry, Located};
use crate::report::Report;

/// The text of each file a blueprint names (`sql-file = "top-pages.sql"` in a SQL
/// streamlet, `schema-file = "bid.avsc"` in a topic; paths relative to the blueprint's
/// directory), read by the caller: verification itself reads nothing. Problems in a file's
/// query are located in that file, and
/// [`render_human_with_files`](crate::render_human_with_files) quotes it; problems in a
/// schema file are reported at its `schema-file`, naming the line and column in the file.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::BlueprintFiles;
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"queries/hot.sql\"\n";
/// let files = BlueprintFiles::read(Path::new("app/blueprint.toml"), text, |path| {
///     assert_eq!(path, Path::new("app/queries/hot.sql"));
///     Ok("SELECT * FROM readings\n".to_owned())
/// });
/// assert_eq!(files.text_of(Path::new("app/queries/hot.sql")), Some("SELECT * FROM readings\n"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlueprintFiles {
    /// The blueprint's directory, which the paths are relative to.
    directory: PathBuf,
    /// Each path as written, and its text or why it could not be read.
    files: BTreeMap<String, Result<String, String>>,
}

impl BlueprintFiles {
    /// Reads, with `read`, each file the blueprint `text` (at `blueprint`) names, given the
    /// file's path (the blueprint's directory joined with the path as written).
    pub fn read(
        blueprint: &Path,
        text: &str,
        mut read: impl FnMut(&Path) -> std::io::Result<String>,
    ) -> BlueprintFiles {
        let directory = blueprint.parent().unwrap_or(Path::new("")).to_owned();
        let mut report = Report::new(blueprint, text);
        let parsed = crate::parse::parse_file(text, &mut report);
        let files = named_files(&parsed)
            .map(|(_, file)| {
                let text =
                    read(&directory.join(&file.path.value)).map_err(|error| error.to_string());
                (file.path.value.clone(), text)
            })
            .collect();
        BlueprintFiles { directory, files }
    }

    /// Reads each file the blueprint `text` at `blueprint` names from the disk.
    pub fn beside(blueprint: &Path, text: &str) -> BlueprintFiles {
        BlueprintFiles::read(blueprint, text, |path| std::fs::read_to_string(path))
    }

    /// The text of the file at `path` (as [`read`](BlueprintFiles::read) gave it), if read.
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

    /// Puts each query file's text into its streamlet's query and each schema file's schema
    /// into its topic, and reports the files that could not be read (or hold no schema) at
    /// their key.
    pub(crate) fn fill(&self, parsed: &mut BlueprintFile, report: &mut Report<'_>) {
        for entry in parsed
            .streamlets
            .iter_mut()
            .flat_map(|streamlets| &mut streamlets.entries)
        {
            let name = &entry.name.value;
            let Some(sql) = entry.sql.as_mut() else {
                continue;
            };
            let Some(file) = &sql.file else {
                continue;
            };
            match self.text(file, "query") {
                Ok(text) => sql.query = Located::new(text.to_owned(), file.path.span.clone()),
                Err(problem) => {
                    report.at(
                        Code::InvalidSqlQuery,
                        file.path.span.clone(),
                        format!("SQL streamlet '{name}': {problem}"),
                        Facts::new().streamlet(name).key("sql-file"),
                    );
                }
            }
        }
        for topic in &mut parsed.topics {
            let Some(file) = &topic.schema_file else {
                continue;
            };
            let id = &topic.id.value;
            let what = format!(
                "the schema file {}",
                self.path_of(&file.path.value).display()
            );
            let facts = Facts::new().topic(id).key("schema-file");
            match self.text(file, "schema") {
                Ok(text) => {
                    let text = Located::new(text.to_owned(), file.path.span.clone());
                    topic.schema = crate::parse::avro_schema(&text, &what, facts, report);
                }
                Err(problem) => {
                    report.at(
                        Code::BlueprintFormatError,
                        file.path.span.clone(),
                        format!("topic '{id}': {problem}"),
                        facts,
                    );
                }
            }
        }
    }

    /// The text of `file` (a `kind` file: query, schema), or why there is none: it could not
    /// be read, or the blueprint was read without its files.
    fn text(&self, file: &FileEntry, kind: &str) -> Result<&str, String> {
        let written = &file.path.value;
        match self.files.get(written) {
            Some(Ok(text)) => Ok(text),
            Some(Err(reason)) => Err(format!(
                "cannot read its {kind} file {}: {reason}",
                self.path_of(written).display()
            )),
            None => Err(format!(
                "its {kind} file {} was not read: this blueprint was read without the files \
                 it names",
                self.path_of(written).display()
            )),
        }
    }
}

/// Every `sql-file` and `schema-file` of the blueprint, each with the key its text stands
/// under inline (`sql`, `schema`).
fn named_files(parsed: &BlueprintFile) -> impl Iterator<Item = (&'static str, &FileEntry)> + '_ {
    let queries = parsed
        .streamlets
        .iter()
        .flat_map(|streamlets| &streamlets.entries)
        .filter_map(|entry| entry.sql.as_ref()?.file.as_ref())
        .map(|file| ("sql", file));
    let schemas = parsed
        .topics
        .iter()
        .filter_map(|topic| topic.schema_file.as_ref())
        .map(|file| ("schema", file));
    queries.chain(schemas)
}

/// The blueprint `text` with each `sql-file = "..."` replaced by `sql = '''...'''` holding
/// the file's text, and each `schema-file = "..."` by `schema = '''...'''`, for a blueprint
/// that must stand alone (in an image, or in a Kubernetes ConfigMap, away from its files). A
/// file that was not read is left as it is.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{BlueprintFiles, inline_files, parse};
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"hot.sql\"\n";
/// let files = BlueprintFiles::read(Path::new("blueprint.toml"), text, |_| Ok("SELECT * FROM r WHERE c = 'x'".into()));
/// let inlined = inline_files(text, &files);
/// assert_eq!(inlined, "name = \"demo\"\n[streamlets.hot]\nsql = '''\nSELECT * FROM r WHERE c = 'x'\n'''\n");
/// let blueprint = parse(Path::new("blueprint.toml"), &inlined).blueprint.unwrap();
/// assert_eq!(blueprint.streamlets[0].sql.as_ref().unwrap().query, "SELECT * FROM r WHERE c = 'x'\n");
/// ```
pub fn inline_files(text: &str, files: &BlueprintFiles) -> String {
    let mut report = Report::new(Path::new(""), text);
    let parsed = crate::parse::parse_file(text, &mut report);
    let mut replacements: Vec<(Range<usize>, String)> = named_files(&parsed)
        .filter_map(|(key, file)| match files.files.get(&file.path.value) {
            Some(Ok(held)) => Some((file.declaration.clone(), toml_text(key, held))),
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

/// `key = ...` holding `held`: a multi-line literal string when it can hold it as it is (the
/// newline after the opening quotes is not part of it), else a basic one with escapes.
fn toml_text(key: &str, held: &str) -> String {
    let ending = if held.ends_with('\n') { "" } else { "\n" };
    let literal = !held.contains("'''")
        && held
            .chars()
            .all(|c| c == '\n' || c == '\t' || !c.is_control());
    if literal {
        return format!("{key} = '''\n{held}{ending}'''");
    }
    let mut escaped = String::with_capacity(held.len());
    for c in held.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' | '\t' => escaped.push(c),
            c if c.is_control() => escaped.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => escaped.push(c),
        }
    }
    format!("{key} = \"\"\"\n{escaped}{ending}\"\"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inlined_query_reads_back_as_it_was_whatever_it_holds() {
        let text = "name = \"app\"\n[streamlets.q]\nsql-file = \"q.sql\"\nrecord-name = \"R\"\n";
        for query in [
            "SELECT a FROM t WHERE b = 'x'",
            "SELECT a FROM t\n-- a comment with ''' in it\nWHERE b = \"c\\d\"\n",
            "SELECT a FROM t WHERE b = '\u{7}'",
        ] {
            let files =
                BlueprintFiles::read(Path::new("blueprint.toml"), text, |_| Ok(query.into()));
            let inlined = inline_files(text, &files);
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

    #[test]
    fn an_inlined_schema_reads_back_as_it_was() {
        let text = "name = \"app\"\n[streamlets]\nr = \"reader\"\n[topics.bids]\nschema-file = \"bid.avsc\"\nconsumers = [\"r.in\"]\n";
        let schema = "{\"type\": \"record\", \"name\": \"Bid\",\n \"fields\": [{\"name\": \"price\", \"type\": \"long\"}]}\n";
        let files = BlueprintFiles::read(Path::new("blueprint.toml"), text, |path| {
            assert_eq!(path, Path::new("bid.avsc"));
            Ok(schema.into())
        });
        let inlined = inline_files(text, &files);
        assert_eq!(
            inlined,
            format!(
                "name = \"app\"\n[streamlets]\nr = \"reader\"\n[topics.bids]\nschema = '''\n{schema}'''\nconsumers = [\"r.in\"]\n"
            )
        );
        let parsed = crate::parse(Path::new("blueprint.toml"), &inlined);
        let blueprint = parsed
            .blueprint
            .unwrap_or_else(|| panic!("{:?}", parsed.diagnostics));
        let expected: serde_json::Value = serde_json::from_str(schema).unwrap();
        assert_eq!(blueprint.topics[0].schema.as_ref(), Some(&expected));
    }
}
