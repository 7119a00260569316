//! [`Compatibility`]: the rule a topic's schemas keep as they change, as schema registries
//! name it, and [`Compatibility::check`], which says which registered version a new schema
//! breaks, and how.

use crate::descriptor::SchemaDescriptor;

/// The rule a topic's schemas keep as they change (a topic's `compatibility` in the
/// blueprint; BACKWARD unless set). The names and meanings are the Confluent schema
/// registry's:
///
/// - **BACKWARD**: a reader of the new schema reads records written with the latest
///   registered one (add fields with defaults, remove fields). Readers can move first.
/// - **FORWARD**: a reader of the latest registered schema reads records written with the
///   new one (add fields, remove fields that have defaults). Writers can move first.
/// - **FULL**: both.
/// - The **TRANSITIVE** forms hold against every registered version, not just the latest.
/// - **NONE**: nothing is checked.
///
/// ```
/// use runnel_blueprint::Compatibility;
/// assert_eq!(Compatibility::parse("FULL_TRANSITIVE"), Some(Compatibility::FullTransitive));
/// assert_eq!(Compatibility::default().name(), "BACKWARD");
/// assert_eq!(Compatibility::parse("SIDEWAYS"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Compatibility {
    /// The new schema reads the latest registered one.
    #[default]
    Backward,
    /// The new schema reads every registered one.
    BackwardTransitive,
    /// The latest registered schema reads the new one.
    Forward,
    /// Every registered schema reads the new one.
    ForwardTransitive,
    /// Backward and forward, against the latest registered schema.
    Full,
    /// Backward and forward, against every registered schema.
    FullTransitive,
    /// Nothing is checked.
    None,
}

/// Every rule, by name, in the order the docs list them.
pub const COMPATIBILITY_NAMES: &[&str] = &[
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
];

/// How a new schema breaks a rule: against which registered version, in which direction,
/// and why (naming the field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaBreak {
    /// The rule broken.
    pub rule: Compatibility,
    /// The registered version it breaks, from 1 (the oldest).
    pub version: usize,
    /// Whether the new schema cannot read that version (`true`), or that version cannot
    /// read the new schema (`false`).
    pub backward: bool,
    /// What fails to resolve, naming the field.
    pub reason: String,
}

impl std::fmt::Display for SchemaBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let direction = if self.backward {
            format!(
                "a reader of the new schema could not read records written with version {}",
                self.version
            )
        } else {
            format!(
                "a reader of version {} could not read records written with the new schema",
                self.version
            )
        };
        write!(
            f,
            "it breaks {} compatibility with the topic's schema version {}: {direction}, since {}",
            self.rule.name(),
            self.version,
            self.reason
        )
    }
}

impl Compatibility {
    /// The rule named `text` (as a registry names it, in any case).
    pub fn parse(text: &str) -> Option<Self> {
        let position = COMPATIBILITY_NAMES
            .iter()
            .position(|name| name.eq_ignore_ascii_case(text))?;
        Some(
            [
                Compatibility::Backward,
                Compatibility::BackwardTransitive,
                Compatibility::Forward,
                Compatibility::ForwardTransitive,
                Compatibility::Full,
                Compatibility::FullTransitive,
                Compatibility::None,
            ][position],
        )
    }

    /// The rule's name, as registries spell it.
    pub fn name(self) -> &'static str {
        COMPATIBILITY_NAMES[self as usize]
    }

    /// Checks `new` against the `registered` schemas (oldest first) under this rule; the
    /// first version it breaks, latest first. A schema already registered breaks nothing.
    ///
    /// ```
    /// use runnel_blueprint::Compatibility;
    /// use runnel_blueprint::descriptor::{Format, SchemaDescriptor};
    /// use serde_json::json;
    ///
    /// let record = |fields| SchemaDescriptor {
    ///     format: Format::Avro,
    ///     name: "Reading".into(),
    ///     definition: json!({"type": "record", "name": "Reading", "fields": fields}),
    ///     fingerprint: String::new(),
    /// };
    /// let v1 = record(json!([{"name": "celsius", "type": "double"}]));
    /// let v2 = record(json!([
    ///     {"name": "celsius", "type": "double"},
    ///     {"name": "sensor", "type": "string"}
    /// ]));
    /// let broken = Compatibility::Backward.check(&v2, &[v1.clone()]).unwrap_err();
    /// assert_eq!((broken.version, broken.backward), (1, true));
    /// assert!(broken.reason.contains("'Reading.sensor'"));
    /// assert!(Compatibility::Forward.check(&v2, &[v1]).is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// The version broken, and how.
    pub fn check(
        self,
        new: &SchemaDescriptor,
        registered: &[SchemaDescriptor],
    ) -> Result<(), SchemaBreak> {
        if self == Compatibility::None
            || registered
                .iter()
                .any(|schema| schema.definition == new.definition)
        {
            return Ok(());
        }
        let (backward, forward, transitive) = match self {
            Compatibility::Backward => (true, false, false),
            Compatibility::BackwardTransitive => (true, false, true),
            Compatibility::Forward => (false, true, false),
            Compatibility::ForwardTransitive => (false, true, true),
            Compatibility::Full => (true, true, false),
            Compatibility::FullTransitive => (true, true, true),
            Compatibility::None => (false, false, false),
        };
        let checked = if transitive {
            registered.len()
        } else {
            registered.len().min(1)
        };
        for (index, old) in registered.iter().enumerate().rev().take(checked) {
            let broken = |backward, reason| SchemaBreak {
                rule: self,
                version: index + 1,
                backward,
                reason,
            };
            if backward && let Err(reason) = new.can_read(old) {
                return Err(broken(true, reason));
            }
            if forward && let Err(reason) = old.can_read(new) {
                return Err(broken(false, reason));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Format;
    use serde_json::json;

    fn reading(fields: serde_json::Value) -> SchemaDescriptor {
        SchemaDescriptor {
            format: Format::Avro,
            name: "Reading".into(),
            definition: json!({"type": "record", "name": "Reading", "fields": fields}),
            fingerprint: String::new(),
        }
    }

    #[test]
    fn each_rule_checks_its_direction_against_the_latest_or_every_version() {
        let v1 = reading(json!([{"name": "celsius", "type": "double"}]));
        // Version 2 drops nothing and adds a field with a default: compatible both ways.
        let v2 = reading(json!([
            {"name": "celsius", "type": "double"},
            {"name": "site", "type": "string", "default": ""}
        ]));
        // The new schema drops `celsius` (no default) and adds `kelvin` without one.
        let new = reading(json!([
            {"name": "site", "type": "string", "default": ""},
            {"name": "kelvin", "type": "double"}
        ]));
        let registered = [v1, v2];
        for rule in [
            Compatibility::Backward,
            Compatibility::BackwardTransitive,
            Compatibility::Full,
        ] {
            let broken = rule.check(&new, &registered).unwrap_err();
            assert_eq!((broken.version, broken.backward), (2, true), "{rule:?}");
            assert!(broken.reason.contains("'Reading.kelvin'"), "{broken}");
        }
        let forward = Compatibility::Forward.check(&new, &registered).unwrap_err();
        assert_eq!((forward.version, forward.backward), (2, false));
        assert!(forward.reason.contains("'Reading.celsius'"), "{forward}");
        assert_eq!(
            forward.to_string(),
            format!(
                "it breaks FORWARD compatibility with the topic's schema version 2: a reader of version 2 could not read records written with the new schema, since {}",
                forward.reason
            )
        );
        assert!(Compatibility::None.check(&new, &registered).is_ok());
        assert!(
            Compatibility::Backward
                .check(&registered[1], &registered)
                .is_ok()
        );
    }

    #[test]
    fn transitive_rules_reach_versions_the_plain_ones_do_not() {
        let v1 = reading(json!([{"name": "celsius", "type": "double"}]));
        let v2 = reading(json!([
            {"name": "celsius", "type": "double", "default": 0.0}
        ]));
        // Version 3 removes `celsius`, which version 2 gave a default: forward compatible
        // with version 2, not with version 1.
        let v3 = reading(json!([]));
        let registered = [v1, v2];
        assert!(Compatibility::Forward.check(&v3, &registered).is_ok());
        let broken = Compatibility::ForwardTransitive
            .check(&v3, &registered)
            .unwrap_err();
        assert_eq!((broken.version, broken.backward), (1, false));
    }

    #[test]
    fn names_round_trip() {
        for name in COMPATIBILITY_NAMES {
            assert_eq!(Compatibility::parse(name).unwrap().name(), *name);
        }
        assert_eq!(
            Compatibility::parse("backward"),
            Some(Compatibility::Backward)
        );
    }
}
