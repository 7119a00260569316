//! Resolving the parameter values of a streamlet instance before it starts.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use runnel_blueprint::descriptor::ParameterDescriptor;
use runnel_blueprint::parameter::ParameterValue;

/// A parameter value that is missing, unknown or invalid, with the streamlet and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterError {
    /// The streamlet instance.
    pub instance: String,
    /// The parameter key.
    pub key: String,
    /// What is wrong, in lowercase.
    pub reason: String,
}

impl fmt::Display for ParameterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "streamlet '{}', parameter '{}': {}",
            self.instance, self.key, self.reason
        )
    }
}

impl std::error::Error for ParameterError {}

/// Checks the values provided for one instance (as text, from the config file and `--set`)
/// against its declared parameters, filling in defaults. Reports every problem at once.
///
/// ```
/// use std::collections::BTreeMap;
/// use runnel_blueprint::descriptor::ParameterDescriptor;
/// use runnel_blueprint::parameter::{ParameterKind, ParameterValue};
/// use runnel_streamlet::resolve_parameters;
///
/// let declared = [ParameterDescriptor {
///     key: "rate".into(), description: String::new(), kind: ParameterKind::Int, default: None,
/// }];
/// let provided = BTreeMap::from([("rate".to_string(), "ten".to_string())]);
/// let errors = resolve_parameters("generator", &declared, &provided).unwrap_err();
/// assert_eq!(errors[0].to_string(), "streamlet 'generator', parameter 'rate': 'ten' is not an integer");
/// ```
///
/// # Errors
///
/// Every required parameter without a value, every unknown key and every invalid value.
pub fn resolve_parameters(
    instance: &str,
    declared: &[ParameterDescriptor],
    provided: &BTreeMap<String, String>,
) -> Result<HashMap<String, ParameterValue>, Vec<ParameterError>> {
    let error = |key: &str, reason: String| ParameterError {
        instance: instance.to_owned(),
        key: key.to_owned(),
        reason,
    };
    let mut values = HashMap::new();
    let mut errors = Vec::new();
    for parameter in declared {
        let text = provided.get(&parameter.key).or(parameter.default.as_ref());
        let Some(text) = text else {
            errors.push(error(
                &parameter.key,
                "required, but no value was given".to_owned(),
            ));
            continue;
        };
        match parameter.kind.parse(text) {
            Ok(value) => {
                values.insert(parameter.key.clone(), value);
            }
            Err(reason) => errors.push(error(&parameter.key, reason)),
        }
    }
    for key in provided.keys() {
        if !declared.iter().any(|parameter| &parameter.key == key) {
            let known: Vec<&str> = declared.iter().map(|p| p.key.as_str()).collect();
            let reason = if known.is_empty() {
                "unknown parameter; the streamlet has none".to_owned()
            } else {
                format!("unknown parameter; the streamlet has: {}", known.join(", "))
            };
            errors.push(error(key, reason));
        }
    }
    if errors.is_empty() {
        Ok(values)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_blueprint::parameter::ParameterKind;

    fn declared(key: &str, kind: ParameterKind, default: Option<&str>) -> ParameterDescriptor {
        ParameterDescriptor {
            key: key.into(),
            description: String::new(),
            kind,
            default: default.map(Into::into),
        }
    }

    #[test]
    fn defaults_fill_in_and_provided_values_win() {
        let declared = [
            declared("rate", ParameterKind::Int, Some("10")),
            declared("name", ParameterKind::String, Some("x")),
        ];
        let provided = BTreeMap::from([("name".to_string(), "y".to_string())]);
        let values = resolve_parameters("g", &declared, &provided).unwrap();
        assert_eq!(values["rate"], ParameterValue::Int(10));
        assert_eq!(values["name"], ParameterValue::String("y".into()));
    }

    #[test]
    fn every_problem_is_reported() {
        let declared = [
            declared("required", ParameterKind::Int, None),
            declared("bad", ParameterKind::Duration, Some("5s")),
        ];
        let provided = BTreeMap::from([
            ("bad".to_string(), "soon".to_string()),
            ("typo".to_string(), "1".to_string()),
        ]);
        let errors = resolve_parameters("g", &declared, &provided).unwrap_err();
        let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["required", "bad", "typo"]);
        assert!(
            errors[2]
                .reason
                .contains("the streamlet has: required, bad")
        );
    }
}
