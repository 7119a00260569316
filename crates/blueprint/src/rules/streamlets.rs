//! The `[streamlets]` table: `MissingStreamletsSection`, `EmptyStreamlets`,
//! `EmptyStreamletDescriptors`, `InvalidStreamletName`, `InvalidStreamletClassName`,
//! `StreamletDescriptorNotFound`, `AmbiguousStreamletRef`.
//!
//! A type reference resolves to the descriptor type of exactly that name; failing that, to
//! the one type whose name ends with the reference at a segment boundary (`Validate` refers
//! to `sensors::Validate`), as Cloudflow let a class be named by its simple name.

use crate::code::Code;
use crate::descriptor::{AppDescriptor, StreamletDescriptor};
use crate::names::{dns_label_problem, is_segment_suffix, type_name_problem, type_name_segments};
use crate::report::Report;
use crate::rules::{Context, Instance};
use crate::suggest::closest;

/// Checks the instances and resolves their types, filling `cx.instances`.
pub(crate) fn check<'a>(cx: &mut Context<'a>, report: &mut Report<'_>) {
    let file = cx.file;
    let Some(section) = &file.streamlets else {
        if !file.had_syntax_errors {
            report.at(
                Code::MissingStreamletsSection,
                0..0,
                "the blueprint has no [streamlets] table",
            );
        }
        return;
    };
    if section.entries.is_empty() && !section.malformed {
        report.at(
            Code::EmptyStreamlets,
            section.span.clone(),
            "the [streamlets] table is empty; declare at least one instance as `name = \"type\"`",
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
            );
        }
        !descriptor.streamlets.is_empty()
    });

    for entry in &section.entries {
        if let Some(problem) = dns_label_problem(&entry.name.value) {
            report.at(
                Code::InvalidStreamletName,
                entry.name.span.clone(),
                format!(
                    "invalid streamlet instance name '{}': {problem}",
                    entry.name.value
                ),
            );
        }
        let reference = &entry.type_ref;
        let streamlet = if let Some(problem) = type_name_problem(&reference.value) {
            report.at(
                Code::InvalidStreamletClassName,
                reference.span.clone(),
                format!(
                    "invalid streamlet type name '{}': {problem}",
                    reference.value
                ),
            );
            None
        } else if let Some(descriptor) = descriptor {
            match resolve(descriptor, &reference.value) {
                Ok(streamlet) => Some(streamlet),
                Err((code, message)) => {
                    report.at(code, reference.span.clone(), message);
                    None
                }
            }
        } else {
            None
        };
        cx.instances.push(Instance { entry, streamlet });
    }
}

/// The streamlet type a reference names, or the code and message saying why none.
fn resolve<'d>(
    descriptor: &'d AppDescriptor,
    reference: &str,
) -> Result<&'d StreamletDescriptor, (Code, String)> {
    let exact: Vec<_> = descriptor
        .streamlets
        .iter()
        .filter(|streamlet| streamlet.type_name == reference)
        .collect();
    match exact[..] {
        [streamlet] => return Ok(streamlet),
        [_, _, ..] => {
            return Err((
                Code::AmbiguousStreamletRef,
                format!(
                    "streamlet type '{reference}' is registered {} times in app '{}'",
                    exact.len(),
                    descriptor.app
                ),
            ));
        }
        [] => {}
    }
    let by_suffix: Vec<_> = descriptor
        .streamlets
        .iter()
        .filter(|streamlet| is_segment_suffix(reference, &streamlet.type_name))
        .collect();
    match by_suffix[..] {
        [streamlet] => Ok(streamlet),
        [_, _, ..] => {
            let names: Vec<_> = by_suffix
                .iter()
                .map(|s| format!("'{}'", s.type_name))
                .collect();
            Err((
                Code::AmbiguousStreamletRef,
                format!(
                    "streamlet type '{reference}' could be any of {}; write the full name",
                    names.join(", ")
                ),
            ))
        }
        [] => {
            let hint = suggestion(descriptor, reference)
                .map(|name| format!("; did you mean '{name}'?"))
                .unwrap_or_default();
            Err((
                Code::StreamletDescriptorNotFound,
                format!(
                    "no streamlet type '{reference}' in app '{}'{hint}",
                    descriptor.app
                ),
            ))
        }
    }
}

/// The type name closest to the reference, comparing full names and last segments.
fn suggestion<'d>(descriptor: &'d AppDescriptor, reference: &str) -> Option<&'d str> {
    let full = descriptor.streamlets.iter().map(|s| s.type_name.as_str());
    closest(reference, full).or_else(|| {
        let last_segment = |name: &'d str| type_name_segments(name).last().unwrap_or(name);
        let last = descriptor
            .streamlets
            .iter()
            .map(|s| last_segment(&s.type_name));
        closest(reference, last)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(message.ends_with("did you mean 'to-metrics'?"), "{message}");
        let (_, message) = resolve(&app, "Validat").unwrap_err();
        assert!(message.ends_with("did you mean 'Validate'?"), "{message}");
    }
}
