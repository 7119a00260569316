//! The structured facts of a diagnostic: what a rule knows about the problem (the streamlet,
//! its type, the port path, the topic, the parameter, the suggestions...), so tools read
//! fields instead of parsing the English message.
//!
//! Every field is optional: a diagnostic carries the facts its rule knows. The JSON report
//! (`--format json`) writes them under `facts`, with the kebab-case names below; the JSON
//! Schema `docs/diagnostics.schema.json` documents each of them.

use serde::Serialize;

/// Which side of a topic a port path is listed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// In a topic's `producers`.
    Producer,
    /// In a topic's `consumers`.
    Consumer,
}

impl Role {
    /// `producers` or `consumers`: the topic key that lists this role.
    pub fn list_name(self) -> &'static str {
        match self {
            Role::Producer => "producers",
            Role::Consumer => "consumers",
        }
    }
}

/// Whether a port is an inlet or an outlet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PortKind {
    /// An input port.
    Inlet,
    /// An output port.
    Outlet,
}

impl std::fmt::Display for PortKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PortKind::Inlet => "inlet",
            PortKind::Outlet => "outlet",
        })
    }
}

macro_rules! facts {
    (
        text { $( $(#[doc = $tdoc:literal])* $text:ident, )* }
        number { $( $(#[doc = $ndoc:literal])* $number:ident, )* }
        list { $( $(#[doc = $ldoc:literal])* $list:ident, )* }
    ) => {
        /// What a rule knows about a problem, besides its code, message and location.
        ///
        /// Fields are filled by the rule that reports the problem; absent ones are `None` (or
        /// empty) and left out of the JSON report.
        ///
        /// ```
        /// use std::path::Path;
        /// use runnel_blueprint::{descriptor::AppDescriptor, verify};
        /// let descriptor = AppDescriptor::from_json(r#"{"descriptor-version": 1, "app": "demo",
        ///   "streamlets": [{"type": "logger", "inlets": [{"name": "in",
        ///     "schema": {"format": "avro", "name": "long", "definition": "long"}}]}]}"#).unwrap();
        /// let text = "name = \"demo\"\n[streamlets]\nlog = \"logger\"\n[topics.t]\nconsumers = [\"log.inn\"]\n";
        /// let problem = &verify(Path::new("b.toml"), text, &descriptor).diagnostics[1];
        /// assert_eq!(problem.facts.port_path.as_deref(), Some("log.inn"));
        /// assert_eq!(problem.facts.streamlet_type.as_deref(), Some("logger"));
        /// assert_eq!(problem.facts.suggestions, ["log.in"]);
        /// ```
        #[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
        #[serde(rename_all = "kebab-case")]
        #[non_exhaustive]
        pub struct Facts {
            /// The blueprint key or table concerned (an unknown or mistyped key).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub key: Option<String>,
            /// Where a port path is listed: `producer` or `consumer`.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub role: Option<Role>,
            /// Whether the port concerned is an inlet or an outlet.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub port_kind: Option<PortKind>,
            $( $(#[doc = $tdoc])* #[serde(skip_serializing_if = "Option::is_none")] pub $text: Option<String>, )*
            $( $(#[doc = $ndoc])* #[serde(skip_serializing_if = "Option::is_none")] pub $number: Option<u64>, )*
            $( $(#[doc = $ldoc])* #[serde(skip_serializing_if = "Vec::is_empty")] pub $list: Vec<String>, )*
        }

        impl Facts {
            $(
                $(#[doc = $tdoc])*
                #[must_use]
                pub fn $text(mut self, value: impl Into<String>) -> Self {
                    self.$text = Some(value.into());
                    self
                }
            )*
            $(
                $(#[doc = $ndoc])*
                #[must_use]
                pub fn $number(mut self, value: impl Into<u64>) -> Self {
                    self.$number = Some(value.into());
                    self
                }
            )*
            $(
                $(#[doc = $ldoc])*
                #[must_use]
                pub fn $list<S: Into<String>>(mut self, values: impl IntoIterator<Item = S>) -> Self {
                    self.$list = values.into_iter().map(Into::into).collect();
                    self
                }
            )*
        }

        #[cfg(test)]
        impl Facts {
            /// Every fact set, to see every name the JSON report can use.
            fn every_fact() -> Facts {
                Facts {
                    key: Some(String::new()),
                    role: Some(Role::Producer),
                    port_kind: Some(PortKind::Inlet),
                    $( $text: Some(String::new()), )*
                    $( $number: Some(0), )*
                    $( $list: vec![String::new()], )*
                }
            }
        }
    };
}

facts! {
    text {
        /// The app name.
        app,
        /// The streamlet instance (as written in the blueprint).
        streamlet,
        /// The streamlet type: its registered name when the reference resolved, else the
        /// reference as written.
        streamlet_type,
        /// A port name.
        port,
        /// A port path as written (`instance.port`).
        port_path,
        /// The topic id (the key in `[topics.<id>]`).
        topic,
        /// The topic's real name on the log.
        topic_name,
        /// Another topic involved: the first topic a port is bound to, or the topic whose
        /// real name is shared.
        other_topic,
        /// A Kafka cluster name.
        cluster,
        /// The producer's port path of a schema problem.
        producer,
        /// The consumer's port path of a schema problem.
        consumer,
        /// The first producer of a topic, when another one writes a different format.
        other_producer,
        /// The writer's schema name of a schema problem.
        writer_schema,
        /// The reader's schema name of a schema problem.
        reader_schema,
        /// A parameter key.
        parameter,
        /// A parameter's type (`int`, `duration`, ...).
        parameter_type,
        /// The offending value as written (a parameter default, a bound).
        value,
        /// A `regex-string` parameter's pattern.
        pattern,
        /// The lowest value a parameter allows, as written in the descriptor.
        min,
        /// The highest value a parameter allows, as written in the descriptor.
        max,
        /// A volume mount name.
        volume_mount,
        /// A volume mount path.
        path,
        /// The type a value must have.
        expected,
        /// The type the value has.
        found,
        /// The character that breaks a naming rule.
        character,
    }
    number {
        /// A topic's partition count.
        partitions,
        /// A topic's replication factor.
        replication,
        /// The line where the first of two duplicates is declared.
        first_line,
        /// How many streamlet types the descriptor registers.
        registered_type_count,
    }
    list {
        /// "Did you mean" candidates, nearest first.
        suggestions,
        /// The streamlet types a reference could mean (an ambiguous reference).
        candidates,
        /// The streamlet types the descriptor registers (at most the first 20; see
        /// `registered-type-count`).
        registered_types,
        /// The values a `string` parameter allows.
        allowed_values,
        /// The instances on a cycle, in order, the first repeated at the end.
        cycle,
        /// The topics a cycle goes through, in order.
        topics,
    }
}

impl Facts {
    /// No facts yet.
    pub fn new() -> Self {
        Facts::default()
    }

    /// Where a port path is listed.
    #[must_use]
    pub fn role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }

    /// Whether the port is an inlet or an outlet.
    #[must_use]
    pub fn port_kind(mut self, kind: PortKind) -> Self {
        self.port_kind = Some(kind);
        self
    }

    /// The blueprint key concerned.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/diagnostics.schema.json` documents exactly the facts the report can carry.
    #[test]
    fn the_json_schema_documents_every_fact() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/diagnostics.schema.json")).unwrap();
        let documented: Vec<&String> = schema["$defs"]["facts"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let written = serde_json::to_value(Facts::every_fact()).unwrap();
        let written: Vec<&String> = written.as_object().unwrap().keys().collect();
        let mut documented = documented;
        let mut written = written;
        documented.sort();
        written.sort();
        assert_eq!(documented, written);
    }

    #[test]
    fn absent_facts_are_left_out() {
        let facts = Facts::new().topic("readings").suggestions(["a"]);
        assert_eq!(
            serde_json::to_value(facts).unwrap(),
            serde_json::json!({"topic": "readings", "suggestions": ["a"]})
        );
    }
}
