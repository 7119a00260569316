//! The machine-readable report.

use serde::Serialize;

use crate::code::Code;
use crate::code::Severity;
use crate::diagnostic::Diagnostic;
use crate::facts::Facts;

/// One entry of the JSON report.
#[derive(Serialize)]
struct Entry<'d> {
    code: Code,
    severity: Severity,
    message: &'d str,
    file: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    facts: &'d Facts,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'d str>,
}

/// Renders diagnostics as a JSON array of `{code, severity, message, file, line, column,
/// facts, help}` (`file`, `line` and `column` are `null` for a problem without a location;
/// `help` is left out when there is none), pretty-printed, with a final newline.
///
/// `facts` holds what the rule knows (streamlet, streamlet type, port path, topic,
/// parameter, suggestions...); `docs/diagnostics.schema.json` is the JSON Schema of the
/// report.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, render_json, verify};
/// let verification = verify(Path::new("b.toml"), "name = \"demo\"\n", &AppDescriptor::default());
/// let json: serde_json::Value = serde_json::from_str(&render_json(&verification.diagnostics)).unwrap();
/// assert_eq!(json[0]["code"], "MissingStreamletsSection");
/// assert_eq!(json[0]["severity"], "error");
/// assert_eq!((json[0]["line"].as_u64(), json[0]["column"].as_u64()), (Some(1), Some(1)));
/// assert_eq!(json[0]["facts"]["key"], "streamlets");
/// ```
pub fn render_json(diagnostics: &[Diagnostic]) -> String {
    let entries: Vec<Entry<'_>> = diagnostics
        .iter()
        .map(|diagnostic| Entry {
            code: diagnostic.code,
            severity: diagnostic.severity,
            message: &diagnostic.message,
            file: diagnostic
                .location
                .as_ref()
                .map(|l| l.file.display().to_string()),
            line: diagnostic.location.as_ref().map(|l| l.line),
            column: diagnostic.location.as_ref().map(|l| l.column),
            facts: &diagnostic.facts,
            help: diagnostic.help.as_deref(),
        })
        .collect();
    let mut json = serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".into());
    json.push('\n');
    json
}
