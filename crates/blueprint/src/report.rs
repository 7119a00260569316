//! Collects diagnostics while the rules run, locating spans in the blueprint text.

use std::ops::Range;
use std::path::Path;

use crate::code::Code;
use crate::diagnostic::{Diagnostic, LineIndex, Location};
use crate::facts::Facts;

/// The diagnostics of one verification, in the order found; [`Report::finish`] sorts them.
#[derive(Debug)]
pub(crate) struct Report<'a> {
    file: &'a Path,
    text: &'a str,
    lines: LineIndex<'a>,
    diagnostics: Vec<Diagnostic>,
}

impl<'a> Report<'a> {
    pub(crate) fn new(file: &'a Path, text: &'a str) -> Self {
        Report {
            file,
            text,
            lines: LineIndex::new(text),
            diagnostics: Vec::new(),
        }
    }

    /// Reports a problem at a byte span of the text; the returned diagnostic can take a
    /// `help` text.
    pub(crate) fn at(
        &mut self,
        code: Code,
        span: Range<usize>,
        message: impl Into<String>,
        facts: Facts,
    ) -> &mut Diagnostic {
        let location = self.locate(span);
        self.push(code, Some(location), message.into(), facts)
    }

    /// Reports a problem at a span when there is one, else without a location.
    pub(crate) fn maybe_at(
        &mut self,
        code: Code,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        facts: Facts,
    ) -> &mut Diagnostic {
        let location = span.map(|span| self.locate(span));
        self.push(code, location, message.into(), facts)
    }

    /// Reports a problem at `location`, in another file than the blueprint (a query's
    /// own file).
    pub(crate) fn elsewhere(
        &mut self,
        code: Code,
        location: Location,
        message: impl Into<String>,
        facts: Facts,
    ) -> &mut Diagnostic {
        self.push(code, Some(location), message.into(), facts)
    }

    /// The blueprint's text.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// Whether an error is reported already.
    pub(crate) fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The 1-based line of a byte offset.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.lines.line_column(offset).0
    }

    fn locate(&self, span: Range<usize>) -> Location {
        let (line, column) = self.lines.line_column(span.start);
        Location {
            file: self.file.to_owned(),
            line,
            column,
            span,
        }
    }

    fn push(
        &mut self,
        code: Code,
        location: Option<Location>,
        message: String,
        facts: Facts,
    ) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic {
            code,
            severity: code.severity(),
            message,
            location,
            facts,
            help: None,
        });
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// The diagnostics sorted by position (unlocated ones last), then code and message, with
    /// exact repeats removed, so that the output is deterministic.
    pub(crate) fn finish(self) -> Vec<Diagnostic> {
        let mut diagnostics = self.diagnostics;
        let blueprint = self.file;
        // The blueprint's first, then other files' (queries' own) by name.
        diagnostics.sort_by(|a, b| {
            fn position<'d>(
                d: &'d Diagnostic,
                blueprint: &Path,
            ) -> (bool, Option<&'d Path>, usize, usize) {
                d.location.as_ref().map_or((true, None, 0, 0), |l| {
                    let elsewhere = (l.file != blueprint).then_some(l.file.as_path());
                    (false, elsewhere, l.span.start, l.span.end)
                })
            }
            position(a, blueprint)
                .cmp(&position(b, blueprint))
                .then(a.code.cmp(&b.code))
                .then_with(|| a.message.cmp(&b.message))
        });
        diagnostics.dedup();
        diagnostics
    }
}
