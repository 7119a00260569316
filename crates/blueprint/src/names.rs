//! The naming rules: DNS-1123 labels (instances, ports, volume mounts, clusters, the app),
//! Kafka topic names, streamlet type names and parameter keys.
//!
//! Each function returns why a name is invalid, or `None` when it is valid.

use crate::facts::Facts;

/// The longest DNS-1123 label.
pub(crate) const DNS_LABEL_MAX: usize = 63;
/// The longest Kafka topic name.
pub(crate) const TOPIC_NAME_MAX: usize = 249;
/// The longest streamlet type name or parameter key.
pub(crate) const IDENTIFIER_MAX: usize = 253;

/// Why a name breaks its rule: the reason (lowercase, naming the rule exactly) and the
/// character at fault, when one is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameProblem {
    reason: String,
    character: Option<char>,
}

impl NameProblem {
    fn new(reason: impl Into<String>) -> Self {
        NameProblem {
            reason: reason.into(),
            character: None,
        }
    }

    fn at(character: char, reason: impl Into<String>) -> Self {
        NameProblem {
            reason: reason.into(),
            character: Some(character),
        }
    }

    /// The facts a diagnostic of this problem carries: the character at fault.
    pub(crate) fn facts(&self) -> Facts {
        let mut facts = Facts::new();
        facts.character = self.character.map(String::from);
        facts
    }
}

impl std::fmt::Display for NameProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// A DNS-1123 label: lowercase ASCII letters, digits and `-`, starting and ending with a
/// letter or digit, at most 63 characters.
pub(crate) fn dns_label_problem(name: &str) -> Option<NameProblem> {
    if name.is_empty() {
        return Some(NameProblem::new("it is empty"));
    }
    let length = name.chars().count();
    if length > DNS_LABEL_MAX {
        return Some(NameProblem::new(format!(
            "it has {length} characters, at most {DNS_LABEL_MAX} are allowed"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(NameProblem::at(
            bad,
            format!(
                "'{bad}' is not allowed: a DNS label has only lowercase ASCII letters (a-z), digits (0-9) and '-'"
            ),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some(NameProblem::at(
            '-',
            "it must start and end with a lowercase ASCII letter (a-z) or a digit (0-9), not '-'",
        ));
    }
    None
}

/// Kafka's topic name rules: `[a-zA-Z0-9._-]`, at most 249 characters, not `.` or `..`.
pub(crate) fn topic_name_problem(name: &str) -> Option<NameProblem> {
    if name.is_empty() {
        return Some(NameProblem::new("it is empty"));
    }
    if name == "." || name == ".." {
        return Some(NameProblem::new(format!("'{name}' is reserved")));
    }
    let length = name.chars().count();
    if length > TOPIC_NAME_MAX {
        return Some(NameProblem::new(format!(
            "it has {length} characters, at most {TOPIC_NAME_MAX} are allowed"
        )));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map(|bad| {
            NameProblem::at(
                bad,
                format!(
                    "'{bad}' is not allowed: a topic name has only ASCII letters (a-z, A-Z), digits (0-9), '.', '_' and '-'"
                ),
            )
        })
}

/// A streamlet type name: segments of ASCII letters, digits, `_` and `-`, each starting with
/// an ASCII letter or `_`, joined by `::` or `.` (`to-metrics`, `ToMetrics`,
/// `sensors::Validate`, `com.example.Validate`), at most 253 characters.
pub(crate) fn type_name_problem(name: &str) -> Option<NameProblem> {
    if name.is_empty() {
        return Some(NameProblem::new("it is empty"));
    }
    if name.chars().count() > IDENTIFIER_MAX {
        return Some(NameProblem::new(format!(
            "it is longer than {IDENTIFIER_MAX} characters"
        )));
    }
    for segment in type_name_segments(name) {
        let Some(first) = segment.chars().next() else {
            return Some(NameProblem::new(
                "it has an empty segment (between '::' or '.')",
            ));
        };
        if !(first.is_ascii_alphabetic() || first == '_') {
            return Some(NameProblem::at(
                first,
                format!(
                    "segment '{segment}' starts with '{first}'; a segment must start with an ASCII letter (a-z, A-Z) or '_'"
                ),
            ));
        }
        if let Some(bad) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Some(NameProblem::at(
                bad,
                format!(
                    "'{bad}' is not allowed: a type name has only ASCII letters (a-z, A-Z), digits (0-9), '_' and '-', in segments joined by '::' or '.'"
                ),
            ));
        }
    }
    None
}

/// The segments of a type name, split at `::` and `.`.
pub(crate) fn type_name_segments(name: &str) -> impl Iterator<Item = &str> {
    name.split("::").flat_map(|part| part.split('.'))
}

/// A parameter key: ASCII letters, digits, `-`, `_` and `.`, starting with an ASCII letter and
/// ending with an ASCII letter or digit, at most 253 characters.
pub(crate) fn parameter_key_problem(key: &str) -> Option<NameProblem> {
    if key.is_empty() {
        return Some(NameProblem::new("it is empty"));
    }
    if key.chars().count() > IDENTIFIER_MAX {
        return Some(NameProblem::new(format!(
            "it is longer than {IDENTIFIER_MAX} characters"
        )));
    }
    if let Some(bad) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(NameProblem::at(
            bad,
            format!(
                "'{bad}' is not allowed: a key has only ASCII letters (a-z, A-Z), digits (0-9), '-', '_' and '.'"
            ),
        ));
    }
    if let Some(first) = key.chars().next().filter(|c| !c.is_ascii_alphabetic()) {
        return Some(NameProblem::at(
            first,
            format!("it starts with '{first}'; a key must start with an ASCII letter (a-z, A-Z)"),
        ));
    }
    if let Some(last) = key.chars().last().filter(|c| !c.is_ascii_alphanumeric()) {
        return Some(NameProblem::at(
            last,
            format!(
                "it ends with '{last}'; a key must end with an ASCII letter (a-z, A-Z) or a digit (0-9)"
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        assert_eq!(dns_label_problem("valid-log2"), None);
        assert_eq!(dns_label_problem(&"a".repeat(63)), None);
        assert!(
            dns_label_problem(&"a".repeat(64))
                .unwrap()
                .to_string()
                .contains("64 characters")
        );
        assert!(
            dns_label_problem("Upper")
                .unwrap()
                .to_string()
                .contains("'U'")
        );
        assert!(dns_label_problem("a_b").is_some());
        assert!(dns_label_problem("-a").is_some());
        assert!(dns_label_problem("a-").is_some());
        assert!(dns_label_problem("").is_some());
    }

    #[test]
    fn topic_names_follow_kafka() {
        assert_eq!(topic_name_problem("Sensor_data.v1-x"), None);
        assert!(topic_name_problem(".").is_some());
        assert!(topic_name_problem("..").is_some());
        assert!(topic_name_problem("a b").is_some());
        assert_eq!(topic_name_problem(&"t".repeat(249)), None);
        assert!(topic_name_problem(&"t".repeat(250)).is_some());
    }

    #[test]
    fn type_names_are_identifier_paths() {
        for valid in [
            "to-metrics",
            "ToMetrics",
            "sensors::Validate",
            "com.example.Validate",
            "_x",
        ] {
            assert_eq!(type_name_problem(valid), None, "{valid}");
        }
        for invalid in ["", "9lives", "a::", "a..b", "has space", "a/b", "::a"] {
            assert!(type_name_problem(invalid).is_some(), "{invalid}");
        }
    }

    #[test]
    fn messages_name_the_rule_exactly() {
        let reason = |problem: Option<NameProblem>| problem.unwrap().to_string();
        assert_eq!(
            reason(dns_label_problem("édition")),
            "'é' is not allowed: a DNS label has only lowercase ASCII letters (a-z), digits (0-9) and '-'"
        );
        assert_eq!(
            reason(type_name_problem("sensors::Édition")),
            "segment 'Édition' starts with 'É'; a segment must start with an ASCII letter (a-z, A-Z) or '_'"
        );
        assert_eq!(
            reason(parameter_key_problem("Über")),
            "'Ü' is not allowed: a key has only ASCII letters (a-z, A-Z), digits (0-9), '-', '_' and '.'"
        );
        assert_eq!(
            reason(parameter_key_problem("1st")),
            "it starts with '1'; a key must start with an ASCII letter (a-z, A-Z)"
        );
        assert_eq!(
            dns_label_problem("café")
                .unwrap()
                .facts()
                .character
                .as_deref(),
            Some("é")
        );
    }

    #[test]
    fn parameter_keys() {
        assert_eq!(parameter_key_problem("batch-size"), None);
        assert_eq!(parameter_key_problem("http.port_2"), None);
        assert!(parameter_key_problem("1st").is_some());
        assert!(parameter_key_problem("trailing-").is_some());
        assert!(parameter_key_problem("a b").is_some());
    }
}
