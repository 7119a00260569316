//! Label and field selectors, as `?labelSelector=` and `?fieldSelector=` take them.

use serde_json::Value;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parses `a=b,c!=d,e,!f,g in (h,i),j notin (k)`.
    ///
    /// # Errors
    ///
    /// The offending term.
    pub(crate) fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let requirement = if let Some((key, values)) = set_term(term, " notin ") {
                Requirement::NotIn(key, values)
            } else if let Some((key, values)) = set_term(term, " in ") {
                Requirement::In(key, values)
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = term.split_once("==") {
                Requirement::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = term.split_once('=') {
                Requirement::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some(key) = term.strip_prefix('!') {
                Requirement::Absent(key.trim().to_owned())
            } else if term
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                Requirement::Exists(term.to_owned())
            } else {
                return Err(format!("unable to parse requirement: '{term}'"));
            };
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    /// Whether the labels of `object` match.
    pub(crate) fn matches_labels(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.matches(|key| labels.get(key).and_then(Value::as_str).map(str::to_owned))
    }

    /// Whether the fields of `object` match (keys are dotted paths: `metadata.name`).
    pub(crate) fn matches_fields(&self, object: &Value) -> bool {
        self.matches(|key| {
            let mut current = object;
            for part in key.split('.') {
                current = current.get(part)?;
            }
            match current {
                Value::String(text) => Some(text.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            }
        })
    }

    fn matches(&self, value_of: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Equals(key, value) => value_of(key).as_deref() == Some(value),
                Requirement::NotEquals(key, value) => value_of(key).as_deref() != Some(value),
                Requirement::Exists(key) => value_of(key).is_some(),
                Requirement::Absent(key) => value_of(key).is_none(),
                Requirement::In(key, values) => value_of(key).is_some_and(|v| values.contains(&v)),
                Requirement::NotIn(key, values) => {
                    !value_of(key).is_some_and(|v| values.contains(&v))
                }
            })
    }
}

/// Splits at commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn set_term(term: &str, operator: &str) -> Option<(String, Vec<String>)> {
    let (key, rest) = term.split_once(operator)?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some((
        key.trim().to_owned(),
        inner.split(',').map(|v| v.trim().to_owned()).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn selectors_match_as_kubernetes_does() {
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "a", "tier": "web"}}});
        let yes = [
            "app=a",
            "app==a,tier",
            "!missing",
            "tier in (web,db)",
            "app notin (b)",
            "app!=b",
        ];
        for text in yes {
            assert!(
                Selector::parse(text).unwrap().matches_labels(&pod),
                "{text}"
            );
        }
        let no = ["app=b", "missing", "!tier", "tier in (db)", "app notin (a)"];
        for text in no {
            assert!(
                !Selector::parse(text).unwrap().matches_labels(&pod),
                "{text}"
            );
        }
        assert!(
            Selector::parse("metadata.name=p")
                .unwrap()
                .matches_fields(&pod)
        );
    }
}
