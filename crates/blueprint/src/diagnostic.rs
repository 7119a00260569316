//! One reported problem: its code, severity, message and where it is in the blueprint.

use std::ops::Range;
use std::path::PathBuf;

use serde::Serialize;

use crate::code::{Code, Severity};
use crate::facts::Facts;

/// Where a problem is: the file, the 1-based line and column of the start of the offending
/// text, and its byte span in the file's text.
///
/// Columns count characters, not bytes, as editors do.
///
/// ```
/// use runnel_blueprint::Location;
/// let location = Location { file: "blueprint.toml".into(), line: 3, column: 7, span: 20..25 };
/// assert_eq!(location.to_string(), "blueprint.toml:3:7");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Location {
    /// The blueprint file, as given to [`verify`](crate::verify).
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The byte range of the offending text.
    pub span: Range<usize>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// A problem found in a blueprint, or in the app descriptor it is checked against.
///
/// Problems of the descriptor itself (a bad parameter, a bad port name) are located at the
/// blueprint text that declares an instance of the streamlet type concerned; when no instance
/// uses that type they have no location.
///
/// ```
/// use std::path::Path;
/// use runnel_blueprint::{descriptor::AppDescriptor, verify, Code};
/// let verification = verify(Path::new("blueprint.toml"), "name = \"demo\"\n", &AppDescriptor::default());
/// let diagnostic = &verification.diagnostics[0];
/// assert_eq!(diagnostic.code, Code::MissingStreamletsSection);
/// assert_eq!(diagnostic.to_string(), "error[MissingStreamletsSection]: the blueprint has no [streamlets] table");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The stable problem code.
    pub code: Code,
    /// Error or warning (always the code's [`Code::severity`]).
    pub severity: Severity,
    /// What is wrong, in lowercase, naming the things concerned.
    pub message: String,
    /// Where, when the problem has a place in the blueprint text.
    pub location: Option<Location>,
    /// What the rule knows about the problem (streamlet, type, port path, topic, ...).
    pub facts: Facts,
    /// How to fix it, when the message alone does not say (may span several lines).
    pub help: Option<String>,
}

impl Diagnostic {
    /// Whether this is an error (as opposed to a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]: {}", self.severity, self.code, self.message)
    }
}

/// Maps byte offsets of a text to 1-based lines and columns.
#[derive(Debug)]
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    /// The byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        LineIndex { text, starts }
    }

    /// The byte offset where a 1-based line starts.
    pub(crate) fn start_of(&self, line: usize) -> Option<usize> {
        self.starts.get(line.checked_sub(1)?).copied()
    }

    /// The 1-based line and character column of a byte offset (clamped to the text).
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset);
        let line_start = self.starts[line - 1];
        let column = self.text[line_start..offset].chars().count() + 1;
        (line, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_one_based_and_count_characters() {
        let index = LineIndex::new("ab\ncé d\n");
        assert_eq!(index.line_column(0), (1, 1));
        assert_eq!(index.line_column(1), (1, 2));
        assert_eq!(index.line_column(3), (2, 1));
        assert_eq!(index.line_column(6), (2, 3), "é is two bytes, one column");
        assert_eq!(index.line_column(100), (3, 1), "clamped to the end");
    }
}
