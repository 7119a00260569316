//! Port names declared by the descriptor: `InvalidInletName`, `InvalidOutletName`.
//!
//! A port name must be a DNS-1123 label (it becomes part of the port path and of Kubernetes
//! names) and unique within its streamlet type, across inlets and outlets, so that a port
//! path names one port.

use std::collections::BTreeSet;

use crate::code::Code;
use crate::facts::{Facts, PortKind};
use crate::names::dns_label_problem;
use crate::report::Report;
use crate::rules::Context;

/// Checks every port name of every streamlet type in the descriptor.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let Some(descriptor) = cx.descriptor else {
        return;
    };
    for (position, streamlet) in descriptor.streamlets.iter().enumerate() {
        let at = cx.declaration_of(position);
        let type_name = &streamlet.type_name;
        let mut seen = BTreeSet::new();
        let inlets = streamlet
            .inlets
            .iter()
            .map(|inlet| (Code::InvalidInletName, PortKind::Inlet, &inlet.name));
        let outlets = streamlet
            .outlets
            .iter()
            .map(|outlet| (Code::InvalidOutletName, PortKind::Outlet, &outlet.name));
        for (code, kind, name) in inlets.chain(outlets) {
            let facts = Facts::new()
                .streamlet_type(type_name)
                .port(name)
                .port_kind(kind);
            if let Some(problem) = dns_label_problem(name) {
                let mut facts = facts;
                facts.character = problem.facts().character;
                report.maybe_at(
                    code,
                    at.clone(),
                    format!("streamlet type '{type_name}' has an invalid {kind} name '{name}': {problem}"),
                    facts,
                );
            } else if !seen.insert(name.as_str()) {
                report.maybe_at(
                    code,
                    at.clone(),
                    format!("streamlet type '{type_name}' has two ports named '{name}'"),
                    facts,
                );
            }
        }
    }
}
