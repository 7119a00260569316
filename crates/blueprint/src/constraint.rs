//! Parameter constraints: a range (`min`, `max`, inclusive) for ordered kinds, or allowed
//! values for strings, checked on every value, default included.

use std::cmp::Ordering;

use crate::descriptor::ParameterDescriptor;
use crate::parameter::{ParameterKind, ParameterValue};

impl ParameterDescriptor {
    /// Parses a value of this parameter and checks it against its constraints: its kind
    /// ([`ParameterKind::parse`]), its range and its allowed values.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::ParameterDescriptor;
    /// use runnel_blueprint::parameter::{ParameterKind, ParameterValue};
    /// let mut rate = ParameterDescriptor::new("rate", ParameterKind::Int);
    /// rate.min = Some("1".into());
    /// rate.max = Some("1000".into());
    /// assert_eq!(rate.parse_value("10"), Ok(ParameterValue::Int(10)));
    /// assert_eq!(rate.parse_value("5000"), Err("'5000' is outside the allowed range 1 to 1000".into()));
    ///
    /// let mut level = ParameterDescriptor::new("level", ParameterKind::String);
    /// level.allowed_values = vec!["debug".into(), "info".into()];
    /// assert_eq!(level.parse_value("loud"), Err("'loud' is not one of the allowed values: debug, info".into()));
    /// ```
    ///
    /// # Errors
    ///
    /// A lowercase reason naming the value and what is allowed. Constraints that are
    /// themselves invalid (see [`constraint_problem`](Self::constraint_problem)) are
    /// reported as such.
    pub fn parse_value(&self, text: &str) -> Result<ParameterValue, String> {
        let value = self.kind.parse(text)?;
        if let Some(problem) = self.constraint_problem() {
            return Err(format!(
                "the parameter's constraints are invalid: {problem}"
            ));
        }
        self.check(text, &value)?;
        Ok(value)
    }

    /// What is wrong with the declared constraints, if anything: a range on a kind without
    /// order, a bound that is not a value of the kind, `min` above `max`, allowed values on a
    /// kind other than `string`, or an allowed value listed twice.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::ParameterDescriptor;
    /// use runnel_blueprint::parameter::ParameterKind;
    /// let mut delay = ParameterDescriptor::new("delay", ParameterKind::Duration);
    /// delay.min = Some("5 s".into());
    /// delay.max = Some("1 s".into());
    /// assert_eq!(delay.constraint_problem().unwrap(), "min '5 s' is above max '1 s'");
    /// ```
    pub fn constraint_problem(&self) -> Option<String> {
        let kind = self.kind.name();
        let has_range = self.min.is_some() || self.max.is_some();
        if has_range && !self.kind.is_ordered() {
            return Some(format!(
                "a {kind} parameter cannot have a range (min, max); ranges are for int, double, duration and memory-size"
            ));
        }
        if !self.allowed_values.is_empty() && self.kind != ParameterKind::String {
            return Some(format!(
                "a {kind} parameter cannot have allowed values; they are for string parameters"
            ));
        }
        let bound = |name: &str, text: &Option<String>| -> Result<Option<ParameterValue>, String> {
            text.as_deref()
                .map(|text| {
                    self.kind
                        .parse(text)
                        .map_err(|problem| format!("{name}: {problem}"))
                })
                .transpose()
        };
        let (min, max) = match (bound("min", &self.min), bound("max", &self.max)) {
            (Ok(min), Ok(max)) => (min, max),
            (Err(problem), _) | (_, Err(problem)) => return Some(problem),
        };
        if let (Some(min), Some(max)) = (&min, &max)
            && min.partial_cmp(max) == Some(Ordering::Greater)
        {
            return Some(format!(
                "min '{}' is above max '{}'",
                self.min.as_deref().unwrap_or_default(),
                self.max.as_deref().unwrap_or_default()
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = self
            .allowed_values
            .iter()
            .find(|value| !seen.insert(value.as_str()))
        {
            return Some(format!("allowed value '{twice}' is listed twice"));
        }
        None
    }

    /// What the constraints allow, in words (`1 to 1000`, `at least 1s`, `one of: a, b`),
    /// or `None` when there are none.
    pub fn allowed(&self) -> Option<String> {
        if !self.allowed_values.is_empty() {
            return Some(format!("one of: {}", self.allowed_values.join(", ")));
        }
        match (&self.min, &self.max) {
            (Some(min), Some(max)) => Some(format!("{min} to {max}")),
            (Some(min), None) => Some(format!("at least {min}")),
            (None, Some(max)) => Some(format!("at most {max}")),
            (None, None) => None,
        }
    }

    /// Checks a parsed value against valid constraints.
    fn check(&self, text: &str, value: &ParameterValue) -> Result<(), String> {
        if !self.allowed_values.is_empty() && !self.allowed_values.iter().any(|v| v == text) {
            return Err(format!(
                "'{text}' is not one of the allowed values: {}",
                self.allowed_values.join(", ")
            ));
        }
        let parse = |bound: &Option<String>| bound.as_deref().and_then(|b| self.kind.parse(b).ok());
        let below = parse(&self.min).is_some_and(|min| value < &min);
        let above = parse(&self.max).is_some_and(|max| value > &max);
        if !(below || above) {
            return Ok(());
        }
        Err(match (&self.min, &self.max) {
            (Some(min), Some(max)) => {
                format!("'{text}' is outside the allowed range {min} to {max}")
            }
            (Some(min), None) => format!("'{text}' is below the allowed minimum {min}"),
            (_, Some(max)) => format!("'{text}' is above the allowed maximum {max}"),
            (None, None) => unreachable!("a value out of range has a bound"),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ranged(kind: ParameterKind, min: Option<&str>, max: Option<&str>) -> ParameterDescriptor {
        let mut parameter = ParameterDescriptor::new("p", kind);
        parameter.min = min.map(Into::into);
        parameter.max = max.map(Into::into);
        parameter
    }

    #[test]
    fn ranges_are_inclusive_and_compare_by_value() {
        let delay = ranged(ParameterKind::Duration, Some("500 ms"), Some("1 m"));
        assert_eq!(
            delay.parse_value("0.5 s"),
            Ok(ParameterValue::Duration(Duration::from_millis(500)))
        );
        assert!(delay.parse_value("60s").is_ok());
        assert_eq!(
            delay.parse_value("61s"),
            Err("'61s' is outside the allowed range 500 ms to 1 m".into())
        );
        let buffer = ranged(ParameterKind::MemorySize, None, Some("1 MiB"));
        assert_eq!(
            buffer.parse_value("2M"),
            Err("'2M' is above the allowed maximum 1 MiB".into())
        );
        let ratio = ranged(ParameterKind::Double, Some("0"), None);
        assert_eq!(
            ratio.parse_value("-0.5"),
            Err("'-0.5' is below the allowed minimum 0".into())
        );
        assert_eq!(ratio.allowed().as_deref(), Some("at least 0"));
    }

    #[test]
    fn invalid_constraints_are_named() {
        let problem = |p: ParameterDescriptor| p.constraint_problem().unwrap();
        assert!(
            problem(ranged(ParameterKind::Bool, Some("false"), None))
                .contains("cannot have a range")
        );
        assert_eq!(
            problem(ranged(ParameterKind::Int, Some("one"), None)),
            "min: 'one' is not an integer"
        );
        let mut level = ParameterDescriptor::new("level", ParameterKind::Int);
        level.allowed_values = vec!["1".into()];
        assert!(problem(level).contains("cannot have allowed values"));
        let mut twice = ParameterDescriptor::new("level", ParameterKind::String);
        twice.allowed_values = vec!["a".into(), "a".into()];
        assert_eq!(problem(twice.clone()), "allowed value 'a' is listed twice");
        assert!(
            twice
                .parse_value("a")
                .unwrap_err()
                .starts_with("the parameter's constraints are invalid")
        );
        assert_eq!(
            ranged(ParameterKind::Int, None, None).constraint_problem(),
            None
        );
    }
}
