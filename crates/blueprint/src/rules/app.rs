//! The app name: `InvalidAppName`.

use crate::code::Code;
use crate::names::dns_label_problem;
use crate::report::Report;
use crate::rules::Context;

/// The app name becomes part of Kubernetes resource names, so it must be a DNS-1123 label.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    if let Some(name) = &cx.file.name
        && let Some(problem) = dns_label_problem(&name.value)
    {
        report.at(
            Code::InvalidAppName,
            name.span.clone(),
            format!("invalid app name '{}': {problem}", name.value),
            problem.facts().app(&name.value),
        );
    }
}
