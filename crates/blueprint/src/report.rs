//! Collects diagnostics while the rules run, locating spans in the blueprint text.

use std::ops::Range;
use std::path::Path;

use crate::code::Code;
use crate::diagnostic::{Diagnostic, LineIndex, Location};

/// The diagnostics of one verification, in the order found; [`Report::finish`] sorts them.
#[derive(Debug)]
pub(crate) struct Report<'a> {
    file: &'a Path,
    lines: LineIndex<'a>,
    diagnostics: Vec<Diagnostic>,
}

impl<'a> Report<'a> {
    pub(crate) fn new(file: &'a Path, text: &'a str) -> Self {
        Report {
            file,
            lines: LineIndex::new(text),
            diagnostics: Vec::new(),
        }
    }

    /// Reports a problem at a byte span of the text.
    pub(crate) fn at(&mut self, code: Code, span: Range<usize>, message: impl Into<String>) {
        let (line, column) = self.lines.line_column(span.start);
        let location = Location {
            file: self.file.to_owned(),
            line,
            column,
            span,
        };
        self.push(code, Some(location), message.into());
    }

    /// Reports a problem at a span when there is one, else without a location.
    pub(crate) fn maybe_at(
        &mut self,
        code: Code,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) {
        match span {
            Some(span) => self.at(code, span, message),
            None => self.push(code, None, message.into()),
        }
    }

    fn push(&mut self, code: Code, location: Option<Location>, message: String) {
        self.diagnostics.push(Diagnostic {
            code,
            severity: code.severity(),
            message,
            location,
        });
    }

    /// The diagnostics sorted by position (unlocated ones last), then code and message, with
    /// exact repeats removed, so that the output is deterministic.
    pub(crate) fn finish(self) -> Vec<Diagnostic> {
        let mut diagnostics = self.diagnostics;
        diagnostics.sort_by(|a, b| {
            let position = |d: &Diagnostic| {
                d.location
                    .as_ref()
                    .map_or((usize::MAX, usize::MAX), |l| (l.span.start, l.span.end))
            };
            position(a)
                .cmp(&position(b))
                .then(a.code.cmp(&b.code))
                .then_with(|| a.message.cmp(&b.message))
        });
        diagnostics.dedup();
        diagnostics
    }
}
