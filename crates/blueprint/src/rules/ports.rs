//! Port paths on topics: `InvalidPortPath`, `PortPathNotFound`, `InvalidProducerPortPath`,
//! `InvalidConsumerPortPath`, `PortBoundToManyTopics`, and then `UnconnectedInlets` and
//! `UnconnectedOutlets` for the ports no topic lists.

use std::collections::{BTreeMap, BTreeSet};

use crate::blueprint::PortPath;
use crate::code::Code;
use crate::descriptor::StreamletDescriptor;
use crate::file::Located;
use crate::report::Report;
use crate::rules::{Binding, Context, Port, Role};
use crate::suggest::closest;

/// Resolves every port path of every topic, filling `cx.bindings` and `cx.mentioned`.
pub(crate) fn check(cx: &mut Context<'_>, report: &mut Report<'_>) {
    // The first topic each port was bound to.
    let mut bound: BTreeMap<PortPath, usize> = BTreeMap::new();
    for (index, topic) in cx.file.topics.iter().enumerate() {
        let mut listed = BTreeSet::new();
        let roles = [
            (Role::Producer, &topic.producers),
            (Role::Consumer, &topic.consumers),
        ];
        for (role, paths) in roles {
            for written in paths {
                if !listed.insert((role == Role::Producer, written.value.as_str())) {
                    report.at(
                        Code::BlueprintFormatError,
                        written.span.clone(),
                        format!(
                            "port path '{}' is listed twice in the {} of topic '{}'",
                            written.value,
                            role.plural(),
                            topic.id.value
                        ),
                    );
                    continue;
                }
                let Some(binding) = resolve(cx, index, role, written, report) else {
                    continue;
                };
                if binding.port.is_some() || cx.descriptor.is_none() {
                    if let Some(&first) = bound.get(&binding.path)
                        && first != index
                    {
                        report.at(
                            Code::PortBoundToManyTopics,
                            written.span.clone(),
                            format!(
                                "port '{}' is bound to topics '{}' and '{}'; a port may be on one topic only",
                                binding.path, cx.file.topics[first].id.value, topic.id.value
                            ),
                        );
                    } else {
                        bound.entry(binding.path.clone()).or_insert(index);
                    }
                }
                cx.bindings.push(binding);
            }
        }
    }
    report_unconnected(cx, report);
}

impl Role {
    fn plural(self) -> &'static str {
        match self {
            Role::Producer => "producers",
            Role::Consumer => "consumers",
        }
    }
}

/// Resolves one port path, reporting why it does not resolve. `None` when the path names no
/// instance (or is malformed); a binding without a port when the port is wrong.
fn resolve<'a>(
    cx: &mut Context<'a>,
    topic: usize,
    role: Role,
    written: &Located<String>,
    report: &mut Report<'_>,
) -> Option<Binding<'a>> {
    let text = &written.value;
    let span = written.span.clone();
    let Some(path) = PortPath::parse(text) else {
        let example = match role {
            Role::Producer => "generator.out",
            Role::Consumer => "metrics.in",
        };
        report.at(
            Code::InvalidPortPath,
            span,
            format!("invalid port path '{text}': write it as instance.port (e.g. '{example}')"),
        );
        return None;
    };
    let Some(instance) = cx.instance(&path.streamlet) else {
        let candidates = port_candidates(cx, role);
        let hint = closest(text, candidates.iter().map(String::as_str))
            .map(|candidate| format!("; did you mean '{candidate}'?"))
            .unwrap_or_default();
        report.at(
            Code::PortPathNotFound,
            span,
            format!(
                "port path '{text}' not found: there is no streamlet instance '{}'{hint}",
                path.streamlet
            ),
        );
        return None;
    };
    cx.mentioned.insert(path.clone());
    let mut binding = Binding {
        topic,
        role,
        path,
        span: span.clone(),
        instance,
        port: None,
    };
    let Some(streamlet) = cx.instances[instance].streamlet else {
        // No descriptor, or its type did not resolve (already reported): nothing to check.
        return Some(binding);
    };
    let type_name = &streamlet.type_name;
    let (name, port) = (&binding.path.streamlet, &binding.path.port);
    match (role, streamlet.outlet(port), streamlet.inlet(port)) {
        (Role::Producer, Some(outlet), _) => binding.port = Some(Port::Outlet(outlet)),
        (Role::Consumer, _, Some(inlet)) => binding.port = Some(Port::Inlet(inlet)),
        (Role::Producer, None, Some(_)) => report.at(
            Code::InvalidProducerPortPath,
            span,
            format!(
                "'{text}' is an inlet of streamlet '{name}' (type '{type_name}'), so it cannot be a producer; producers are outlets{}",
                same_instance_hint(streamlet, name, port, Role::Producer)
            ),
        ),
        (Role::Consumer, Some(_), None) => report.at(
            Code::InvalidConsumerPortPath,
            span,
            format!(
                "'{text}' is an outlet of streamlet '{name}' (type '{type_name}'), so it cannot be a consumer; consumers are inlets{}",
                same_instance_hint(streamlet, name, port, Role::Consumer)
            ),
        ),
        _ => {
            let hint = match closest_port(streamlet, port, role) {
                Some(candidate) => format!("; did you mean '{name}.{candidate}'?"),
                None => {
                    let candidates = port_candidates(cx, role);
                    closest(text, candidates.iter().map(String::as_str))
                        .map(|candidate| format!("; did you mean '{candidate}'?"))
                        .unwrap_or_default()
                }
            };
            let kinds = match role {
                Role::Producer => "outlet",
                Role::Consumer => "inlet",
            };
            report.at(
                Code::PortPathNotFound,
                span,
                format!(
                    "port path '{text}' not found: streamlet '{name}' (type '{type_name}') has no {kinds} '{port}'{hint}"
                ),
            );
        }
    }
    Some(binding)
}

/// The port of the right direction closest in name, or the only one when there is just one.
fn closest_port<'d>(streamlet: &'d StreamletDescriptor, port: &str, role: Role) -> Option<&'d str> {
    let names: Vec<&str> = match role {
        Role::Producer => streamlet.outlets.iter().map(|o| o.name.as_str()).collect(),
        Role::Consumer => streamlet.inlets.iter().map(|i| i.name.as_str()).collect(),
    };
    closest(port, names.iter().copied()).or(match names[..] {
        [only] => Some(only),
        _ => None,
    })
}

fn same_instance_hint(
    streamlet: &StreamletDescriptor,
    name: &str,
    port: &str,
    role: Role,
) -> String {
    closest_port(streamlet, port, role)
        .map(|candidate| format!("; did you mean '{name}.{candidate}'?"))
        .unwrap_or_default()
}

/// Every `instance.port` that could be listed in this role.
fn port_candidates(cx: &Context<'_>, role: Role) -> Vec<String> {
    cx.instances
        .iter()
        .filter_map(|instance| Some((&instance.entry.name.value, instance.streamlet?)))
        .flat_map(|(name, streamlet)| {
            let ports: Vec<&String> = match role {
                Role::Producer => streamlet.outlets.iter().map(|o| &o.name).collect(),
                Role::Consumer => streamlet.inlets.iter().map(|i| &i.name).collect(),
            };
            ports.into_iter().map(move |port| format!("{name}.{port}"))
        })
        .collect()
}

/// Ports of resolved instances that no topic lists at all (ports listed in the wrong role
/// were already reported).
fn report_unconnected(cx: &Context<'_>, report: &mut Report<'_>) {
    for instance in &cx.instances {
        let Some(streamlet) = instance.streamlet else {
            continue;
        };
        let name = &instance.entry.name;
        let type_name = &streamlet.type_name;
        let ports = streamlet
            .inlets
            .iter()
            .map(|inlet| (Code::UnconnectedInlets, "inlet", &inlet.name))
            .chain(
                streamlet
                    .outlets
                    .iter()
                    .map(|outlet| (Code::UnconnectedOutlets, "outlet", &outlet.name)),
            );
        for (code, kind, port) in ports {
            let path = PortPath {
                streamlet: name.value.clone(),
                port: port.clone(),
            };
            if !cx.mentioned.contains(&path) {
                report.at(
                    code,
                    name.span.clone(),
                    format!(
                        "{kind} '{port}' of streamlet '{}' (type '{type_name}') is not on any topic; list '{path}' in a topic's {}",
                        name.value,
                        if kind == "inlet" { "consumers" } else { "producers" }
                    ),
                );
            }
        }
    }
}
