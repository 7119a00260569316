//! Cloudflow 1.x `[connections]`: wired outlets straight to inlets, where Runnel (like
//! Cloudflow 2) wires them through topics. The table is read as far as it goes, reported once
//! with the equivalent `[topics.NAME]` tables as help, and the ports it names are not also
//! reported as unconnected.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::code::Code;
use crate::facts::Facts;
use crate::file::{ConnectionsSection, Located, in_file_order};
use crate::report::Report;

/// Reads what it can of a Cloudflow 1.x `[connections]` table: `outlet = [inlets]` entries,
/// an unquoted dotted key (`ingress.out = [...]`, a nested table in TOML) read as the path.
pub(crate) fn parse(key_span: Range<usize>, value: &Spanned<DeValue<'_>>) -> ConnectionsSection {
    fn collect(
        prefix: &str,
        table: &DeTable<'_>,
        entries: &mut Vec<(Located<String>, Vec<Located<String>>)>,
    ) {
        for (key, value) in in_file_order(table) {
            let path = format!("{prefix}{}", key.get_ref());
            let inlets = match value.get_ref() {
                DeValue::Table(nested) => {
                    collect(&format!("{path}."), nested, entries);
                    continue;
                }
                DeValue::String(inlet) => vec![Located::new(inlet.to_string(), value.span())],
                DeValue::Array(items) => items
                    .iter()
                    .filter_map(|item| match item.get_ref() {
                        DeValue::String(inlet) => {
                            Some(Located::new(inlet.to_string(), item.span()))
                        }
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            entries.push((Located::new(path, key.span()), inlets));
        }
    }
    let mut section = ConnectionsSection {
        span: key_span,
        entries: Vec::new(),
    };
    if let DeValue::Table(table) = value.get_ref() {
        collect("", table, &mut section.entries);
    }
    section
}

/// Cloudflow 1.x wired outlets to inlets in `[connections]`; Runnel wires them through
/// topics. The help shows the topics equivalent to what was written.
pub(crate) fn report(connections: &ConnectionsSection, report: &mut Report<'_>) {
    let mut topics: Vec<String> = connections
        .entries
        .iter()
        .map(|(outlet, inlets)| {
            let id: String = outlet
                .value
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let consumers: Vec<String> =
                inlets.iter().map(|i| format!("\"{}\"", i.value)).collect();
            format!(
                "[topics.{id}]\nproducers = [\"{}\"]\nconsumers = [{}]",
                outlet.value,
                consumers.join(", ")
            )
        })
        .collect();
    if topics.is_empty() {
        topics.push(
            "[topics.NAME]\nproducers = [\"instance.outlet\"]\nconsumers = [\"other-instance.inlet\"]".into(),
        );
    }
    report
        .at(
            Code::BlueprintFormatError,
            connections.span.clone(),
            "[connections] is Cloudflow 1.x syntax: use topics instead; each outlet writes a \
             [topics.NAME] table (its producers) and the inlets connected to it read it (its consumers)",
            Facts::new().key("connections"),
        )
        .help = Some(format!(
        "replace [connections] with topics:\n\n{}",
        topics.join("\n\n")
    ));
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::parse::parse_file;
    use crate::report::Report;

    fn help_of(text: &str) -> String {
        let mut report = Report::new(Path::new("b.toml"), text);
        let file = parse_file(text, &mut report);
        assert!(file.connections.is_some());
        let diagnostics = report.finish();
        diagnostics[0].help.clone().unwrap()
    }

    #[test]
    fn single_inlets_and_dotted_keys_become_topics() {
        assert_eq!(
            help_of("name = \"a\"\n[connections]\ningress.out = \"metrics.in\"\n"),
            "replace [connections] with topics:\n\n[topics.ingress-out]\nproducers = [\"ingress.out\"]\nconsumers = [\"metrics.in\"]"
        );
    }

    #[test]
    fn an_empty_table_gets_a_template() {
        assert!(
            help_of("name = \"a\"\n[connections]\n")
                .ends_with("[topics.NAME]\nproducers = [\"instance.outlet\"]\nconsumers = [\"other-instance.inlet\"]")
        );
    }
}
