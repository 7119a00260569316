//! `BlueprintFile`: what the user wrote in `blueprint.toml`, with the byte span of every key
//! and value, before any check against the descriptor.
//!
//! [`parse`](crate::parse::parse_file) builds it from the text; the rules read it and the
//! checked [`Blueprint`](crate::Blueprint) is built from it. [`in_file_order`] lists a TOML
//! table's entries in the order they were written, which is the order of these lists.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A value and the byte span of the text it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Located<T> {
    pub(crate) value: T,
    pub(crate) span: Range<usize>,
}

impl<T> Located<T> {
    pub(crate) fn new(value: T, span: Range<usize>) -> Self {
        Located { value, span }
    }
}

/// The whole file, as far as it parsed.
#[derive(Clone, Debug, Default)]
pub(crate) struct BlueprintFile {
    /// The app name (`name = "..."`).
    pub(crate) name: Option<Located<String>>,
    /// The `[streamlets]` table; `None` when the file has none.
    pub(crate) streamlets: Option<StreamletsSection>,
    /// The `[topics.<id>]` tables, in file order.
    pub(crate) topics: Vec<TopicFile>,
    /// A Cloudflow 1.x `[connections]` table (not supported; reported with a migration hint).
    pub(crate) connections: Option<ConnectionsSection>,
    /// Whether the TOML itself had errors: what parsed may then miss parts of the file, so
    /// rules about missing things stay quiet.
    pub(crate) had_syntax_errors: bool,
}

/// The `[streamlets]` table.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamletsSection {
    /// The span of the `streamlets` key (in the header for a `[streamlets]` table).
    pub(crate) span: Range<usize>,
    /// The instances, in file order, without the duplicates the parser rejected.
    pub(crate) entries: Vec<StreamletEntry>,
    /// Whether `streamlets` had the wrong type (then `entries` is empty but not "empty").
    pub(crate) malformed: bool,
    /// Instance names declared with a value that is not a type string (a number, a table
    /// from a dotted key, or nothing after a syntax error); already reported.
    pub(crate) unusable: Vec<Located<String>>,
}

/// A Cloudflow 1.x `[connections]` table: `"outlet.path" = ["inlet.path", ...]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnectionsSection {
    /// The span of the `connections` key.
    pub(crate) span: Range<usize>,
    /// Each outlet path and the inlet paths it was connected to, as far as they read.
    pub(crate) entries: Vec<(Located<String>, Vec<Located<String>>)>,
}

/// `instance = "type"`, or `[streamlets.instance]` with `sql = "..."` or `python = "..."`.
#[derive(Clone, Debug)]
pub(crate) struct StreamletEntry {
    /// The instance name (the key).
    pub(crate) name: Located<String>,
    /// The streamlet type reference (the value); for a SQL streamlet, `sql:<instance>`
    /// located at its query.
    pub(crate) type_ref: Located<String>,
    /// A SQL streamlet's query and the name of its output records.
    pub(crate) sql: Option<SqlEntry>,
    /// A Python streamlet's reference, interpreter and guarantee.
    pub(crate) python: Option<PythonEntry>,
}

/// The declaration of a Python streamlet.
#[derive(Clone, Debug)]
pub(crate) struct PythonEntry {
    /// `python`: the streamlet, `module:attribute`.
    pub(crate) reference: Located<String>,
    /// `interpreter`: the interpreter to run it with.
    pub(crate) interpreter: Option<Located<String>>,
    /// `delivery`: the guarantee the streamlet runs with.
    pub(crate) delivery: Option<Located<crate::descriptor::Delivery>>,
}

/// A file the blueprint names beside itself: `sql-file = "..."` in a SQL streamlet's
/// declaration, `schema-file = "..."` in a topic's.
#[derive(Clone, Debug)]
pub(crate) struct FileEntry {
    /// The path, relative to the blueprint's directory, as written.
    pub(crate) path: Located<String>,
    /// The whole `sql-file = "..."` (or `schema-file`), key to value.
    pub(crate) declaration: std::ops::Range<usize>,
}

/// The declaration of a SQL streamlet.
#[derive(Clone, Debug)]
pub(crate) struct SqlEntry {
    /// The query, as the TOML string holds it; with `sql-file`, the file's text (located at
    /// the path) once read.
    pub(crate) query: Located<String>,
    /// `sql-file`: the file the query is in.
    pub(crate) file: Option<FileEntry>,
    /// `record-name`: the Avro name of the output records.
    pub(crate) record_name: Option<Located<String>>,
    /// `delivery`: the guarantee the streamlet runs with.
    pub(crate) delivery: Option<Located<crate::descriptor::Delivery>>,
    /// `allowed-lateness`: how long its group windows are kept past their end.
    pub(crate) allowed_lateness: Option<Located<std::time::Duration>>,
    /// `out-of-orderness`: how far each partition's watermark trails its newest event time.
    pub(crate) out_of_orderness: Option<Located<std::time::Duration>>,
    /// `idle-after`: how long a partition may be quiet before it stops holding the watermark.
    pub(crate) idle_after: Option<Located<std::time::Duration>>,
    /// `max-drift`: how far in event time one inlet may read ahead of another.
    pub(crate) max_drift: Option<Located<std::time::Duration>>,
}

/// A `[topics.<id>]` table.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopicFile {
    /// The topic id (the key).
    pub(crate) id: Located<String>,
    /// Outlet paths, as written.
    pub(crate) producers: Vec<Located<String>>,
    /// Inlet paths, as written.
    pub(crate) consumers: Vec<Located<String>>,
    pub(crate) name: Option<Located<String>>,
    pub(crate) partitions: Option<Located<u32>>,
    pub(crate) replication: Option<Located<u16>>,
    pub(crate) managed: Option<Located<bool>>,
    pub(crate) cluster: Option<Located<String>>,
    pub(crate) bootstrap_servers: Option<Located<String>>,
    pub(crate) config: BTreeMap<String, String>,
    pub(crate) producer_config: BTreeMap<String, String>,
    pub(crate) consumer_config: BTreeMap<String, String>,
    pub(crate) compatibility: Option<Located<crate::Compatibility>>,
    /// The Avro schema clients outside the blueprint write the topic with (`schema`, or
    /// the text of `schema-file` once read).
    pub(crate) schema: Option<Located<serde_json::Value>>,
    /// `schema-file`: the file the schema is in.
    pub(crate) schema_file: Option<FileEntry>,
}

impl Default for Located<String> {
    fn default() -> Self {
        Located::new(String::new(), 0..0)
    }
}

impl TopicFile {
    /// The name the topic has on the log: `name` when set, else the id.
    pub(crate) fn effective_name(&self) -> &Located<String> {
        self.name.as_ref().unwrap_or(&self.id)
    }
}

/// The entries of a table sorted by where their key appears (the map itself is sorted by key).
pub(crate) fn in_file_order<'t, 'i>(
    table: &'t DeTable<'i>,
) -> Vec<(
    &'t Spanned<std::borrow::Cow<'i, str>>,
    &'t Spanned<DeValue<'i>>,
)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}
