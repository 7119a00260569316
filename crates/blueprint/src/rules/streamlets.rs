//! The `[streamlets]` table: `MissingStreamletsSection`, `EmptyStreamlets`,
//! `EmptyStreamletDescriptors`, `InvalidStreamletName`, `InvalidStreamletClassName`,
//! `StreamletDescriptorNotFound`, `AmbiguousStreamletRef`.
//!
//! A type reference resolves to the descriptor type of exactly that name; failing that, to
//! the one type whose name ends with the reference at a segment boundary (`Validate` refers
//! to `sensors::Validate`), as Cloudflow let a class be named by its simple name.

use std::cell::OnceCell;
use std::collections::HashMap;

use crate::code::Code;
use crate::descriptor::AppDescriptor;
use crate::facts::Facts;
use crate::names::{dns_label_problem, type_name_problem, type_name_segments};
use crate::report::Report;
use crate::rules::{Context, Instance};
use crate::suggest::NameIndex;

/// How many registered types a `StreamletDescriptorNotFound` lists.
const TYPES_LISTED: usize = 20;

/// Checks the instances and resolves their types, filling `cx.instances`.
pub(crate) fn check<'a>(cx: &mut Context<'a>, report: &mut Report<'_>) {
    let file = cx.file;
    if let Some(descriptor) = cx.descriptor {
        cx.first_use = vec![None; descriptor.streamlets.len()];
    }
    let Some(section) = &file.streamlets else {
        if !file.had_syntax_errors {
            report.at(
                Code::MissingStreamletsSection,
                0..0,
                "the blueprint has no [streamlets] table",
                Facts::new().key("streamlets"),
            );
        }
        return;
    };
    if section.entries.is_empty() && section.unusable.is_empty() && !section.malformed {
        report.at(
            Code::EmptyStreamlets,
            section.span.clone(),
            "the [streamlets] table is empty; declare at least one instance as `name = \"type\"`",
            Facts::new().key("streamlets"),
        );
    }
    let descriptor = cx.descriptor.filter(|descriptor| {
        if descriptor.streamlets.is_empty() {
            report.at(
                Code::EmptyStreamletDescriptors,
                section.span.clone(),
                format!(
                    "the descriptor of app '{}' has no streamlet types",
                    descriptor.app
                ),
                Facts::new().app(&descriptor.app),
            );
        }
        !descriptor.streamlets.is_empty()
    });
    let types = descriptor.map(TypeIndex::new);

    for entry in &section.entries {
        let name = &entry.name.value;
        if let Some(problem) = dns_label_problem(name) {
            report.at(
                Code::InvalidStreamletName,
                entry.name.span.clone(),
                format!("invalid streamlet instance name '{name}': {problem}"),
                problem.facts().streamlet(name),
            );
        }
        let declared = match (&entry.sql, &entry.python) {
            (Some(sql), _) => Some(Declared::Sql(sql)),
            (None, Some(python)) => Some(Declared::Python(python)),
            (None, None) => None,
        };
        if let Some(declared) = declared {
            let streamlet = declared_streamlet(cx, types.as_ref(), entry, declared, report);
            let position = cx.instances.len();
            cx.by_name.entry(name.as_str()).or_insert(position);
            cx.instances.push(Instance { entry, streamlet });
            continue;
        }
        let reference = &entry.type_ref;
        let facts = || {
            Facts::new()
                .streamlet(name)
                .streamlet_type(&reference.value)
        };
        let streamlet = if let Some(problem) = type_name_problem(&reference.value) {
            report.at(
                Code::InvalidStreamletClassName,
                reference.span.clone(),
                format!(
                    "invalid streamlet type name '{}': {problem}",
                    reference.value
                ),
                problem
                    .facts()
                    .streamlet(name)
                    .streamlet_type(&reference.value),
            );
            None
        } else if let Some(types) = &types {
            match types.resolve(&reference.value) {
                Ok(position) => {
                    cx.first_use[position].get_or_insert_with(|| reference.span.clone());
                    Some(&types.descriptor.streamlets[position])
                }
                Err(unresolved) => {
                    let (code, message, found) = types.explain(&reference.value, unresolved);
                    let mut facts = facts();
                    facts.suggestions = found.suggestions;
                    facts.candidates = found.candidates;
                    facts.registered_types = found.registered_types;
                    facts.registered_type_count = found.registered_type_count;
                    report.at(code, reference.span.clone(), message, facts);
                    None
                }
            }
        } else {
            None
        };
        let position = cx.instances.len();
        cx.by_name.entry(name.as_str()).or_insert(position);
        cx.instances.push(Instance { entry, streamlet });
    }
}

/// A streamlet the blueprint declares itself rather than naming a type the app registers.
#[derive(Clone, Copy)]
enum Declared<'a> {
    Sql(&'a crate::file::SqlEntry),
    Python(&'a crate::file::PythonEntry),
}

/// The descriptor of a SQL or Python streamlet instance, which the app registered as
/// `sql:<instance>` after planning its query, or `python:<instance>` after describing it;
/// or the problem the app found, reported at its place in the query or at the reference.
fn declared_streamlet<'a>(
    cx: &mut Context<'a>,
    types: Option<&TypeIndex<'a>>,
    entry: &'a crate::file::StreamletEntry,
    declared: Declared<'_>,
    report: &mut Report<'_>,
) -> Option<&'a crate::descriptor::StreamletDescriptor> {
    let name = &entry.name.value;
    let (span, code, kind, key) = match declared {
        Declared::Sql(sql) => (
            &sql.query.span,
            Code::InvalidSqlQuery,
            "SQL",
            if sql.file.is_some() {
                "sql-file"
            } else {
                "sql"
            },
        ),
        Declared::Python(python) => (
            &python.reference.span,
            Code::InvalidPythonStreamlet,
            "Python",
            "python",
        ),
    };
    if let Some(problem) = cx.query_problems.iter().find(|p| p.instance == *name) {
        let message = format!("{kind} streamlet '{name}': {}", problem.message);
        let facts = Facts::new().streamlet(name).key(key);
        // A place in a query of its own file is in that file.
        if let (Declared::Sql(sql), Some((line, column))) = (declared, problem.position)
            && let (Some(file), Some(files)) = (&sql.file, cx.files)
        {
            let at = crate::sql::offset_of(&sql.query.value, line, column);
            let location = crate::Location {
                file: files.path_of(&file.path.value),
                line: usize::try_from(line).unwrap_or(usize::MAX),
                column: usize::try_from(column).unwrap_or(usize::MAX),
                span: at..(at + 1).min(sql.query.value.len()).max(at),
            };
            report.elsewhere(code, location, message, facts);
            return None;
        }
        // A place in a query is one character; a Python streamlet's problem, its reference.
        let range = match declared {
            Declared::Sql(_) => {
                let at = problem.position.map_or(span.start, |(line, column)| {
                    crate::sql::query_offset(report.text(), span, line, column)
                });
                at..(at + 1).min(span.end).max(at)
            }
            Declared::Python(_) => span.clone(),
        };
        report.at(code, range, message, facts);
        return None;
    }
    let types = types?;
    match types
        .exact
        .get(entry.type_ref.value.as_str())
        .map(Vec::as_slice)
    {
        Some([position]) => {
            cx.first_use[*position].get_or_insert_with(|| span.clone());
            Some(&types.descriptor.streamlets[*position])
        }
        _ => {
            // With other errors the app may not have planned or described it; they come
            // first.
            if !report.has_errors() {
                let what = match declared {
                    Declared::Sql(_) => "a SQL query",
                    Declared::Python(_) => "a Python streamlet",
                };
                let how = match declared {
                    Declared::Sql(_) => "plan the query",
                    Declared::Python(_) => "describe it",
                };
                report.at(
                    code,
                    span.clone(),
                    format!(
                        "streamlet '{name}' is {what}, and the app's descriptor does not describe it: \
                         run the app's own `verify` or `run`, which {how}, or describe the app \
                         with this blueprint (`describe --blueprint`)"
                    ),
                    Facts::new().streamlet(name).key(key),
                );
            }
            None
        }
    }
}

impl AppDescriptor {
    /// The streamlet type a blueprint's reference names: the type of exactly that name, or
    /// else the one type whose name ends with it at a segment boundary, as verification
    /// resolves it; `None` when there is no such single type.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::{AppDescriptor, StreamletDescriptor};
    /// let descriptor = AppDescriptor {
    ///     streamlets: vec![StreamletDescriptor { type_name: "sensors::Validate".into(), ..Default::default() }],
    ///     ..Default::default()
    /// };
    /// assert_eq!(descriptor.streamlet_type("Validate").unwrap().type_name, "sensors::Validate");
    /// assert!(descriptor.streamlet_type("Missing").is_none());
    /// ```
    pub fn streamlet_type(
        &self,
        reference: &str,
    ) -> Option<&crate::descriptor::StreamletDescriptor> {
        let position = TypeIndex::new(self).resolve(reference).ok()?;
        self.streamlets.get(position)
    }
}

/// Why a reference names no single type.
#[derive(Debug)]
enum Unresolved {
    /// Several types of exactly that name, or several ending with it (their positions).
    Ambiguous { exact: bool, positions: Vec<usize> },
    /// No type at all.
    NotFound,
}

/// The descriptor's types by exact name and by every segment suffix of their names, so each
/// reference resolves in constant time; the "did you mean" indexes are built on first use.
struct TypeIndex<'d> {
    descriptor: &'d AppDescriptor,
    exact: HashMap<&'d str, Vec<usize>>,
    suffixes: HashMap<&'d str, Vec<usize>>,
    full_names: OnceCell<NameIndex>,
    last_segments: OnceCell<NameIndex>,
}

impl<'d> TypeIndex<'d> {
    fn new(descriptor: &'d AppDescriptor) -> Self {
        let mut exact: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut suffixes: HashMap<&str, Vec<usize>> = HashMap::new();
        for (position, streamlet) in descriptor.streamlets.iter().enumerate() {
            let name = streamlet.type_name.as_str();
            exact.entry(name).or_default().push(position);
            for suffix in segment_suffixes(name) {
                suffixes.entry(suffix).or_default().push(position);
            }
        }
        TypeIndex {
            descriptor,
            exact,
            suffixes,
            full_names: OnceCell::new(),
            last_segments: OnceCell::new(),
        }
    }

    /// The position of the type a reference names: exactly that name, else the one type
    /// whose name ends with it at a segment boundary.
    fn resolve(&self, reference: &str) -> Result<usize, Unresolved> {
        if let Some(positions) = self.exact.get(reference) {
            return match positions[..] {
                [position] => Ok(position),
                _ => Err(Unresolved::Ambiguous {
                    exact: true,
                    positions: positions.clone(),
                }),
            };
        }
        match self.suffixes.get(reference).map(Vec::as_slice) {
            Some([position]) => Ok(*position),
            Some(positions) => Err(Unresolved::Ambiguous {
                exact: false,
                positions: positions.to_vec(),
            }),
            None => Err(Unresolved::NotFound),
        }
    }

    /// The code, message and facts of an unresolved reference.
    fn explain(&self, reference: &str, unresolved: Unresolved) -> (Code, String, Facts) {
        let app = &self.descriptor.app;
        let type_name = |position: usize| self.descriptor.streamlets[position].type_name.as_str();
        match unresolved {
            Unresolved::Ambiguous {
                exact: true,
                positions,
            } => (
                Code::AmbiguousStreamletRef,
                format!(
                    "streamlet type '{reference}' is registered {} times in app '{app}'",
                    positions.len()
                ),
                Facts::new().candidates(positions.iter().map(|&p| type_name(p))),
            ),
            Unresolved::Ambiguous {
                exact: false,
                positions,
            } => {
                let names: Vec<_> = positions
                    .iter()
                    .map(|&p| format!("'{}'", type_name(p)))
                    .collect();
                (
                    Code::AmbiguousStreamletRef,
                    format!(
                        "streamlet type '{reference}' could be any of {}; write the full name",
                        names.join(", ")
                    ),
                    Facts::new().candidates(positions.iter().map(|&p| type_name(p))),
                )
            }
            Unresolved::NotFound => {
                let suggestion = self.suggestion(reference);
                let hint = suggestion
                    .map(|name| format!("; did you mean '{name}'?"))
                    .unwrap_or_default();
                let all = &self.descriptor.streamlets;
                let listed: Vec<&str> = all
                    .iter()
                    .take(TYPES_LISTED)
                    .map(|s| s.type_name.as_str())
                    .collect();
                let more = match all.len() - listed.len() {
                    0 => String::new(),
                    more => format!(", and {more} more"),
                };
                let mut facts = Facts::new()
                    .suggestions(suggestion)
                    .registered_types(listed.iter().copied());
                facts.registered_type_count = Some(all.len() as u64);
                (
                    Code::StreamletDescriptorNotFound,
                    format!(
                        "no streamlet type '{reference}' in app '{app}'{hint} (it registers {}{more})",
                        listed.join(", ")
                    ),
                    facts,
                )
            }
        }
    }

    /// The type name nearest to the reference, comparing full names, then last segments (a
    /// last segment is suggested as written when it names one type, like the reference).
    fn suggestion(&self, reference: &str) -> Option<&'d str> {
        let streamlets = &self.descriptor.streamlets;
        let full = self
            .full_names
            .get_or_init(|| NameIndex::new(streamlets.iter().map(|s| s.type_name.as_str())));
        if let Some(position) = full.nearest(reference) {
            return Some(streamlets[position].type_name.as_str());
        }
        let position = self
            .last_segments
            .get_or_init(|| NameIndex::new(streamlets.iter().map(|s| last_segment(&s.type_name))))
            .nearest(reference)?;
        let type_name = streamlets[position].type_name.as_str();
        let segment = last_segment(type_name);
        Some(if self.resolve(segment).is_ok() {
            segment
        } else {
            type_name
        })
    }
}

/// The last segment of a type name (`Validate` of `sensors::Validate`).
fn last_segment(type_name: &str) -> &str {
    type_name_segments(type_name).last().unwrap_or(type_name)
}

/// Every proper suffix of a type name that starts right after a `::` or `.`: the references
/// that name it by a suffix of whole segments.
fn segment_suffixes(type_name: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = type_name
        .match_indices("::")
        .map(|(at, _)| at + 2)
        .chain(type_name.match_indices('.').map(|(at, _)| at + 1))
        .filter(|&start| start < type_name.len())
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .map(|start| &type_name[start..])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::StreamletDescriptor;

    fn descriptor(types: &[&str]) -> AppDescriptor {
        AppDescriptor {
            descriptor_version: 1,
            app: "demo".into(),
            streamlets: types
                .iter()
                .map(|name| StreamletDescriptor {
                    type_name: (*name).into(),
                    ..StreamletDescriptor::default()
                })
                .collect(),
            ..AppDescriptor::default()
        }
    }

    fn resolve<'d>(
        descriptor: &'d AppDescriptor,
        reference: &str,
    ) -> Result<&'d StreamletDescriptor, (Code, String)> {
        let types = TypeIndex::new(descriptor);
        match types.resolve(reference) {
            Ok(position) => Ok(&descriptor.streamlets[position]),
            Err(unresolved) => {
                let (code, message, _) = types.explain(reference, unresolved);
                Err((code, message))
            }
        }
    }

    #[test]
    fn segment_suffixes_start_after_each_separator() {
        assert_eq!(
            segment_suffixes("app::sensors.Validate"),
            ["sensors.Validate", "Validate"]
        );
        assert!(segment_suffixes("Validate").is_empty());
        assert_eq!(segment_suffixes("a::b.c::d"), ["b.c::d", "c::d", "d"]);
        assert!(segment_suffixes("trailing::").is_empty());
    }

    #[test]
    fn exact_names_win_over_suffixes() {
        let app = descriptor(&["Validate", "sensors::Validate"]);
        assert_eq!(resolve(&app, "Validate").unwrap().type_name, "Validate");
        assert_eq!(
            resolve(&app, "sensors::Validate").unwrap().type_name,
            "sensors::Validate"
        );
    }

    #[test]
    fn unique_suffixes_resolve_and_shared_ones_are_ambiguous() {
        let app = descriptor(&["a::Validate", "b::Validate", "b::Log"]);
        assert_eq!(resolve(&app, "Log").unwrap().type_name, "b::Log");
        let (code, message) = resolve(&app, "Validate").unwrap_err();
        assert_eq!(code, Code::AmbiguousStreamletRef);
        assert!(
            message.contains("'a::Validate', 'b::Validate'"),
            "{message}"
        );
    }

    #[test]
    fn registered_twice_is_ambiguous() {
        let app = descriptor(&["log", "log"]);
        assert_eq!(
            resolve(&app, "log").unwrap_err().0,
            Code::AmbiguousStreamletRef
        );
    }

    #[test]
    fn unknown_types_suggest_the_closest_name() {
        let app = descriptor(&["sensors::Validate", "to-metrics"]);
        let (code, message) = resolve(&app, "to-metric").unwrap_err();
        assert_eq!(code, Code::StreamletDescriptorNotFound);
        assert_eq!(
            message,
            "no streamlet type 'to-metric' in app 'demo'; did you mean 'to-metrics'? \
             (it registers sensors::Validate, to-metrics)"
        );
        let (_, message) = resolve(&app, "Validat").unwrap_err();
        assert!(message.contains("did you mean 'Validate'?"), "{message}");
        let twice = descriptor(&["a::Validate", "b::Validate"]);
        let (_, message) = resolve(&twice, "Validat").unwrap_err();
        assert!(message.contains("did you mean 'a::Validate'?"), "{message}");
    }

    #[test]
    fn long_lists_of_registered_types_are_cut() {
        let names: Vec<String> = (0..25).map(|i| format!("type-{i}")).collect();
        let app = descriptor(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let (_, message) = resolve(&app, "other").unwrap_err();
        assert!(
            message.ends_with("type-18, type-19, and 5 more)"),
            "{message}"
        );
    }
}
