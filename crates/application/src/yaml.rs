//! [`to_yaml`]: YAML that Kubernetes' own readers take back exactly as written.
//!
//! kubectl and the API server read YAML 1.1, where plain `y`, `n`, `yes`, `no`, `on` and
//! `off` are booleans; YAML 1.2 writers (such as `serde_norway`) leave them unquoted, so a
//! descriptor's default of `n` came back as `false` through `kubectl apply`. This writer
//! leaves a string plain only when every YAML reader, 1.1 or 1.2, reads it as that string,
//! and quotes everything else.

use serde::Serialize;
use serde_json::{Map, Number, Value};

/// `value` as block-style YAML that YAML 1.1 readers (kubectl, the API server) and YAML 1.2
/// readers both read back as the same value: strings that could read as anything else are
/// double-quoted, multi-line strings are literal blocks (`|`), and empty maps and lists are
/// `{}` and `[]`.
///
/// ```
/// use runnel_application::to_yaml;
/// let yaml = to_yaml(&serde_json::json!({"default": "n", "blueprint": "a = 1\nb = 2\n"}))?;
/// assert_eq!(yaml, "blueprint: |\n  a = 1\n  b = 2\ndefault: \"n\"\n");
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// # Errors
///
/// When `value` does not serialize to JSON (a map with keys that are not strings).
pub fn to_yaml<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(value)?;
    let mut out = String::new();
    match &value {
        Value::Object(map) if !map.is_empty() => mapping(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => sequence(&mut out, items, 0),
        Value::String(text) if is_block(text) => block(&mut out, text, 0),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    Ok(out)
}

/// The entries of `map`, each key at `indent`.
fn mapping(out: &mut String, map: &Map<String, Value>, indent: usize) {
    for (key, value) in map {
        out.push_str(&" ".repeat(indent));
        entry(out, key, value, indent);
    }
}

/// `key: value`, the key already indented to `indent`.
fn entry(out: &mut String, key: &str, value: &Value, indent: usize) {
    out.push_str(&string(key));
    out.push(':');
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            mapping(out, map, indent + 2);
        }
        // As kubectl writes them: the items at the key's indentation.
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            sequence(out, items, indent);
        }
        scalar => after_marker(out, scalar, indent + 2),
    }
}

/// A scalar after a key's `:` or an item's `-`: a space, then a literal block whose lines
/// are at `indent`, or the value on the line.
fn after_marker(out: &mut String, scalar: &Value, indent: usize) {
    out.push(' ');
    match scalar {
        Value::String(text) if is_block(text) => block(out, text, indent),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// The items of `items`, each `- ` at `indent`.
fn sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match item {
            Value::Object(map) if !map.is_empty() => {
                // The first entry on the dash's line, the others under it.
                for (index, (key, value)) in map.iter().enumerate() {
                    if index == 0 {
                        out.push(' ');
                    } else {
                        out.push_str(&" ".repeat(indent + 2));
                    }
                    entry(out, key, value, indent + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                sequence(out, inner, indent + 2);
            }
            scalar => after_marker(out, scalar, indent + 2),
        }
    }
}

/// A scalar, or an empty map or list, on one line.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => self::number(number),
        Value::String(text) => string(text),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// A number; floats always with a `.` (YAML 1.1 reads `1e+3` as a string, `1.0e+3` as a
/// float).
fn number(number: &Number) -> String {
    let text = number.to_string();
    if number.is_f64() && !text.contains('.') {
        match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{mantissa}.0e{exponent}"),
            None => format!("{text}.0"),
        }
    } else {
        text
    }
}

/// The words YAML 1.1 reads as booleans or null when plain, in any of their cases.
const WORDS_1_1: [&str; 11] = [
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "",
];

/// `text` plain when every YAML reader reads it back as this string, else double-quoted
/// (JSON's escapes are YAML's).
fn string(text: &str) -> String {
    let plain = text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '_')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
        && !WORDS_1_1.iter().any(|word| text.eq_ignore_ascii_case(word));
    if plain {
        text.to_owned()
    } else {
        serde_json::to_string(text).expect("a string serializes")
    }
}

/// Whether `text` reads best as a literal block: several lines of printable text whose
/// first line does not start with a space (which would set the block's indentation).
fn is_block(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\t', '\n'])
        && !text
            .chars()
            .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{feff}')
}

/// `text` as a literal block, its lines at `indent`, with the chomping that keeps its
/// trailing line breaks exactly: `|-` none, `|` one, `|+` more.
fn block(out: &mut String, text: &str, indent: usize) {
    let content = text.trim_end_matches('\n');
    let breaks = text.len() - content.len();
    out.push_str(match breaks {
        0 => "|-",
        1 => "|",
        _ => "|+",
    });
    out.push('\n');
    for line in content.split('\n') {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..breaks {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Written, then read back by a YAML 1.2 reader.
    fn round_trip(value: &Value) -> Value {
        let yaml = to_yaml(value).unwrap();
        serde_norway::from_str(&yaml).unwrap_or_else(|error| panic!("{error}:\n{yaml}"))
    }

    #[test]
    fn words_yaml_1_1_reads_otherwise_are_quoted() {
        for word in [
            "n", "N", "y", "Yes", "NO", "on", "Off", "true", "Null", "~", "",
        ] {
            assert_eq!(
                to_yaml(&json!({"a": word})).unwrap(),
                format!("a: {}\n", serde_json::to_string(word).unwrap())
            );
        }
        for looks_like_another_type in ["1", "1e3", "0x1f", "1_000", "12:30", ".inf", "-1", "+1"] {
            let yaml = to_yaml(&json!([looks_like_another_type])).unwrap();
            assert!(yaml.starts_with("- \""), "{yaml}");
        }
        let yaml = to_yaml(&json!({"app.kubernetes.io/name": "sensor-data", "x": "a b"})).unwrap();
        assert_eq!(yaml, "app.kubernetes.io/name: sensor-data\nx: \"a b\"\n");
    }

    #[test]
    fn blocks_keep_their_line_breaks_exactly() {
        for text in [
            "a\nb",
            "a\nb\n",
            "a\nb\n\n\n",
            "a\n\n  indented\n\tand a tab\n",
            "x = \"quoted: #not a comment\"\n",
        ] {
            let value = json!({"text": text, "list": [text, {"nested": text}]});
            assert_eq!(round_trip(&value), value, "{text:?}");
        }
        assert_eq!(to_yaml(&json!({"t": "a\nb"})).unwrap(), "t: |-\n  a\n  b\n");
        // A first line starting with a space, or a control character: double-quoted.
        assert_eq!(to_yaml(&json!({"t": " a\nb"})).unwrap(), "t: \" a\\nb\"\n");
        assert_eq!(
            to_yaml(&json!({"t": "a\rb\n"})).unwrap(),
            "t: \"a\\rb\\n\"\n"
        );
    }

    #[test]
    fn nesting_numbers_and_empty_collections_read_back_the_same() {
        let value = json!({
            "apiVersion": "v1",
            "items": [
                {"name": "a", "ports": [1, 2], "empty": {}, "none": [], "nothing": null},
                [["deep"]],
                1.5,
                1e300,
                -3,
                true,
            ],
            "metadata": {"labels": {"0": "zero", "with space": "v"}},
        });
        assert_eq!(round_trip(&value), value);
        let yaml = to_yaml(&json!([1e300])).unwrap();
        assert_eq!(yaml, "- 1.0e+300\n");
    }
}
