//! Port paths on topics: `InvalidPortPath`, `PortPathNotFound`, `InvalidProducerPortPath`,
//! `InvalidConsumerPortPath`, `PortBoundToManyTopics`, and then `UnconnectedInlets` and
//! `UnconnectedOutlets` for the ports no topic lists.
//!
//! A port path that does not resolve is reported with the port most likely meant: the
//! nearest port of the right direction (on the nearest instance, when the instance name is
//! wrong), preferring ports that are on no topic. When the port meant is on no topic, it is
//! not reported as unconnected as well: fixing the path connects it, so one mistake gives
//! one diagnostic.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use crate::blueprint::split_port_path;
use crate::code::Code;
use crate::descriptor::StreamletDescriptor;
use crate::facts::{Facts, PortKind};
use crate::file::Located;
use crate::report::Report;
use crate::rules::{Binding, Context, Port, Role};
use crate::suggest::{NameIndex, allowed_edits, edit_distance};

/// A port path that names an instance or port that does not exist, or a port of the wrong
/// direction; reported once every topic is read, so that the port meant is known.
struct Miss<'w> {
    written: &'w Located<String>,
    /// The instance and port named.
    path: (&'w str, &'w str),
    topic: usize,
    role: Role,
    /// The instance named, when it exists.
    instance: Option<usize>,
    /// Whether the port exists on the instance, in the other direction.
    wrong_direction: bool,
}

/// A port of an instance: the instance's position and the port name.
type PortOf<'a> = (usize, &'a str);

/// The ports on no topic, by instance.
type OpenPorts<'a> = HashMap<usize, Vec<&'a str>>;

fn is_open(open: &OpenPorts<'_>, instance: usize, port: &str) -> bool {
    open.get(&instance)
        .is_some_and(|ports| ports.contains(&port))
}

/// Resolves every port path of every topic, filling `cx.bindings` and `cx.mentioned`.
pub(crate) fn check<'a>(cx: &mut Context<'a>, report: &mut Report<'_>) {
    // The first topic each port (instance position, port name) was bound to.
    let mut bound: HashMap<(usize, &'a str), usize> = HashMap::new();
    let mut misses = Vec::new();
    let file = cx.file;
    for (index, topic) in file.topics.iter().enumerate() {
        let mut listed = HashSet::new();
        let roles = [
            (Role::Producer, &topic.producers),
            (Role::Consumer, &topic.consumers),
        ];
        for (role, paths) in roles {
            for written in paths {
                let facts = || {
                    Facts::new()
                        .port_path(&written.value)
                        .topic(&topic.id.value)
                        .role(role)
                };
                if !listed.insert((role, written.value.as_str())) {
                    report.at(
                        Code::BlueprintFormatError,
                        written.span.clone(),
                        format!(
                            "port path '{}' is listed twice in the {} of topic '{}'",
                            written.value,
                            role.list_name(),
                            topic.id.value
                        ),
                        facts(),
                    );
                    continue;
                }
                let Some(binding) = resolve(cx, index, role, written, &mut misses, report) else {
                    continue;
                };
                if binding.port.is_some() || cx.descriptor.is_none() {
                    let (name, port) = split_port_path(binding.path).unwrap_or_default();
                    if let Some(&first) = bound.get(&(binding.instance, port))
                        && first != index
                    {
                        let first_topic = &cx.file.topics[first].id.value;
                        report.at(
                            Code::PortBoundToManyTopics,
                            written.span.clone(),
                            format!(
                                "port '{}' is bound to topics '{first_topic}' and '{}'; a port may be on one topic only",
                                binding.path, topic.id.value
                            ),
                            facts()
                                .streamlet(name)
                                .port(port)
                                .other_topic(first_topic),
                        );
                    } else {
                        bound.entry((binding.instance, port)).or_insert(index);
                    }
                }
                cx.bindings.push(binding);
            }
        }
    }

    let unconnected = unconnected_ports(cx);
    let mut open: OpenPorts<'_> = HashMap::new();
    for &(instance, _, port) in &unconnected {
        open.entry(instance).or_default().push(port);
    }
    let mut claimed = HashSet::new();
    let names = OnceCell::new();
    for miss in &misses {
        if let Some(meant) = report_miss(cx, miss, &open, &names, report) {
            claimed.insert(meant);
        }
    }
    for &(instance, kind, port) in &unconnected {
        if !claimed.contains(&(instance, port)) {
            report_unconnected(cx, instance, kind, port, report);
        }
    }
}

/// Resolves one port path. `None` when the path is malformed or names no instance; a binding
/// without a port when the port is wrong. Paths naming no port are kept in `misses`.
fn resolve<'a>(
    cx: &mut Context<'a>,
    topic: usize,
    role: Role,
    written: &'a Located<String>,
    misses: &mut Vec<Miss<'a>>,
    report: &mut Report<'_>,
) -> Option<Binding<'a>> {
    let text = &written.value;
    let Some(path) = split_port_path(text) else {
        let example = match role {
            Role::Producer => "generator.out",
            Role::Consumer => "metrics.in",
        };
        report.at(
            Code::InvalidPortPath,
            written.span.clone(),
            format!("invalid port path '{text}': write it as instance.port (e.g. '{example}')"),
            Facts::new()
                .port_path(text)
                .topic(&cx.file.topics[topic].id.value)
                .role(role),
        );
        return None;
    };
    let (name, port) = path;
    let miss = |instance, wrong_direction| Miss {
        written,
        path,
        topic,
        role,
        instance,
        wrong_direction,
    };
    let Some(instance) = cx.instance(name) else {
        if cx.undeclared_is_news(name) {
            misses.push(miss(None, false));
        }
        return None;
    };
    cx.mentioned.insert((instance, port));
    let mut binding = Binding {
        topic,
        role,
        path: text,
        span: written.span.clone(),
        instance,
        port: None,
    };
    let Some(streamlet) = cx.instances[instance].streamlet else {
        // No descriptor, or its type did not resolve (already reported): nothing to check.
        return Some(binding);
    };
    match (role, streamlet.outlet(port), streamlet.inlet(port)) {
        (Role::Producer, Some(outlet), _) => binding.port = Some(Port::Outlet(outlet)),
        (Role::Consumer, _, Some(inlet)) => binding.port = Some(Port::Inlet(inlet)),
        (Role::Producer, None, Some(_)) | (Role::Consumer, Some(_), None) => {
            misses.push(miss(Some(instance), true));
        }
        _ => misses.push(miss(Some(instance), false)),
    }
    Some(binding)
}

/// The kind of port a role lists.
fn kind_listed_by(role: Role) -> PortKind {
    match role {
        Role::Producer => PortKind::Outlet,
        Role::Consumer => PortKind::Inlet,
    }
}

/// The names of a streamlet's ports of one kind.
fn ports_of(streamlet: &StreamletDescriptor, kind: PortKind) -> Vec<&str> {
    match kind {
        PortKind::Outlet => streamlet.outlets.iter().map(|o| o.name.as_str()).collect(),
        PortKind::Inlet => streamlet.inlets.iter().map(|i| i.name.as_str()).collect(),
    }
}

/// The port of `kind` on an instance most likely meant by `written`: among the ports near
/// enough, one on no topic if any, else the nearest; failing that, the only port of that
/// kind.
fn meant_port<'d>(
    streamlet: &'d StreamletDescriptor,
    instance: usize,
    written: &str,
    kind: PortKind,
    open: &OpenPorts<'_>,
) -> Option<&'d str> {
    let ports = ports_of(streamlet, kind);
    let allowed = allowed_edits(written);
    let near: Vec<(usize, &str)> = ports
        .iter()
        .map(|&port| (edit_distance(written, port), port))
        .filter(|(distance, _)| *distance <= allowed)
        .collect();
    let nearest = |only_open: bool| {
        near.iter()
            .filter(|(_, port)| !only_open || is_open(open, instance, port))
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, port)| *port)
    };
    nearest(true)
        .or_else(|| nearest(false))
        .or(match ports[..] {
            [only] => Some(only),
            _ => None,
        })
}

/// Reports a port path that did not resolve, with the port meant; returns that port when it
/// is on no topic (so it is not reported as unconnected too).
fn report_miss<'a>(
    cx: &Context<'a>,
    miss: &Miss<'_>,
    open: &OpenPorts<'a>,
    names: &OnceCell<NameIndex>,
    report: &mut Report<'_>,
) -> Option<PortOf<'a>> {
    let text = &miss.written.value;
    let (name, port) = miss.path;
    let wanted = kind_listed_by(miss.role);
    let mut facts = Facts::new()
        .port_path(text)
        .topic(&cx.file.topics[miss.topic].id.value)
        .role(miss.role)
        .streamlet(name)
        .port(port);

    // The instance meant, and the port meant on it.
    let meant: Option<(usize, String)> = match miss.instance {
        Some(instance) => {
            let streamlet = cx.instances[instance].streamlet?;
            meant_port(streamlet, instance, port, wanted, open).map(|p| (instance, p.to_owned()))
        }
        None => {
            let index = names.get_or_init(|| {
                NameIndex::new(cx.instances.iter().map(|i| i.entry.name.value.as_str()))
            });
            index.nearest(name).and_then(|instance| {
                let port = match cx.instances[instance].streamlet {
                    Some(streamlet) if ports_of(streamlet, wanted).contains(&port) => Some(port),
                    Some(streamlet) => meant_port(streamlet, instance, port, wanted, open),
                    // The instance's ports are unknown: keep the port as written.
                    None => Some(port),
                }?;
                Some((instance, port.to_owned()))
            })
        }
    };
    let claimed = meant.as_ref().and_then(|(instance, port)| {
        let found = open
            .get(instance)?
            .iter()
            .find(|open| **open == port.as_str())?;
        Some((*instance, *found))
    });
    let suggestion = meant
        .as_ref()
        .map(|(instance, port)| format!("{}.{port}", cx.instances[*instance].entry.name.value));
    let hint = match (&suggestion, claimed) {
        (Some(path), Some(_)) => format!("; did you mean '{path}', which is on no topic?"),
        (Some(path), None) => format!("; did you mean '{path}'?"),
        (None, _) => String::new(),
    };
    facts = facts.suggestions(suggestion);

    let Some(instance) = miss.instance else {
        report.at(
            Code::PortPathNotFound,
            miss.written.span.clone(),
            format!("port path '{text}' not found: there is no streamlet instance '{name}'{hint}"),
            facts,
        );
        return claimed;
    };
    let streamlet = cx.instances[instance].streamlet?;
    let type_name = &streamlet.type_name;
    facts = facts.streamlet_type(type_name);
    let (code, message) = if miss.wrong_direction {
        let (actual, code, listed, listed_kind) = match miss.role {
            Role::Producer => (
                PortKind::Inlet,
                Code::InvalidProducerPortPath,
                "producer",
                "outlets",
            ),
            Role::Consumer => (
                PortKind::Outlet,
                Code::InvalidConsumerPortPath,
                "consumer",
                "inlets",
            ),
        };
        facts = facts.port_kind(actual);
        (
            code,
            format!(
                "'{text}' is an {actual} of streamlet '{name}' (type '{type_name}'), so it cannot be a {listed}; {}s are {listed_kind}{hint}",
                listed
            ),
        )
    } else {
        (
            Code::PortPathNotFound,
            format!(
                "port path '{text}' not found: streamlet '{name}' (type '{type_name}') has no {wanted} '{port}'{hint}"
            ),
        )
    };
    report.at(code, miss.written.span.clone(), message, facts);
    claimed
}

/// Ports of resolved instances that no topic lists at all, in file order (ports listed in the
/// wrong role were already reported, and ports in a Cloudflow 1.x `[connections]` table are
/// covered by its own diagnostic).
fn unconnected_ports<'a>(cx: &Context<'a>) -> Vec<(usize, PortKind, &'a str)> {
    let in_connections: HashSet<(&str, &str)> = cx
        .file
        .connections
        .iter()
        .flat_map(|connections| &connections.entries)
        .flat_map(|(outlet, inlets)| std::iter::once(outlet).chain(inlets))
        .filter_map(|path| split_port_path(&path.value))
        .collect();
    let mut unconnected = Vec::new();
    for (position, instance) in cx.instances.iter().enumerate() {
        let Some(streamlet) = instance.streamlet else {
            continue;
        };
        let name = &instance.entry.name.value;
        let inlets = streamlet.inlets.iter().map(|i| (PortKind::Inlet, &i.name));
        let outlets = streamlet
            .outlets
            .iter()
            .map(|o| (PortKind::Outlet, &o.name));
        for (kind, port) in inlets.chain(outlets) {
            let port = port.as_str();
            let listed = cx.mentioned.contains(&(position, port))
                || in_connections.contains(&(name.as_str(), port));
            if !listed {
                unconnected.push((position, kind, port));
            }
        }
    }
    unconnected
}

fn report_unconnected(
    cx: &Context<'_>,
    instance: usize,
    kind: PortKind,
    port: &str,
    report: &mut Report<'_>,
) {
    let entry = cx.instances[instance].entry;
    let type_name = cx.instances[instance]
        .streamlet
        .map_or("", |s| s.type_name.as_str());
    let name = &entry.name.value;
    let (code, list) = match kind {
        PortKind::Inlet => (Code::UnconnectedInlets, "consumers"),
        PortKind::Outlet => (Code::UnconnectedOutlets, "producers"),
    };
    let path = format!("{name}.{port}");
    report.at(
        code,
        entry.name.span.clone(),
        format!(
            "{kind} '{port}' of streamlet '{name}' (type '{type_name}') is not on any topic; list '{path}' in a topic's {list}"
        ),
        Facts::new()
            .streamlet(name)
            .streamlet_type(type_name)
            .port(port)
            .port_kind(kind)
            .port_path(path),
    );
}
