//! Parameters declared by the descriptor: `InvalidConfigParameterKeyName`,
//! `DuplicateConfigParameterKeyFound`, `InvalidValidationPatternConfigParameter`,
//! `InvalidDefaultValueInConfigParameter`.

use std::collections::BTreeSet;

use crate::code::Code;
use crate::names::parameter_key_problem;
use crate::parameter::{ParameterKind, compile_pattern};
use crate::report::Report;
use crate::rules::Context;

/// Checks every parameter of every streamlet type in the descriptor.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let Some(descriptor) = cx.descriptor else {
        return;
    };
    for streamlet in &descriptor.streamlets {
        let at = cx.declaration_of(streamlet);
        let type_name = &streamlet.type_name;
        let mut seen = BTreeSet::new();
        for parameter in &streamlet.parameters {
            let key = &parameter.key;
            if let Some(problem) = parameter_key_problem(key) {
                report.maybe_at(
                    Code::InvalidConfigParameterKeyName,
                    at.clone(),
                    format!("streamlet type '{type_name}' has an invalid parameter key '{key}': {problem}"),
                );
            } else if !seen.insert(key.as_str()) {
                report.maybe_at(
                    Code::DuplicateConfigParameterKeyFound,
                    at.clone(),
                    format!("streamlet type '{type_name}' declares parameter '{key}' twice"),
                );
            }
            if let ParameterKind::RegexString { pattern } = &parameter.kind
                && let Err(problem) = compile_pattern(pattern)
            {
                report.maybe_at(
                    Code::InvalidValidationPatternConfigParameter,
                    at.clone(),
                    format!("parameter '{key}' of streamlet type '{type_name}': {problem}"),
                );
                continue;
            }
            if let Some(default) = &parameter.default
                && let Err(problem) = parameter.kind.parse(default)
            {
                report.maybe_at(
                    Code::InvalidDefaultValueInConfigParameter,
                    at.clone(),
                    format!(
                        "the default of {} parameter '{key}' of streamlet type '{type_name}' is invalid: {problem}",
                        parameter.kind.name()
                    ),
                );
            }
        }
    }
}
