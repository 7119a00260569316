//! The rustc-style report: each problem with its location, source line and underline.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar;

use crate::code::Severity;
use crate::diagnostic::{Diagnostic, LineIndex, Location};
use crate::files::BlueprintFiles;

/// Renders diagnostics for a terminal, like rustc: a header `error[Code]: message`, the
/// location ` --> file:line:column`, the quoted source line with the offending text
/// underlined, a `= help:` note when the diagnostic has one, and a summary line at the end.
///
/// The underline is aligned by display width: a wide character (CJK, most emoji) takes two
/// columns, a combining mark none, a tab four.
///
/// `text` is the blueprint text the diagnostics were found in.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, render_human, verify};
/// let text = "name = \"Demo\"\n[streamlets]\n";
/// let verification = verify(Path::new("blueprint.toml"), text, &AppDescriptor::default());
/// let report = render_human(&verification.diagnostics, text);
/// assert!(report.starts_with("error[InvalidAppName]: invalid app name 'Demo'"));
/// assert!(report.contains(" --> blueprint.toml:1:8\n  |\n1 | name = \"Demo\"\n  |        ^^^^^^\n"));
/// assert!(report.ends_with("verification failed: 3 errors\n"), "{report}");
/// ```
pub fn render_human(diagnostics: &[Diagnostic], text: &str) -> String {
    render_human_with_files(diagnostics, text, &BlueprintFiles::default())
}

/// [`render_human`], quoting a problem in a query's own file (`sql-file`) from that file's
/// text in `files`.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, render_human_with_files, verify_with_queries, QueryProblem, BlueprintFiles};
/// let text = "name = \"demo\"\n[streamlets.hot]\nsql-file = \"hot.sql\"\n";
/// let files = BlueprintFiles::read(Path::new("blueprint.toml"), text, |_| Ok("SELECT sensr\nFROM readings\n".into()));
/// let problem = QueryProblem { instance: "hot".into(), message: "no field named sensr".into(), position: Some((1, 8)) };
/// let verification = verify_with_queries(Path::new("blueprint.toml"), text, &AppDescriptor::default(), None, &[problem], &files);
/// let report = render_human_with_files(&verification.diagnostics, text, &files);
/// assert!(report.contains(" --> hot.sql:1:8\n  |\n1 | SELECT sensr\n  |        ^\n"), "{report}");
/// ```
pub fn render_human_with_files(
    diagnostics: &[Diagnostic],
    text: &str,
    files: &BlueprintFiles,
) -> String {
    let width = diagnostics
        .iter()
        .filter_map(|d| d.location.as_ref())
        .map(|location| location.line.to_string().len())
        .max()
        .unwrap_or(1);
    let lines = LineIndex::new(text);
    let mut out = String::new();
    for diagnostic in diagnostics {
        let _ = writeln!(out, "{diagnostic}");
        if let Some(location) = &diagnostic.location {
            let _ = writeln!(out, "{:width$}--> {location}", "");
            match files.text_of(&location.file) {
                Some(query) => quote(&mut out, location, query, &LineIndex::new(query), width),
                None => quote(&mut out, location, text, &lines, width),
            }
        }
        if let Some(help) = &diagnostic.help {
            let mut help_lines = help.lines();
            let _ = writeln!(
                out,
                "{:width$} = help: {}",
                "",
                help_lines.next().unwrap_or_default()
            );
            for line in help_lines {
                let indented = format!("{:width$}         {line}", "");
                let _ = writeln!(out, "{}", indented.trim_end());
            }
        }
        out.push('\n');
    }
    out.push_str(&summary(diagnostics));
    out.push('\n');
    out
}

/// The quoted line and the underline of the span's part on that line.
fn quote(out: &mut String, location: &Location, text: &str, lines: &LineIndex<'_>, width: usize) {
    let Some(line_start) = lines.start_of(location.line) else {
        return;
    };
    let Some(line) = text.get(line_start..).and_then(|rest| rest.lines().next()) else {
        return;
    };
    // A line setting a secret is shown masked, underlined at its key.
    if let Some((shown, key_end)) = crate::secrets::masked(line) {
        let gutter = format!("{:width$} |", "");
        let indent = shown.len() - shown.trim_start().len();
        let _ = writeln!(out, "{gutter}");
        let _ = writeln!(out, "{:>width$} | {shown}", location.line);
        let _ = writeln!(
            out,
            "{gutter} {}{}",
            " ".repeat(indent),
            "^".repeat(key_end.saturating_sub(indent).max(1))
        );
        return;
    }
    let start = location
        .span
        .start
        .saturating_sub(line_start)
        .min(line.len());
    let end = location
        .span
        .end
        .saturating_sub(line_start)
        .clamp(start, line.len());
    let (Some(before), Some(marked)) = (line.get(..start), line.get(start..end)) else {
        return;
    };
    let columns = |part: &str| {
        part.chars()
            .map(|c| if c == '\t' { 4 } else { c.width().unwrap_or(0) })
            .sum::<usize>()
    };
    let gutter = format!("{:width$} |", "");
    let _ = writeln!(out, "{gutter}");
    let _ = writeln!(
        out,
        "{:>width$} | {}",
        location.line,
        line.replace('\t', "    ")
    );
    let _ = writeln!(
        out,
        "{gutter} {}{}",
        " ".repeat(columns(before)),
        "^".repeat(columns(marked).max(1))
    );
}

fn summary(diagnostics: &[Diagnostic]) -> String {
    let count = |severity| {
        diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    };
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (count(Severity::Error), count(Severity::Warning)) {
        (0, 0) => "verification passed: no problems found".into(),
        (0, warnings) => format!("verification passed with {}", plural(warnings, "warning")),
        (errors, 0) => format!("verification failed: {}", plural(errors, "error")),
        (errors, warnings) => format!(
            "verification failed: {}, {}",
            plural(errors, "error"),
            plural(warnings, "warning")
        ),
    }
}
