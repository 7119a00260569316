//! Parameters declared by the descriptor: `InvalidConfigParameterKeyName`,
//! `DuplicateConfigParameterKeyFound`, `InvalidValidationPatternConfigParameter`,
//! `InvalidConfigParameterConstraint`, `InvalidDefaultValueInConfigParameter`.

use std::collections::BTreeSet;

use crate::code::Code;
use crate::descriptor::ParameterDescriptor;
use crate::facts::Facts;
use crate::names::parameter_key_problem;
use crate::parameter::{ParameterKind, compile_pattern};
use crate::report::Report;
use crate::rules::Context;

/// Checks every parameter of every streamlet type in the descriptor.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let Some(descriptor) = cx.descriptor else {
        return;
    };
    for (position, streamlet) in descriptor.streamlets.iter().enumerate() {
        let at = cx.declaration_of(position);
        let type_name = &streamlet.type_name;
        let mut seen = BTreeSet::new();
        for parameter in &streamlet.parameters {
            let key = &parameter.key;
            let facts = || facts_of(type_name, parameter);
            if let Some(problem) = parameter_key_problem(key) {
                let mut facts = facts();
                facts.character = problem.facts().character;
                report.maybe_at(
                    Code::InvalidConfigParameterKeyName,
                    at.clone(),
                    format!("streamlet type '{type_name}' has an invalid parameter key '{key}': {problem}"),
                    facts,
                );
            } else if !seen.insert(key.as_str()) {
                report.maybe_at(
                    Code::DuplicateConfigParameterKeyFound,
                    at.clone(),
                    format!("streamlet type '{type_name}' declares parameter '{key}' twice"),
                    facts(),
                );
            }
            if let ParameterKind::RegexString { pattern } = &parameter.kind
                && let Err(problem) = compile_pattern(pattern)
            {
                report.maybe_at(
                    Code::InvalidValidationPatternConfigParameter,
                    at.clone(),
                    format!("parameter '{key}' of streamlet type '{type_name}': {problem}"),
                    facts(),
                );
                continue;
            }
            let constraints_valid = match parameter.constraint_problem() {
                Some(problem) => {
                    report.maybe_at(
                        Code::InvalidConfigParameterConstraint,
                        at.clone(),
                        format!(
                            "the constraints of {} parameter '{key}' of streamlet type '{type_name}' are invalid: {problem}",
                            parameter.kind.name()
                        ),
                        facts(),
                    );
                    false
                }
                None => true,
            };
            let Some(default) = &parameter.default else {
                continue;
            };
            // With invalid constraints, the default is checked against its kind only.
            let checked = if constraints_valid {
                parameter.parse_value(default)
            } else {
                parameter.kind.parse(default)
            };
            if let Err(problem) = checked {
                report.maybe_at(
                    Code::InvalidDefaultValueInConfigParameter,
                    at.clone(),
                    format!(
                        "the default of {} parameter '{key}' of streamlet type '{type_name}' is invalid: {problem}",
                        parameter.kind.name()
                    ),
                    facts().value(default),
                );
            }
        }
    }
}

/// What a diagnostic about a parameter says: the type, the key, its kind and constraints.
fn facts_of(type_name: &str, parameter: &ParameterDescriptor) -> Facts {
    let mut facts = Facts::new()
        .streamlet_type(type_name)
        .parameter(&parameter.key)
        .parameter_type(parameter.kind.name())
        .allowed_values(&parameter.allowed_values);
    if let ParameterKind::RegexString { pattern } = &parameter.kind {
        facts = facts.pattern(pattern);
    }
    facts.min.clone_from(&parameter.min);
    facts.max.clone_from(&parameter.max);
    facts
}
