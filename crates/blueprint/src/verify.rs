//! The entry points: [`verify`] a blueprint against an app descriptor, or [`parse`] it alone.

use std::path::Path;

use serde::Serialize;

use crate::blueprint::{Blueprint, PortPath, StreamletInstance, Topic};
use crate::code::Severity;
use crate::descriptor::{AppDescriptor, SchemaDescriptor};
use crate::diagnostic::Diagnostic;
use crate::files::BlueprintFiles;
use crate::parse::parse_file;
use crate::report::Report;
use crate::rules::{self, Context};

/// The outcome of checking a blueprint: every problem found, and the checked blueprint when
/// none of them is an error.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, verify};
/// let verification = verify(Path::new("blueprint.toml"), "name = \"demo\"\n[streamlets]\n", &AppDescriptor::default());
/// assert!(verification.has_errors());
/// assert!(verification.blueprint.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// Every problem, sorted by position in the file (problems without a location last).
    pub diagnostics: Vec<Diagnostic>,
    /// The checked blueprint; `Some` if and only if no diagnostic is an error.
    pub blueprint: Option<Blueprint>,
}

impl Verification {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }

    /// Whether any diagnostic is a warning.
    pub fn has_warnings(&self) -> bool {
        self.count(Severity::Warning) > 0
    }

    /// How many diagnostics have this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// Checks a blueprint against the app descriptor and reports every problem at once.
///
/// `file` names the blueprint in locations; `text` is its content (verification reads
/// nothing; [`BlueprintFiles::beside`](crate::BlueprintFiles::beside) reads the query files a blueprint
/// names, for [`verify_with_queries`]).
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, verify, Code};
/// let descriptor: AppDescriptor = serde_json::from_str(r#"{
///   "descriptor-version": 1, "app": "demo",
///   "streamlets": [{"type": "generator", "outlets": [{"name": "out",
///       "schema": {"format": "avro", "name": "long", "definition": "long"}}]}]
/// }"#).unwrap();
/// let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\n[topics.numbers]\nproducers = [\"gen.output\"]\n";
/// let verification = verify(Path::new("blueprint.toml"), text, &descriptor);
/// let codes: Vec<_> = verification.diagnostics.iter().map(|d| d.code).collect();
/// assert_eq!(codes, [Code::TopicWithoutConsumers, Code::PortPathNotFound]);
/// assert!(verification.diagnostics[1].message.ends_with("did you mean 'gen.out', which is on no topic?"));
/// ```
pub fn verify(file: &Path, text: &str, descriptor: &AppDescriptor) -> Verification {
    check(
        file,
        text,
        Some(descriptor),
        None,
        &[],
        &BlueprintFiles::default(),
    )
}

/// The Avro schemas a backplane keeps for topics (by the topic's name on the log), oldest
/// first: what records on them were written with.
pub type KeptSchemas = std::collections::BTreeMap<String, Vec<SchemaDescriptor>>;

/// A kept schema, as [`KeptSchemas`] holds it: its fingerprint and definition, named by its
/// Avro full name.
///
/// ```
/// let kept = runnel_blueprint::kept_schema("00ff", serde_json::json!({"type": "enum", "name": "Unit", "symbols": ["C"]}));
/// assert_eq!(kept.name, "Unit");
/// ```
pub fn kept_schema(fingerprint: &str, definition: serde_json::Value) -> SchemaDescriptor {
    crate::rules::kept_schemas::descriptor(fingerprint, definition)
}

/// [`verify`], and also checks the blueprint's schemas against those a backplane keeps for
/// its topics (`kept`): a consumer that cannot read a schema records of its topic were
/// written with, or a producer whose schema breaks its topic's compatibility rule, is an
/// `IncompatibleSchemaChange` error at its port path, naming the version, the rule and the field.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, kept_schema, verify_against, Code, KeptSchemas};
/// use serde_json::json;
/// let descriptor: AppDescriptor = serde_json::from_str(r#"{
///   "descriptor-version": 1, "app": "demo",
///   "streamlets": [{"type": "printer", "inlets": [{"name": "in",
///       "schema": {"format": "avro", "name": "Reading", "fingerprint": "2",
///                  "definition": {"type": "record", "name": "Reading", "fields": [
///                      {"name": "celsius", "type": "double"}]}}}]}]
/// }"#).unwrap();
/// let text = "name = \"demo\"\n[streamlets]\nprinter = \"printer\"\n[topics.readings]\nconsumers = [\"printer.in\"]\n";
/// let written = json!({"type": "record", "name": "Reading", "fields": [{"name": "kelvin", "type": "double"}]});
/// let kept = KeptSchemas::from([("readings".to_owned(), vec![kept_schema("1", written)])]);
/// let verification = verify_against(Path::new("blueprint.toml"), text, &descriptor, &kept);
/// let error = verification.diagnostics.iter().find(|d| d.code == Code::IncompatibleSchemaChange).unwrap();
/// assert!(error.message.starts_with(
///     "'printer.in' cannot read records on topic 'readings' written with its schema version 1"));
/// ```
pub fn verify_against(
    file: &Path,
    text: &str,
    descriptor: &AppDescriptor,
    kept: &KeptSchemas,
) -> Verification {
    check(
        file,
        text,
        Some(descriptor),
        Some(kept),
        &[],
        &BlueprintFiles::default(),
    )
}

/// Checks what can be checked without the app descriptor: the file's format, names, port path
/// syntax and instances, topics, cycles. The blueprint's `type_name`s are the references as
/// written. Use it to draw a graph, or for a quick check before the app is built.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::parse;
/// let text = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\n";
/// let verification = parse(Path::new("blueprint.toml"), text);
/// assert!(!verification.has_errors());
/// assert_eq!(verification.blueprint.unwrap().streamlets[0].type_name, "generator");
/// ```
pub fn parse(file: &Path, text: &str) -> Verification {
    check(file, text, None, None, &[], &BlueprintFiles::default())
}

/// [`parse`], with the files the blueprint names read into `files`: each `sql-file` becomes
/// its streamlet's query, each `schema-file` its topic's schema. (Without them, [`parse`]
/// reports each file as not read.)
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{BlueprintFiles, parse_with_files};
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"hot.sql\"\n";
/// let files = BlueprintFiles::read(Path::new("blueprint.toml"), text, |_| Ok("SELECT * FROM readings".into()));
/// let blueprint = parse_with_files(Path::new("blueprint.toml"), text, &files).blueprint.unwrap();
/// assert_eq!(blueprint.streamlets[0].sql.as_ref().unwrap().query, "SELECT * FROM readings");
/// ```
pub fn parse_with_files(file: &Path, text: &str, files: &BlueprintFiles) -> Verification {
    check(file, text, None, None, &[], files)
}

/// [`verify`] (or [`verify_against`], with `kept`), for an app that planned the blueprint's
/// SQL streamlets: each instance is described in `descriptor` as
/// [`sql_type_name`](crate::sql_type_name), or has its problems in `query_problems`, which
/// are reported as `InvalidSqlQuery` at their place in the query: in the blueprint, or in
/// the query's own file, read into `files`.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, verify_with_queries, Code, QueryProblem, BlueprintFiles};
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql = \"\"\"\nSELECT sensr\nFROM readings\n\"\"\"\n";
/// let problem = QueryProblem {
///     instance: "hot".into(),
///     message: "no field named sensr".into(),
///     position: Some((1, 8)),
/// };
/// let none = BlueprintFiles::default();
/// let verification = verify_with_queries(Path::new("blueprint.toml"), text, &AppDescriptor::default(), None, &[problem.clone()], &none);
/// let error = verification.diagnostics.iter().find(|d| d.code == Code::InvalidSqlQuery).unwrap();
/// assert_eq!(error.location.as_ref().unwrap().to_string(), "blueprint.toml:4:8");
/// assert_eq!(error.message, "SQL streamlet 'hot': no field named sensr");
///
/// // The same query in a file of its own: the problem is located there.
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"queries/hot.sql\"\n";
/// let files = BlueprintFiles::read(Path::new("blueprint.toml"), text, |_| Ok("SELECT sensr\nFROM readings\n".into()));
/// let verification = verify_with_queries(Path::new("blueprint.toml"), text, &AppDescriptor::default(), None, &[problem], &files);
/// let error = verification.diagnostics.iter().find(|d| d.code == Code::InvalidSqlQuery).unwrap();
/// assert_eq!(error.location.as_ref().unwrap().to_string(), "queries/hot.sql:1:8");
/// ```
pub fn verify_with_queries(
    file: &Path,
    text: &str,
    descriptor: &AppDescriptor,
    kept: Option<&KeptSchemas>,
    query_problems: &[crate::QueryProblem],
    files: &BlueprintFiles,
) -> Verification {
    check(file, text, Some(descriptor), kept, query_problems, files)
}

fn check(
    file: &Path,
    text: &str,
    descriptor: Option<&AppDescriptor>,
    kept: Option<&KeptSchemas>,
    query_problems: &[crate::QueryProblem],
    files: &BlueprintFiles,
) -> Verification {
    let mut report = Report::new(file, text);
    let mut parsed = parse_file(text, &mut report);
    files.fill(&mut parsed, &mut report);
    let mut cx = Context::new(&parsed, descriptor);
    cx.query_problems = query_problems;
    cx.files = Some(files);
    rules::app::check(&cx, &mut report);
    rules::streamlets::check(&mut cx, &mut report);
    rules::port_names::check(&cx, &mut report);
    rules::parameters::check(&cx, &mut report);
    rules::volumes::check(&cx, &mut report);
    rules::topics::check(&cx, &mut report);
    rules::ports::check(&mut cx, &mut report);
    rules::schemas::check(&cx, &mut report);
    if let Some(kept) = kept {
        rules::kept_schemas::check(&cx, kept, &mut report);
    }
    rules::state::check(&cx, &mut report);
    rules::cycles::check(&cx, &mut report);
    let diagnostics = report.finish();
    let blueprint = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        Some(build(&cx))
    };
    Verification {
        diagnostics,
        blueprint,
    }
}

/// The checked blueprint, built once the rules found no error.
fn build(cx: &Context<'_>) -> Blueprint {
    let file = cx.file;
    let streamlets = cx
        .instances
        .iter()
        .map(|instance| StreamletInstance {
            name: instance.entry.name.value.clone(),
            type_name: instance
                .streamlet
                .map_or(&instance.entry.type_ref.value, |streamlet| {
                    &streamlet.type_name
                })
                .clone(),
            sql: instance
                .entry
                .sql
                .as_ref()
                .map(|sql| crate::blueprint::SqlQuery {
                    query: sql.query.value.clone(),
                    record_name: sql.record_name.as_ref().map(|name| name.value.clone()),
                    delivery: sql
                        .delivery
                        .as_ref()
                        .map_or_else(Default::default, |delivery| delivery.value),
                    allowed_lateness: sql.allowed_lateness.as_ref().map(|lateness| lateness.value),
                    out_of_orderness: sql.out_of_orderness.as_ref().map(|bound| bound.value),
                    idle_after: sql.idle_after.as_ref().map(|timeout| timeout.value),
                    max_drift: sql.max_drift.as_ref().map(|drift| drift.value),
                }),
            python: instance
                .entry
                .python
                .as_ref()
                .map(|python| crate::blueprint::PythonSource {
                    reference: python.reference.value.clone(),
                    interpreter: python
                        .interpreter
                        .as_ref()
                        .map(|interpreter| interpreter.value.clone()),
                    delivery: python
                        .delivery
                        .as_ref()
                        .map_or_else(Default::default, |delivery| delivery.value),
                }),
        })
        .collect();
    let paths = |written: &[crate::file::Located<String>]| {
        written
            .iter()
            .filter_map(|path| PortPath::parse(&path.value))
            .collect()
    };
    let topics = file
        .topics
        .iter()
        .map(|topic| Topic {
            id: topic.id.value.clone(),
            name: topic.effective_name().value.clone(),
            partitions: topic.partitions.as_ref().map(|p| p.value),
            replication: topic.replication.as_ref().map(|r| r.value),
            managed: topic.managed.as_ref().is_none_or(|managed| managed.value),
            cluster: topic.cluster.as_ref().map(|c| c.value.clone()),
            bootstrap_servers: topic.bootstrap_servers.as_ref().map(|b| b.value.clone()),
            config: topic.config.clone(),
            producer_config: topic.producer_config.clone(),
            consumer_config: topic.consumer_config.clone(),
            compatibility: topic
                .compatibility
                .as_ref()
                .map_or_else(Default::default, |c| c.value),
            schema: topic.schema.as_ref().map(|schema| schema.value.clone()),
            producers: paths(&topic.producers),
            consumers: paths(&topic.consumers),
        })
        .collect();
    Blueprint {
        name: file
            .name
            .as_ref()
            .map(|name| name.value.clone())
            .unwrap_or_default(),
        streamlets,
        topics,
    }
}
