//! Volume mounts declared by the descriptor: `InvalidVolumeMountName`,
//! `DuplicateVolumeMountName`, `DuplicateVolumeMountPath`, `EmptyVolumeMountPath`,
//! `NonAbsoluteVolumeMountPath`, `BacktrackingVolumeMountPath`.

use std::collections::BTreeSet;

use crate::code::Code;
use crate::names::dns_label_problem;
use crate::report::Report;
use crate::rules::Context;

/// Checks every volume mount of every streamlet type in the descriptor.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let Some(descriptor) = cx.descriptor else {
        return;
    };
    for streamlet in &descriptor.streamlets {
        let at = cx.declaration_of(streamlet);
        let type_name = &streamlet.type_name;
        let mut names = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for mount in &streamlet.volume_mounts {
            let (name, path) = (&mount.name, &mount.path);
            if let Some(problem) = dns_label_problem(name) {
                report.maybe_at(
                    Code::InvalidVolumeMountName,
                    at.clone(),
                    format!("streamlet type '{type_name}' has an invalid volume mount name '{name}': {problem}"),
                );
            } else if !names.insert(name.as_str()) {
                report.maybe_at(
                    Code::DuplicateVolumeMountName,
                    at.clone(),
                    format!("streamlet type '{type_name}' declares volume mount '{name}' twice"),
                );
            }
            let path_problem = if path.trim().is_empty() {
                Some((Code::EmptyVolumeMountPath, "the path is empty".to_owned()))
            } else if !path.starts_with('/') {
                Some((
                    Code::NonAbsoluteVolumeMountPath,
                    format!("the path '{path}' is not absolute"),
                ))
            } else if path.split('/').any(|component| component == "..") {
                Some((
                    Code::BacktrackingVolumeMountPath,
                    format!("the path '{path}' contains '..'"),
                ))
            } else {
                None
            };
            match path_problem {
                Some((code, problem)) => report.maybe_at(
                    code,
                    at.clone(),
                    format!("volume mount '{name}' of streamlet type '{type_name}': {problem}"),
                ),
                None => {
                    let normalized = path.trim_end_matches('/');
                    if !paths.insert(normalized) {
                        report.maybe_at(
                            Code::DuplicateVolumeMountPath,
                            at.clone(),
                            format!("streamlet type '{type_name}' mounts two volumes at '{path}'"),
                        );
                    }
                }
            }
        }
    }
}
