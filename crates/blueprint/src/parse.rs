//! Text to [`BlueprintFile`]: TOML parsing with spans, and the shape of the file (known keys,
//! value types). Every problem is reported and parsing goes on with what remains.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::code::Code;
use crate::connections;
use crate::facts::Facts;
use crate::file::{
    BlueprintFile, FileEntry, Located, PythonEntry, SqlEntry, StreamletEntry, StreamletsSection,
    TopicFile, in_file_order,
};
use crate::report::Report;
use crate::suggest::closest;

const TOP_LEVEL_KEYS: &[&str] = &["name", "streamlets", "topics"];
const TOPIC_KEYS: &[&str] = &[
    "producers",
    "consumers",
    "name",
    "partitions",
    "replication",
    "managed",
    "cluster",
    "bootstrap-servers",
    "config",
    "producer-config",
    "consumer-config",
    "compatibility",
    "schema",
    "schema-file",
];

/// Parses the blueprint text, reporting syntax and shape problems.
pub(crate) fn parse_file(text: &str, report: &mut Report<'_>) -> BlueprintFile {
    let (root, errors) = DeTable::parse_recoverable(text);
    let mut file = BlueprintFile {
        had_syntax_errors: !errors.is_empty(),
        ..BlueprintFile::default()
    };
    let root = root.into_inner();

    let mut headers = None;
    for error in &errors {
        let span = error.span().unwrap_or(0..0);
        if error.message() == "duplicate key" {
            let headers = headers.get_or_insert_with(|| Headers::new(text));
            report_duplicate_key(text, &root, headers, span, report);
        } else {
            report.at(
                Code::BlueprintFormatError,
                span,
                format!("invalid toml: {}", error.message()),
                Facts::new(),
            );
        }
    }

    let mut has_name = false;
    for (key, value) in in_file_order(&root) {
        if is_recovery_artefact(value) {
            continue;
        }
        match key.get_ref().as_ref() {
            "name" => {
                has_name = true;
                file.name = expect_string(value, "'name'", Facts::new().key("name"), report);
            }
            "streamlets" => file.streamlets = Some(parse_streamlets(key.span(), value, report)),
            "topics" => match value.get_ref() {
                DeValue::Table(topics) => {
                    for (id, topic) in in_file_order(topics) {
                        if !is_recovery_artefact(topic) {
                            file.topics.push(parse_topic(id, topic, report));
                        }
                    }
                }
                other => wrong_type(
                    report,
                    value.span(),
                    "'topics'",
                    "a table",
                    other,
                    Facts::new().key("topics"),
                ),
            },
            "connections" => {
                let connections = connections::parse(key.span(), value);
                connections::report(&connections, report);
                file.connections = Some(connections);
            }
            unknown => {
                let suggestion = closest(unknown, TOP_LEVEL_KEYS.iter().copied());
                report.at(
                    Code::BlueprintFormatError,
                    key.span(),
                    format!(
                        "unknown key '{unknown}' (expected name, streamlets or topics){}",
                        hint(suggestion)
                    ),
                    Facts::new().key(unknown).suggestions(suggestion),
                );
            }
        }
    }

    if !has_name && !file.had_syntax_errors {
        report.at(
            Code::BlueprintFormatError,
            0..0,
            "missing required key 'name' (the app name)",
            Facts::new().key("name"),
        );
    }
    file
}

/// `"; did you mean 'x'?"` for a suggestion, or nothing.
fn hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|candidate| format!("; did you mean '{candidate}'?"))
        .unwrap_or_default()
}

fn parse_streamlets(
    key_span: Range<usize>,
    value: &Spanned<DeValue<'_>>,
    report: &mut Report<'_>,
) -> StreamletsSection {
    let mut section = StreamletsSection {
        span: key_span,
        ..StreamletsSection::default()
    };
    let DeValue::Table(table) = value.get_ref() else {
        wrong_type(
            report,
            value.span(),
            "'streamlets'",
            "a table",
            value.get_ref(),
            Facts::new().key("streamlets"),
        );
        section.malformed = true;
        return section;
    };
    for (name, type_ref) in in_file_order(table) {
        if is_recovery_artefact(type_ref) {
            section.unusable.push(located_key(name));
            continue;
        }
        if let DeValue::Table(declaration) = type_ref.get_ref() {
            let is_sql = declaration.contains_key("sql") || declaration.contains_key("sql-file");
            let parsed = if declaration.contains_key("python") && !is_sql {
                parse_python_streamlet(name, declaration, report)
            } else {
                parse_sql_streamlet(name, declaration, report)
            };
            match parsed {
                Some(entry) => section.entries.push(entry),
                None => section.unusable.push(located_key(name)),
            }
            continue;
        }
        let what = format!(
            "the type of streamlet '{0}' (`{0} = \"type\"`)",
            name.get_ref()
        );
        let facts = Facts::new().streamlet(name.get_ref().as_ref());
        match expect_string(type_ref, &what, facts, report) {
            Some(type_ref) => section.entries.push(StreamletEntry {
                name: located_key(name),
                type_ref,
                sql: None,
                python: None,
            }),
            None => section.unusable.push(located_key(name)),
        }
    }
    section
}

/// The keys of a SQL streamlet's table.
const SQL_STREAMLET_KEYS: &[&str] = &[
    "sql",
    "sql-file",
    "record-name",
    "delivery",
    "allowed-lateness",
    "out-of-orderness",
    "idle-after",
    "max-drift",
];

/// The guarantees a SQL or Python streamlet can ask for, as `delivery` spells them.
const DELIVERIES: &[(&str, crate::descriptor::Delivery)] = &[
    ("at-least-once", crate::descriptor::Delivery::AtLeastOnce),
    ("exactly-once", crate::descriptor::Delivery::ExactlyOnce),
    ("at-most-once", crate::descriptor::Delivery::AtMostOnce),
];

/// `[streamlets.<name>]` with `sql = "SELECT ..."` and optionally `record-name`.
fn parse_sql_streamlet(
    name: &Spanned<std::borrow::Cow<'_, str>>,
    declaration: &DeTable<'_>,
    report: &mut Report<'_>,
) -> Option<StreamletEntry> {
    let instance = name.get_ref().as_ref();
    let facts = || Facts::new().streamlet(instance);
    if !declaration.contains_key("sql") && !declaration.contains_key("sql-file") {
        report.at(
            Code::BlueprintFormatError,
            name.span(),
            format!(
                "streamlet '{instance}' is a table without 'sql' or 'python'; declare a streamlet as `{instance} = \"type\"`, a SQL streamlet with `sql = \"SELECT ...\"` (or `sql-file = \"query.sql\"`), or a Python streamlet with `python = \"module:attribute\"`"
            ),
            facts().key("sql"),
        );
        return None;
    }
    let mut query: Option<Located<String>> = None;
    let mut file: Option<FileEntry> = None;
    let mut record_name = None;
    let mut delivery = None;
    let mut allowed_lateness = None;
    let mut out_of_orderness = None;
    let mut idle_after = None;
    let mut max_drift = None;
    for (key, value) in in_file_order(declaration) {
        if is_recovery_artefact(value) {
            continue;
        }
        let key_name = key.get_ref().as_ref();
        let what = format!("'{key_name}' of streamlet '{instance}'");
        match key_name {
            "sql" => query = expect_string(value, &what, facts().key("sql"), report),
            "sql-file" => {
                file = expect_string(value, &what, facts().key("sql-file"), report).map(|path| {
                    FileEntry {
                        declaration: key.span().start..path.span.end,
                        path,
                    }
                });
            }
            "allowed-lateness" | "out-of-orderness" | "idle-after" | "max-drift" => {
                let parsed = parse_duration_key(instance, key_name, value, report);
                let slot = match key_name {
                    "allowed-lateness" => &mut allowed_lateness,
                    "out-of-orderness" => &mut out_of_orderness,
                    "idle-after" => &mut idle_after,
                    _ => &mut max_drift,
                };
                *slot = parsed.or(slot.take());
            }
            "record-name" => {
                record_name = expect_string(value, &what, facts().key("record-name"), report);
            }
            "delivery" => delivery = parse_delivery(instance, value, report).or(delivery),
            unknown => unknown_key(
                report,
                key.span(),
                unknown,
                instance,
                "SQL",
                SQL_STREAMLET_KEYS,
            ),
        }
    }
    let query = match (query, &file) {
        (Some(query), Some(file)) => {
            let span = query.span.start.max(file.declaration.start)
                ..query.span.end.max(file.declaration.end);
            report.at(
                Code::BlueprintFormatError,
                span,
                format!(
                    "streamlet '{instance}' has both 'sql' and 'sql-file': keep the query in one of them"
                ),
                facts().key("sql-file"),
            );
            return None;
        }
        (Some(query), None) => query,
        // The file's text, once read, replaces this (`BlueprintFiles`).
        (None, Some(file)) => Located::new(String::new(), file.path.span.clone()),
        // Not a string: reported already.
        (None, None) => return None,
    };
    Some(StreamletEntry {
        name: located_key(name),
        type_ref: Located::new(crate::sql_type_name(instance), query.span.clone()),
        sql: Some(SqlEntry {
            query,
            file,
            record_name,
            delivery,
            allowed_lateness,
            out_of_orderness,
            idle_after,
            max_drift,
        }),
        python: None,
    })
}

/// The keys of a Python streamlet's table.
const PYTHON_STREAMLET_KEYS: &[&str] = &["python", "interpreter", "delivery"];

/// `[streamlets.<name>]` with `python = "module:attribute"` and optionally `interpreter`
/// and `delivery`.
fn parse_python_streamlet(
    name: &Spanned<std::borrow::Cow<'_, str>>,
    declaration: &DeTable<'_>,
    report: &mut Report<'_>,
) -> Option<StreamletEntry> {
    let instance = name.get_ref().as_ref();
    let facts = || Facts::new().streamlet(instance);
    let mut reference = None;
    let mut interpreter = None;
    let mut delivery = None;
    for (key, value) in in_file_order(declaration) {
        if is_recovery_artefact(value) {
            continue;
        }
        let key_name = key.get_ref().as_ref();
        let what = format!("'{key_name}' of streamlet '{instance}'");
        match key_name {
            "python" => {
                let written = expect_string(value, &what, facts().key("python"), report);
                reference = written.filter(|written| {
                    let well_formed = written
                        .value
                        .split_once(':')
                        .is_some_and(|(module, attribute)| {
                            !module.is_empty() && !attribute.is_empty()
                        });
                    if !well_formed {
                        report.at(
                            Code::BlueprintFormatError,
                            written.span.clone(),
                            format!(
                                "{what} is '{}', which is not a streamlet reference; expected `module:attribute`, such as `scoring:score`",
                                written.value
                            ),
                            facts().key("python").expected("module:attribute").found(&written.value),
                        );
                    }
                    well_formed
                });
            }
            "interpreter" => {
                interpreter = expect_string(value, &what, facts().key("interpreter"), report);
            }
            "delivery" => delivery = parse_delivery(instance, value, report).or(delivery),
            unknown => unknown_key(
                report,
                key.span(),
                unknown,
                instance,
                "Python",
                PYTHON_STREAMLET_KEYS,
            ),
        }
    }
    // Not a reference: reported already.
    let reference = reference?;
    Some(StreamletEntry {
        name: located_key(name),
        type_ref: Located::new(crate::python_type_name(instance), reference.span.clone()),
        sql: None,
        python: Some(PythonEntry {
            reference,
            interpreter,
            delivery,
        }),
    })
}

/// Reports key `unknown` of the table declaring the `kind` (SQL, Python) streamlet
/// `instance`, which has `keys`, with the closest of them.
fn unknown_key(
    report: &mut Report<'_>,
    span: Range<usize>,
    unknown: &str,
    instance: &str,
    kind: &str,
    keys: &[&str],
) {
    let suggestion = closest(unknown, keys.iter().copied());
    let (last, others) = keys.split_last().expect("a declared streamlet has keys");
    report.at(
        Code::BlueprintFormatError,
        span,
        format!(
            "unknown key '{unknown}' in streamlet '{instance}' (a {kind} streamlet has {} and {last}){}",
            others.join(", "),
            hint(suggestion)
        ),
        Facts::new().streamlet(instance).suggestions(suggestion),
    );
}

/// A declared streamlet's `delivery`, or `None` after reporting what is wrong with it.
fn parse_delivery(
    instance: &str,
    value: &Spanned<DeValue<'_>>,
    report: &mut Report<'_>,
) -> Option<Located<crate::descriptor::Delivery>> {
    let what = format!("'delivery' of streamlet '{instance}'");
    let facts = || Facts::new().streamlet(instance).key("delivery");
    let text = expect_string(value, &what, facts(), report)?;
    if let Some((_, guarantee)) = DELIVERIES.iter().find(|(name, _)| *name == text.value) {
        return Some(Located::new(*guarantee, text.span));
    }
    let expected = DELIVERIES
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ");
    report.at(
        Code::BlueprintFormatError,
        text.span,
        format!(
            "{what} is '{}', which is not a guarantee; expected one of {expected}",
            text.value
        ),
        facts().expected(&expected).found(&text.value),
    );
    None
}

/// A duration of a SQL streamlet (`allowed-lateness`, `out-of-orderness`, `idle-after`), as
/// `"10 minutes"`.
fn parse_duration_key(
    instance: &str,
    key: &str,
    value: &Spanned<DeValue<'_>>,
    report: &mut Report<'_>,
) -> Option<Located<std::time::Duration>> {
    let what = format!("'{key}' of streamlet '{instance}'");
    let facts = || Facts::new().streamlet(instance).key(key);
    let text = expect_string(value, &what, facts(), report)?;
    match crate::units::parse_duration(&text.value) {
        Ok(duration) => Some(Located::new(duration, text.span)),
        Err(reason) => {
            report.at(
                Code::BlueprintFormatError,
                text.span,
                format!("{what}: {reason}"),
                facts()
                    .expected("a duration, as \"10 minutes\"")
                    .found(&text.value),
            );
            None
        }
    }
}

fn parse_topic(
    id: &Spanned<std::borrow::Cow<'_, str>>,
    value: &Spanned<DeValue<'_>>,
    report: &mut Report<'_>,
) -> TopicFile {
    let mut topic = TopicFile {
        id: located_key(id),
        ..TopicFile::default()
    };
    let id = id.get_ref();
    let DeValue::Table(table) = value.get_ref() else {
        wrong_type(
            report,
            value.span(),
            &format!("topic '{id}'"),
            "a table",
            value.get_ref(),
            Facts::new().topic(id.as_ref()),
        );
        return topic;
    };
    for (key, value) in in_file_order(table) {
        if is_recovery_artefact(value) {
            continue;
        }
        let key_name = key.get_ref().as_ref();
        let what = format!("'{key_name}' of topic '{id}'");
        let facts = Facts::new().topic(id.as_ref()).key(key_name);
        let facts = || facts.clone();
        match key_name {
            "producers" => topic.producers = expect_strings(value, &what, facts(), report),
            "consumers" => topic.consumers = expect_strings(value, &what, facts(), report),
            "name" => topic.name = expect_string(value, &what, facts(), report),
            "cluster" => topic.cluster = expect_string(value, &what, facts(), report),
            "bootstrap-servers" => {
                topic.bootstrap_servers = expect_string(value, &what, facts(), report);
            }
            "partitions" => {
                topic.partitions = expect_integer(value, &what, u32::MAX.into(), facts(), report);
            }
            "replication" => {
                topic.replication = expect_integer(value, &what, u16::MAX.into(), facts(), report);
            }
            "managed" => match value.get_ref() {
                DeValue::Boolean(managed) => {
                    topic.managed = Some(Located::new(*managed, value.span()));
                }
                other => wrong_type(report, value.span(), &what, "a boolean", other, facts()),
            },
            "config" => topic.config = expect_settings(value, &what, facts(), report),
            "producer-config" => {
                topic.producer_config = expect_settings(value, &what, facts(), report);
            }
            "consumer-config" => {
                topic.consumer_config = expect_settings(value, &what, facts(), report);
            }
            "compatibility" => {
                let Some(text) = expect_string(value, &what, facts(), report) else {
                    continue;
                };
                match crate::Compatibility::parse(&text.value) {
                    Some(rule) => topic.compatibility = Some(Located::new(rule, text.span)),
                    None => {
                        let expected = crate::COMPATIBILITY_NAMES.join(", ");
                        report.at(
                            Code::BlueprintFormatError,
                            text.span,
                            format!(
                                "{what} is '{}', which is not a compatibility rule; expected one of {expected}",
                                text.value
                            ),
                            facts().expected(&expected).found(&text.value),
                        );
                    }
                }
            }
            "schema" => {
                if let Some(text) = expect_string(value, &what, facts(), report) {
                    topic.schema = avro_schema(&text, &what, facts(), report);
                }
            }
            "schema-file" => {
                // The file's schema, once read, goes into `schema` (`BlueprintFiles`).
                topic.schema_file =
                    expect_string(value, &what, facts(), report).map(|path| FileEntry {
                        declaration: key.span().start..path.span.end,
                        path,
                    });
            }
            unknown => {
                let suggestion = closest(unknown, TOPIC_KEYS.iter().copied());
                report.at(
                    Code::BlueprintFormatError,
                    key.span(),
                    format!(
                        "unknown key '{unknown}' in topic '{id}'{}",
                        hint(suggestion)
                    ),
                    facts().suggestions(suggestion),
                );
            }
        }
    }
    if let (Some(schema), Some(file)) = (&topic.schema, &topic.schema_file) {
        report.at(
            Code::BlueprintFormatError,
            schema.span.start.max(file.declaration.start)
                ..schema.span.end.max(file.declaration.end),
            format!(
                "topic '{id}' has both 'schema' and 'schema-file': keep the schema in one of them"
            ),
            Facts::new().topic(id.as_ref()).key("schema-file"),
        );
        // Neither is checked against the consumers: which one was meant is not known.
        topic.schema = None;
        topic.schema_file = None;
    }
    if let (Some(_), Some(servers)) = (&topic.cluster, &topic.bootstrap_servers) {
        report.at(
            Code::BlueprintFormatError,
            servers.span.clone(),
            format!("topic '{id}' sets both 'cluster' and 'bootstrap-servers'; set one of them"),
            Facts::new().topic(id.as_ref()).key("bootstrap-servers"),
        );
    }
    topic
}

/// After a syntax error the parser may fill in an empty placeholder value; it has no text.
fn is_recovery_artefact(value: &Spanned<DeValue<'_>>) -> bool {
    value.span().is_empty() && !matches!(value.get_ref(), DeValue::Table(_))
}

fn located_key(key: &Spanned<std::borrow::Cow<'_, str>>) -> Located<String> {
    Located::new(key.get_ref().to_string(), key.span())
}

fn wrong_type(
    report: &mut Report<'_>,
    span: Range<usize>,
    what: &str,
    expected: &str,
    found: &DeValue<'_>,
    facts: Facts,
) {
    report.at(
        Code::BlueprintFormatError,
        span,
        format!("{what} must be {expected}, found {}", found.type_str()),
        facts.expected(expected).found(found.type_str()),
    );
}

fn expect_string(
    value: &Spanned<DeValue<'_>>,
    what: &str,
    facts: Facts,
    report: &mut Report<'_>,
) -> Option<Located<String>> {
    match value.get_ref() {
        DeValue::String(text) => Some(Located::new(text.to_string(), value.span())),
        other => {
            wrong_type(report, value.span(), what, "a string", other, facts);
            None
        }
    }
}

/// The Avro schema in the JSON `text` of a topic's `schema` (or `schema-file`), or a report of
/// why it is not one.
pub(crate) fn avro_schema(
    text: &Located<String>,
    what: &str,
    facts: Facts,
    report: &mut Report<'_>,
) -> Option<Located<serde_json::Value>> {
    let problem = match serde_json::from_str::<serde_json::Value>(&text.value) {
        Ok(definition) => match apache_avro::Schema::parse(&definition) {
            Ok(_) => return Some(Located::new(definition, text.span.clone())),
            Err(error) => format!("{what} is not an Avro schema: {error}"),
        },
        Err(error) => format!("{what} is not JSON: {error} of the schema"),
    };
    report.at(
        Code::BlueprintFormatError,
        text.span.clone(),
        problem,
        facts.expected("an Avro schema as JSON text"),
    );
    None
}

fn expect_strings(
    value: &Spanned<DeValue<'_>>,
    what: &str,
    facts: Facts,
    report: &mut Report<'_>,
) -> Vec<Located<String>> {
    let DeValue::Array(items) = value.get_ref() else {
        wrong_type(
            report,
            value.span(),
            what,
            "an array of strings",
            value.get_ref(),
            facts,
        );
        return Vec::new();
    };
    let each = format!("each of {what}");
    items
        .iter()
        .filter(|item| !is_recovery_artefact(item))
        .filter_map(|item| expect_string(item, &each, facts.clone(), report))
        .collect()
}

fn expect_integer<T: TryFrom<i64>>(
    value: &Spanned<DeValue<'_>>,
    what: &str,
    max: i64,
    facts: Facts,
    report: &mut Report<'_>,
) -> Option<Located<T>> {
    let DeValue::Integer(integer) = value.get_ref() else {
        wrong_type(
            report,
            value.span(),
            what,
            "an integer",
            value.get_ref(),
            facts,
        );
        return None;
    };
    let parsed = i64::from_str_radix(integer.as_str(), integer.radix())
        .ok()
        .and_then(|number| T::try_from(number).ok());
    if parsed.is_none() {
        report.at(
            Code::BlueprintFormatError,
            value.span(),
            format!("{what} must be between 0 and {max}"),
            facts.value(integer.as_str()),
        );
    }
    parsed.map(|number| Located::new(number, value.span()))
}

/// A free-form settings table, flattened to dotted keys (`retention.ms = 1` written without
/// quotes is a nested table in TOML, but means the Kafka setting `retention.ms`), every value
/// as text.
fn expect_settings(
    value: &Spanned<DeValue<'_>>,
    what: &str,
    facts: Facts,
    report: &mut Report<'_>,
) -> BTreeMap<String, String> {
    let mut settings = BTreeMap::new();
    match value.get_ref() {
        DeValue::Table(table) => flatten_settings("", table, what, &facts, &mut settings, report),
        other => wrong_type(report, value.span(), what, "a table", other, facts),
    }
    settings
}

fn flatten_settings(
    prefix: &str,
    table: &DeTable<'_>,
    what: &str,
    facts: &Facts,
    settings: &mut BTreeMap<String, String>,
    report: &mut Report<'_>,
) {
    for (key, value) in in_file_order(table) {
        let name = format!("{prefix}{}", key.get_ref());
        let facts_of_setting = || {
            let mut facts = facts.clone();
            facts.key = Some(format!(
                "{}.{name}",
                facts.key.as_deref().unwrap_or_default()
            ));
            facts
        };
        let text = match value.get_ref() {
            DeValue::Table(nested) => {
                flatten_settings(&format!("{name}."), nested, what, facts, settings, report);
                continue;
            }
            DeValue::String(text) => text.to_string(),
            DeValue::Integer(integer) => {
                match i128::from_str_radix(integer.as_str(), integer.radix()) {
                    Ok(number) => number.to_string(),
                    Err(_) => integer.as_str().to_owned(),
                }
            }
            DeValue::Float(float) => match float.as_str().parse::<f64>() {
                Ok(number) => number.to_string(),
                Err(_) => float.as_str().to_owned(),
            },
            DeValue::Boolean(flag) => flag.to_string(),
            other => {
                let setting = format!("setting '{name}' in {what}");
                wrong_type(
                    report,
                    value.span(),
                    &setting,
                    "a string, number or boolean",
                    other,
                    facts_of_setting(),
                );
                continue;
            }
        };
        if settings.insert(name.clone(), text).is_some() {
            report.at(
                Code::BlueprintFormatError,
                key.span(),
                format!("duplicate setting '{name}' in {what}"),
                facts_of_setting(),
            );
        }
    }
}

/// Reports a key the TOML parser found twice: a second streamlet instance of the same name is
/// `DuplicateStreamletNamesFound`, anything else a format error.
fn report_duplicate_key(
    text: &str,
    root: &DeTable<'_>,
    headers: &Headers,
    span: Range<usize>,
    report: &mut Report<'_>,
) {
    let key = unquote(text.get(span.clone()).unwrap_or_default());
    let streamlets = root
        .iter()
        .find(|(name, _)| name.get_ref() == "streamlets")
        .map(|(_, value)| value);
    let in_streamlets = streamlets.is_some_and(|value| {
        let inline = value.span().start < span.start && span.end <= value.span().end;
        let header = headers
            .enclosing(span.start)
            .is_some_and(|header| header.starts_with("[streamlets]"));
        matches!(value.get_ref(), DeValue::Table(_)) && (inline || header)
    });
    if in_streamlets {
        let first = streamlets
            .and_then(|value| value.get_ref().as_table())
            .and_then(|table| table.iter().find(|(name, _)| name.get_ref() == key))
            .map(|(name, _)| name.span().start);
        let first_line = first.map(|offset| report.line_of(offset));
        let mut facts = Facts::new().streamlet(key);
        facts.first_line = first_line.map(|line| line as u64);
        report.at(
            Code::DuplicateStreamletNamesFound,
            span,
            format!(
                "duplicate streamlet instance name '{key}'{}",
                first_line
                    .map(|line| format!(" (first declared on line {line})"))
                    .unwrap_or_default()
            ),
            facts,
        );
    } else {
        report.at(
            Code::BlueprintFormatError,
            span,
            format!("duplicate key '{key}'"),
            Facts::new().key(key),
        );
    }
}

/// The last `[table]` header line before `offset`, without spaces.
/// The `[table]` header lines of a text, found in one pass so that locating the table of
/// each of many duplicate keys stays linear.
struct Headers {
    /// Each header line's offset and text without spaces, in file order.
    lines: Vec<(usize, String)>,
}

impl Headers {
    fn new(text: &str) -> Self {
        let mut lines = Vec::new();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                lines.push((
                    offset,
                    trimmed.chars().filter(|c| !c.is_whitespace()).collect(),
                ));
            }
            offset += line.len();
        }
        Headers { lines }
    }

    /// The last header that starts before `offset`.
    fn enclosing(&self, offset: usize) -> Option<&str> {
        let after = self.lines.partition_point(|(start, _)| *start < offset);
        after
            .checked_sub(1)
            .map(|index| self.lines[index].1.as_str())
    }
}

fn unquote(key: &str) -> &str {
    key.trim_matches(|c| c == '"' || c == '\'')
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> (BlueprintFile, Vec<crate::Diagnostic>) {
        let mut report = Report::new(Path::new("b.toml"), text);
        let file = parse_file(text, &mut report);
        (file, report.finish())
    }

    #[test]
    fn reads_streamlets_and_topics_in_file_order() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets]\nz = \"t1\"\na = \"t2\"\n\
             [topics.t]\nproducers = [\"z.out\"]\nconsumers = [\"a.in\"]\npartitions = 3\n",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let names: Vec<_> = file
            .streamlets
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.name.value)
            .collect();
        assert_eq!(names, ["z", "a"]);
        assert_eq!(file.topics[0].partitions.as_ref().map(|p| p.value), Some(3));
        assert_eq!(file.topics[0].producers[0].value, "z.out");
    }

    #[test]
    fn reads_python_streamlets_and_names_what_is_wrong_with_them() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets.p]\npython = \"scoring:score\"\n\
             interpreter = \".venv/bin/python\"\ndelivery = \"exactly-once\"\n",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let entry = &file.streamlets.unwrap().entries[0];
        assert_eq!(entry.type_ref.value, "python:p");
        let python = entry.python.as_ref().unwrap();
        assert_eq!(python.reference.value, "scoring:score");
        assert_eq!(
            python.interpreter.as_ref().unwrap().value,
            ".venv/bin/python"
        );
        assert_eq!(
            python.delivery.as_ref().unwrap().value,
            crate::descriptor::Delivery::ExactlyOnce
        );

        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets.p]\npython = \"scoring\"\ninterpeter = \"python3.12\"\n",
        );
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "'python' of streamlet 'p' is 'scoring', which is not a streamlet reference; expected `module:attribute`, such as `scoring:score`",
                "unknown key 'interpeter' in streamlet 'p' (a Python streamlet has python, interpreter and delivery); did you mean 'interpreter'?",
            ]
        );
        assert!(file.streamlets.unwrap().entries.is_empty());
    }

    #[test]
    fn reads_sql_streamlets_and_names_what_is_wrong_with_them() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets.q]\nsql = \"SELECT a FROM t\"\nrecord-name = \"R\"\n\
             delivery = \"exactly-once\"\nallowed-lateness = \"10 minutes\"\n\
             out-of-orderness = \"1s\"\nidle-after = \"30s\"\nmax-drift = \"1 minute\"\n",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let entry = &file.streamlets.unwrap().entries[0];
        assert_eq!(entry.type_ref.value, "sql:q");
        let sql = entry.sql.as_ref().unwrap();
        assert_eq!(sql.query.value, "SELECT a FROM t");
        assert_eq!(sql.record_name.as_ref().unwrap().value, "R");
        assert_eq!(
            sql.delivery.as_ref().unwrap().value,
            crate::descriptor::Delivery::ExactlyOnce
        );
        assert_eq!(
            sql.allowed_lateness.as_ref().unwrap().value,
            std::time::Duration::from_secs(600)
        );
        assert_eq!(
            sql.out_of_orderness.as_ref().unwrap().value,
            std::time::Duration::from_secs(1)
        );
        assert_eq!(
            sql.idle_after.as_ref().unwrap().value,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(
            sql.max_drift.as_ref().unwrap().value,
            std::time::Duration::from_secs(60)
        );

        let (_, diagnostics) = parse(
            "name = \"app\"\n[streamlets.q]\nsql = \"SELECT a FROM t\"\ndelivery = \"twice\"\nrecordname = \"R\"\nallowed-lateness = \"ten\"\nidle-after = 5\n",
        );
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "'delivery' of streamlet 'q' is 'twice', which is not a guarantee; expected one of at-least-once, exactly-once, at-most-once",
                "unknown key 'recordname' in streamlet 'q' (a SQL streamlet has sql, sql-file, record-name, delivery, allowed-lateness, out-of-orderness, idle-after and max-drift); did you mean 'record-name'?",
                "'allowed-lateness' of streamlet 'q': 'ten' is not a duration (write it like 250ms, 5s or 1m 30s)",
                "'idle-after' of streamlet 'q' must be a string, found integer",
            ]
        );
    }

    #[test]
    fn a_query_is_in_sql_or_in_sql_file_not_both() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets.q]\nsql-file = \"queries/q.sql\"\nrecord-name = \"R\"\n",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let sql = file.streamlets.unwrap().entries[0].sql.clone().unwrap();
        assert_eq!(sql.file.unwrap().path.value, "queries/q.sql");

        let (_, diagnostics) = parse(
            "name = \"app\"\n[streamlets.q]\nsql = \"SELECT a FROM t\"\nsql-file = \"q.sql\"\n",
        );
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            ["streamlet 'q' has both 'sql' and 'sql-file': keep the query in one of them"]
        );
    }

    #[test]
    fn flattens_dotted_settings_and_stringifies_values() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets]\na = \"t\"\n[topics.t.config]\nretention.ms = 86_400_000\n\
             \"cleanup.policy\" = \"compact\"\n\"min.insync.replicas\" = 2\nratio = 0.5\nflag = true\n",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let config = &file.topics[0].config;
        assert_eq!(config["retention.ms"], "86400000");
        assert_eq!(config["cleanup.policy"], "compact");
        assert_eq!(config["min.insync.replicas"], "2");
        assert_eq!(config["ratio"], "0.5");
        assert_eq!(config["flag"], "true");
    }

    #[test]
    fn a_duplicate_instance_is_its_own_code_and_other_duplicates_are_format_errors() {
        let (_, diagnostics) = parse(
            "name = \"app\"\n[streamlets]\na = \"t\"\n\"a\" = \"u\"\n[topics.t]\nx = 1\n[topics.t]\n",
        );
        let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
        assert!(
            codes.contains(&Code::DuplicateStreamletNamesFound),
            "{diagnostics:?}"
        );
        assert!(
            codes.contains(&Code::BlueprintFormatError),
            "{diagnostics:?}"
        );
        let duplicate = diagnostics
            .iter()
            .find(|d| d.code == Code::DuplicateStreamletNamesFound)
            .unwrap();
        assert_eq!(duplicate.location.as_ref().unwrap().line, 4);
        assert!(
            duplicate.message.contains("first declared on line 3"),
            "{}",
            duplicate.message
        );
    }

    #[test]
    fn keeps_going_after_syntax_errors() {
        let (file, diagnostics) = parse(
            "name = \"app\"\n[streamlets]\na = \"t\"\n[topics.t]\nproducers = [\"a.out\"\nbad key\n",
        );
        assert!(
            diagnostics
                .iter()
                .all(|d| d.code == Code::BlueprintFormatError)
        );
        assert!(!diagnostics.is_empty());
        assert_eq!(file.streamlets.unwrap().entries.len(), 1);
    }

    #[test]
    fn wrong_types_and_unknown_keys_point_at_the_text() {
        let text =
            "name = 3\n[streamlets]\na = \"t\"\n[topics.t]\npartition = 3\nreplication = -1\n";
        let (_, diagnostics) = parse(text);
        let messages: Vec<_> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "'name' must be a string, found integer",
                "unknown key 'partition' in topic 't'; did you mean 'partitions'?",
                "'replication' of topic 't' must be between 0 and 65535",
            ]
        );
        assert_eq!(diagnostics[0].location.as_ref().unwrap().span, 7..8);
    }
}
