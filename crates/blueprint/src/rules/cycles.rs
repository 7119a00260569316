//! Cycles in the graph: `CycleInGraph` (a warning, Runnel's own).
//!
//! A cycle is legal (a streamlet may feed back into an earlier stage) but often a wiring
//! mistake, and it makes records loop forever unless the logic stops them. Each strongly
//! connected group of streamlets is reported once, with its shortest cycle through the
//! instance declared first.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use crate::code::Code;
use crate::report::Report;
use crate::rules::{Binding, Context, Role};

/// An edge: records flow from one instance to another through a topic.
#[derive(Clone, Debug)]
struct Edge {
    to: usize,
    topic: usize,
    /// The producer's port path in the text.
    span: Range<usize>,
}

/// Reports each group of instances that records can cycle through.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let edges = edges(cx);
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for start in 0..cx.instances.len() {
        if reported.contains(&start) {
            continue;
        }
        let Some(cycle) = shortest_cycle(start, &edges) else {
            continue;
        };
        reported.extend(group_of(start, &edges));
        let mut description = cx.instances[start].entry.name.value.clone();
        for edge in &cycle {
            description.push_str(&format!(
                " -[{}]-> {}",
                cx.file.topics[edge.topic].id.value, cx.instances[edge.to].entry.name.value
            ));
        }
        report.at(
            Code::CycleInGraph,
            cycle[0].span.clone(),
            format!("records can flow in a cycle: {description}"),
        );
    }
}

/// The edges leaving each instance, in file order.
fn edges(cx: &Context<'_>) -> BTreeMap<usize, Vec<Edge>> {
    // With a descriptor, only ports that resolved in the right direction carry records.
    let wired = |binding: &&Binding<'_>| binding.port.is_some() || cx.descriptor.is_none();
    let bindings: Vec<&Binding<'_>> = cx.bindings.iter().filter(wired).collect();
    let mut edges: BTreeMap<usize, Vec<Edge>> = BTreeMap::new();
    for producer in bindings.iter().filter(|b| b.role == Role::Producer) {
        for consumer in bindings
            .iter()
            .filter(|b| b.role == Role::Consumer && b.topic == producer.topic)
        {
            edges.entry(producer.instance).or_default().push(Edge {
                to: consumer.instance,
                topic: producer.topic,
                span: producer.span.clone(),
            });
        }
    }
    edges
}

/// The shortest path of edges from `start` back to `start` (breadth first).
fn shortest_cycle(start: usize, edges: &BTreeMap<usize, Vec<Edge>>) -> Option<Vec<Edge>> {
    let mut came_from: BTreeMap<usize, Edge> = BTreeMap::new();
    let mut from_node: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    let mut visited = BTreeSet::new();
    while let Some(node) = queue.pop_front() {
        for edge in edges.get(&node).into_iter().flatten() {
            if edge.to == start {
                let mut path = vec![edge.clone()];
                let mut at = node;
                while at != start {
                    path.push(came_from[&at].clone());
                    at = from_node[&at];
                }
                path.reverse();
                return Some(path);
            }
            if visited.insert(edge.to) {
                came_from.insert(edge.to, edge.clone());
                from_node.insert(edge.to, node);
                queue.push_back(edge.to);
            }
        }
    }
    None
}

/// The instances that can reach `start` and be reached from it.
fn group_of(start: usize, edges: &BTreeMap<usize, Vec<Edge>>) -> BTreeSet<usize> {
    let reachable = |from: usize, forward: bool| {
        let mut seen = BTreeSet::from([from]);
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            let next: Vec<usize> = if forward {
                edges
                    .get(&node)
                    .into_iter()
                    .flatten()
                    .map(|e| e.to)
                    .collect()
            } else {
                edges
                    .iter()
                    .filter(|(_, out)| out.iter().any(|e| e.to == node))
                    .map(|(from, _)| *from)
                    .collect()
            };
            for n in next {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen
    };
    let forward = reachable(start, true);
    let backward = reachable(start, false);
    forward.intersection(&backward).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(usize, usize)]) -> BTreeMap<usize, Vec<Edge>> {
        let mut graph: BTreeMap<usize, Vec<Edge>> = BTreeMap::new();
        for (topic, &(from, to)) in edges.iter().enumerate() {
            graph.entry(from).or_default().push(Edge {
                to,
                topic,
                span: topic..topic + 1,
            });
        }
        graph
    }

    fn nodes(cycle: &[Edge]) -> Vec<usize> {
        cycle.iter().map(|edge| edge.to).collect()
    }

    #[test]
    fn finds_the_shortest_cycle_back_to_the_start() {
        // 0 -> 1 -> 2 -> 0 and a shortcut 1 -> 0.
        let edges = graph(&[(0, 1), (1, 2), (2, 0), (1, 0)]);
        assert_eq!(nodes(&shortest_cycle(0, &edges).unwrap()), [1, 0]);
        assert_eq!(group_of(0, &edges), BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn self_loops_are_cycles_and_chains_are_not() {
        assert_eq!(nodes(&shortest_cycle(3, &graph(&[(3, 3)])).unwrap()), [3]);
        let chain = graph(&[(0, 1), (1, 2)]);
        assert!(shortest_cycle(0, &chain).is_none());
        assert_eq!(group_of(1, &chain), BTreeSet::from([1]));
    }
}
