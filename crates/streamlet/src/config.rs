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

/// What replaces a secret value in messages.
const REDACTED: &str = "[redacted]";

/// Checks the values provided for one instance (as text, from the config file and `--set`)
/// against its declared parameters, filling in defaults. Reports every problem at once.
///
/// A value must be of the parameter's type, within its range (`min`, `max`) and among its
/// allowed values, if it declares them; the error names the streamlet, the key, the value
/// and what is allowed.
///
/// ```
/// use std::collections::BTreeMap;
/// use runnel_blueprint::descriptor::ParameterDescriptor;
/// use runnel_blueprint::parameter::{ParameterKind, ParameterValue};
/// use runnel_streamlet::resolve_parameters;
///
/// let mut rate = ParameterDescriptor::new("rate", ParameterKind::Int);
/// rate.max = Some("1000".into());
/// let declared = [rate];
/// let provided = BTreeMap::from([("rate".to_string(), "ten".to_string())]);
/// let errors = resolve_parameters("generator", &declared, &provided).unwrap_err();
/// assert_eq!(errors[0].to_string(), "streamlet 'generator', parameter 'rate': 'ten' is not an integer");
///
/// let provided = BTreeMap::from([("rate".to_string(), "5000".to_string())]);
/// let errors = resolve_parameters("generator", &declared, &provided).unwrap_err();
/// assert_eq!(errors[0].to_string(), "streamlet 'generator', parameter 'rate': '5000' is above the allowed maximum 1000");
/// ```
///
/// # Errors
///
/// Every required parameter without a value, every unknown key, every invalid value and
/// every value its constraints do not allow.
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
        match parameter.parse_value(text) {
            Ok(value) => {
                values.insert(parameter.key.clone(), value);
            }
            Err(reason) if parameter.secret && !text.is_empty() => {
                errors.push(error(
                    &parameter.key,
                    reason.replace(text.as_str(), REDACTED),
                ));
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
        let mut parameter = ParameterDescriptor::new(key, kind);
        parameter.default = default.map(Into::into);
        parameter
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
    fn secret_values_are_never_shown() {
        let mut pin = declared("pin", ParameterKind::Int, None);
        pin.secret = true;
        let mut token = declared("token", ParameterKind::String, None);
        token.secret = true;
        token.allowed_values = vec!["a".into(), "b".into()];
        let provided = BTreeMap::from([
            ("pin".to_string(), "canary-1234".to_string()),
            ("token".to_string(), "canary-abcd".to_string()),
        ]);
        let errors = resolve_parameters("g", &[pin, token], &provided).unwrap_err();
        assert_eq!(errors.len(), 2);
        for error in errors {
            let text = error.to_string();
            assert!(!text.contains("canary"), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
        }
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

    #[test]
    fn values_outside_the_constraints_name_the_value_and_what_is_allowed() {
        let mut delay = declared("delay", ParameterKind::Duration, Some("1 s"));
        delay.min = Some("500 ms".into());
        delay.max = Some("1 m".into());
        let mut level = declared("level", ParameterKind::String, Some("info"));
        level.allowed_values = vec!["debug".into(), "info".into()];
        let declared = [delay, level];

        let within = BTreeMap::from([("delay".to_string(), "42 s".to_string())]);
        let values = resolve_parameters("g", &declared, &within).unwrap();
        assert_eq!(
            values["delay"],
            ParameterValue::Duration(std::time::Duration::from_secs(42))
        );

        let outside = BTreeMap::from([
            ("delay".to_string(), "2 minutes".to_string()),
            ("level".to_string(), "loud".to_string()),
        ]);
        let messages: Vec<String> = resolve_parameters("g", &declared, &outside)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            messages,
            [
                "streamlet 'g', parameter 'delay': '2 minutes' is outside the allowed range 500 ms to 1 m",
                "streamlet 'g', parameter 'level': 'loud' is not one of the allowed values: debug, info",
            ]
        );
    }
}
