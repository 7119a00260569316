//! The naming rules: DNS-1123 labels (instances, ports, volume mounts, clusters, the app),
//! Kafka topic names, streamlet type names and parameter keys.
//!
//! Each function returns why a name is invalid, or `None` when it is valid.

/// The longest DNS-1123 label.
pub(crate) const DNS_LABEL_MAX: usize = 63;
/// The longest Kafka topic name.
pub(crate) const TOPIC_NAME_MAX: usize = 249;
/// The longest streamlet type name or parameter key.
pub(crate) const IDENTIFIER_MAX: usize = 253;

/// A DNS-1123 label: lowercase letters, digits and `-`, starting and ending with a letter or
/// digit, at most 63 characters.
pub(crate) fn dns_label_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    let length = name.chars().count();
    if length > DNS_LABEL_MAX {
        return Some(format!(
            "it has {length} characters, at most {DNS_LABEL_MAX} are allowed"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!(
            "'{bad}' is not allowed (use lowercase letters, digits and '-')"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it must start and end with a letter or digit".into());
    }
    None
}

/// Kafka's topic name rules: `[a-zA-Z0-9._-]`, at most 249 characters, not `.` or `..`.
pub(crate) fn topic_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name == "." || name == ".." {
        return Some(format!("'{name}' is reserved"));
    }
    let length = name.chars().count();
    if length > TOPIC_NAME_MAX {
        return Some(format!(
            "it has {length} characters, at most {TOPIC_NAME_MAX} are allowed"
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map(|bad| format!("'{bad}' is not allowed (use letters, digits, '.', '_' and '-')"))
}

/// A streamlet type name: segments of letters, digits, `_` and `-`, each starting with a
/// letter or `_`, joined by `::` or `.` (`to-metrics`, `ToMetrics`, `sensors::Validate`,
/// `com.example.Validate`), at most 253 characters.
pub(crate) fn type_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.chars().count() > IDENTIFIER_MAX {
        return Some(format!("it is longer than {IDENTIFIER_MAX} characters"));
    }
    for segment in type_name_segments(name) {
        let Some(first) = segment.chars().next() else {
            return Some("it has an empty segment (between '::' or '.')".into());
        };
        if !(first.is_ascii_alphabetic() || first == '_') {
            return Some(format!(
                "segment '{segment}' must start with a letter or '_'"
            ));
        }
        if let Some(bad) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Some(format!(
                "'{bad}' is not allowed (use letters, digits, '_', '-', joined by '::' or '.')"
            ));
        }
    }
    None
}

/// The segments of a type name, split at `::` and `.`.
pub(crate) fn type_name_segments(name: &str) -> impl Iterator<Item = &str> {
    name.split("::").flat_map(|part| part.split('.'))
}

/// Whether `reference` names `type_name` by a suffix of whole segments (`Validate` and
/// `sensors::Validate` both refer to `app::sensors::Validate`).
pub(crate) fn is_segment_suffix(reference: &str, type_name: &str) -> bool {
    type_name.len() > reference.len() && type_name.ends_with(reference) && {
        let head = &type_name[..type_name.len() - reference.len()];
        head.ends_with("::") || head.ends_with('.')
    }
}

/// A parameter key: letters, digits, `-`, `_` and `.`, starting with a letter and ending with
/// a letter or digit, at most 253 characters.
pub(crate) fn parameter_key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("it is empty".into());
    }
    if key.chars().count() > IDENTIFIER_MAX {
        return Some(format!("it is longer than {IDENTIFIER_MAX} characters"));
    }
    if let Some(bad) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!(
            "'{bad}' is not allowed (use letters, digits, '-', '_' and '.')"
        ));
    }
    let starts_well = key.starts_with(|c: char| c.is_ascii_alphabetic());
    let ends_well = key.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !starts_well || !ends_well {
        return Some("it must start with a letter and end with a letter or digit".into());
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
                .contains("64 characters")
        );
        assert!(dns_label_problem("Upper").unwrap().contains("'U'"));
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
    fn suffix_references_match_whole_segments() {
        assert!(is_segment_suffix("Validate", "sensors::Validate"));
        assert!(is_segment_suffix(
            "sensors::Validate",
            "app::sensors::Validate"
        ));
        assert!(is_segment_suffix("Validate", "com.example.Validate"));
        assert!(!is_segment_suffix("alidate", "sensors::Validate"));
        assert!(!is_segment_suffix("Validate", "Validate"));
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
