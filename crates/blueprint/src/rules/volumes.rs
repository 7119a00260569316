//! Volume mounts declared by the descriptor: `InvalidVolumeMountName`,
//! `DuplicateVolumeMountName`, `DuplicateVolumeMountPath`, `EmptyVolumeMountPath`,
//! `NonAbsoluteVolumeMountPath`, `BacktrackingVolumeMountPath`.

use std::collections::BTreeSet;

use crate::code::Code;
use crate::facts::Facts;
use crate::names::dns_label_problem;
use crate::report::Report;
use crate::rules::Context;

/// Checks every volume mount of every streamlet type in the descriptor.
///
/// A path's problems are independent: a relative path with a `..` component is both
/// `NonAbsoluteVolumeMountPath` and `BacktrackingVolumeMountPath`. Only a path without
/// problems is compared with the others for `DuplicateVolumeMountPath`.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let Some(descriptor) = cx.descriptor else {
        return;
    };
    for (position, streamlet) in descriptor.streamlets.iter().enumerate() {
        let at = cx.declaration_of(position);
        let type_name = &streamlet.type_name;
        let mut names = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for mount in &streamlet.volume_mounts {
            let (name, path) = (&mount.name, &mount.path);
            let facts = || {
                Facts::new()
                    .streamlet_type(type_name)
                    .volume_mount(name)
                    .path(path)
            };
            if let Some(problem) = dns_label_problem(name) {
                let mut facts = facts();
                facts.character = problem.facts().character;
                report.maybe_at(
                    Code::InvalidVolumeMountName,
                    at.clone(),
                    format!("streamlet type '{type_name}' has an invalid volume mount name '{name}': {problem}"),
                    facts,
                );
            } else if !names.insert(name.as_str()) {
                report.maybe_at(
                    Code::DuplicateVolumeMountName,
                    at.clone(),
                    format!("streamlet type '{type_name}' declares volume mount '{name}' twice"),
                    facts(),
                );
            }
            let mut problems = Vec::new();
            if path.trim().is_empty() {
                problems.push((Code::EmptyVolumeMountPath, "the path is empty".to_owned()));
            } else {
                if !path.starts_with('/') {
                    problems.push((
                        Code::NonAbsoluteVolumeMountPath,
                        format!("the path '{path}' is not absolute (it must start with '/')"),
                    ));
                }
                if path.split('/').any(|component| component == "..") {
                    problems.push((
                        Code::BacktrackingVolumeMountPath,
                        format!("the path '{path}' has a '..' component"),
                    ));
                }
            }
            for (code, problem) in &problems {
                report.maybe_at(
                    *code,
                    at.clone(),
                    format!("volume mount '{name}' of streamlet type '{type_name}': {problem}"),
                    facts(),
                );
            }
            if problems.is_empty() && !paths.insert(path.trim_end_matches('/')) {
                report.maybe_at(
                    Code::DuplicateVolumeMountPath,
                    at.clone(),
                    format!("streamlet type '{type_name}' mounts two volumes at '{path}'"),
                    facts(),
                );
            }
        }
    }
}
