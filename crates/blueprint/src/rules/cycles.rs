//! Cycles in the graph: `CycleInGraph` (a warning, Runnel's own).
//!
//! A cycle is legal (a streamlet may feed back into an earlier stage) but often a wiring
//! mistake, and it makes records loop forever unless the logic stops them. Each strongly
//! connected group of streamlets is reported once, with its shortest cycle through the
//! instance declared first.
//!
//! The graph has a node per instance and per topic, an edge from each producer to its topic
//! and from each topic to each consumer, so its size is the number of port paths (a topic
//! with many producers and consumers does not multiply them). Tarjan's algorithm finds the
//! groups in one pass, iteratively (no recursion, so no stack overflow on long chains); a
//! breadth-first search inside each group finds its shortest cycle. The whole check is linear
//! in the size of the blueprint.

use std::collections::VecDeque;
use std::ops::Range;

use crate::code::Code;
use crate::facts::Facts;
use crate::report::Report;
use crate::rules::{Binding, Context, Role};

/// The graph: nodes `0..instances` are instances, the rest topics.
#[derive(Debug)]
struct Graph {
    instances: usize,
    /// Out-edges of each node, in file order: the target and, for an instance's edge to a
    /// topic, the span of the producer's port path.
    edges: Vec<Vec<(usize, Range<usize>)>>,
}

/// Reports each group of instances that records can cycle through.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let graph = graph(cx);
    let mut search = Search::new(graph.edges.len());
    for group in strongly_connected(&graph) {
        // In this graph every group of more than one node holds a cycle.
        if group.len() < 2 {
            continue;
        }
        let Some(&start) = group.iter().filter(|&&node| node < graph.instances).min() else {
            continue;
        };
        let Some(cycle) = search.shortest_cycle(&graph, start, &group) else {
            continue;
        };
        let name = |node: usize| cx.instances[node].entry.name.value.as_str();
        let topic = |node: usize| cx.file.topics[node - graph.instances].id.value.as_str();
        let mut description = name(start).to_owned();
        let mut instances = vec![name(start)];
        let mut topics = Vec::new();
        for pair in cycle.chunks(2) {
            let [(through, _), (to, _)] = pair else {
                continue;
            };
            description.push_str(&format!(" -[{}]-> {}", topic(*through), name(*to)));
            topics.push(topic(*through));
            instances.push(name(*to));
        }
        report.at(
            Code::CycleInGraph,
            cycle[0].1.clone(),
            format!("records can flow in a cycle: {description}"),
            Facts::new().cycle(instances).topics(topics),
        );
    }
}

/// The instance and topic graph of the bindings that carry records.
fn graph(cx: &Context<'_>) -> Graph {
    let instances = cx.instances.len();
    let mut edges = vec![Vec::new(); instances + cx.file.topics.len()];
    // With a descriptor, only ports that resolved in the right direction carry records.
    let wired = |binding: &&Binding<'_>| binding.port.is_some() || cx.descriptor.is_none();
    for binding in cx.bindings.iter().filter(wired) {
        let topic = instances + binding.topic;
        match binding.role {
            Role::Producer => edges[binding.instance].push((topic, binding.span.clone())),
            Role::Consumer => edges[topic].push((binding.instance, binding.span.clone())),
        }
    }
    Graph { instances, edges }
}

/// Tarjan's strongly connected components, iteratively. Returns each group's nodes.
fn strongly_connected(graph: &Graph) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let count = graph.edges.len();
    let mut order = vec![UNSEEN; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut groups = Vec::new();
    let mut next = 0;
    // The depth-first path: each node and how many of its edges were followed.
    let mut path: Vec<(usize, usize)> = Vec::new();
    for root in 0..count {
        if order[root] != UNSEEN {
            continue;
        }
        path.push((root, 0));
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut followed)) = path.last_mut() {
            if let Some((to, _)) = graph.edges[node].get(*followed) {
                let to = *to;
                *followed += 1;
                if order[to] == UNSEEN {
                    order[to] = next;
                    low[to] = next;
                    next += 1;
                    stack.push(to);
                    on_stack[to] = true;
                    path.push((to, 0));
                } else if on_stack[to] {
                    low[node] = low[node].min(order[to]);
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == order[node] {
                let mut group = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    group.push(member);
                    if member == node {
                        break;
                    }
                }
                groups.push(group);
            }
        }
    }
    groups
}

/// The breadth-first search for shortest cycles, with its per-node marks allocated once for
/// the whole graph and cleared group by group, so the searches of all groups together take
/// time linear in the graph.
struct Search {
    inside: Vec<bool>,
    /// How each node was reached: the node before it and the edge's index there.
    came_from: Vec<Option<(usize, usize)>>,
}

impl Search {
    fn new(nodes: usize) -> Self {
        Search {
            inside: vec![false; nodes],
            came_from: vec![None; nodes],
        }
    }

    /// The shortest path from `start` back to itself inside `group`, as the edges followed:
    /// alternately to a topic (with the producer's span) and to an instance.
    fn shortest_cycle(
        &mut self,
        graph: &Graph,
        start: usize,
        group: &[usize],
    ) -> Option<Vec<(usize, Range<usize>)>> {
        for &node in group {
            self.inside[node] = true;
        }
        let cycle = self.breadth_first(graph, start);
        for &node in group {
            self.inside[node] = false;
            self.came_from[node] = None;
        }
        cycle
    }

    fn breadth_first(&mut self, graph: &Graph, start: usize) -> Option<Vec<(usize, Range<usize>)>> {
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            for (index, (to, _)) in graph.edges[node].iter().enumerate() {
                let to = *to;
                if !self.inside[to] {
                    continue;
                }
                if to == start {
                    let mut path = vec![graph.edges[node][index].clone()];
                    let mut at = node;
                    while at != start {
                        let (before, edge) = self.came_from[at]?;
                        path.push(graph.edges[before][edge].clone());
                        at = before;
                    }
                    path.reverse();
                    return Some(path);
                }
                if self.came_from[to].is_none() {
                    self.came_from[to] = Some((node, index));
                    queue.push_back(to);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of instances `0..n` with a topic per listed edge.
    fn graph(instances: usize, edges: &[(usize, usize)]) -> Graph {
        let mut graph = Graph {
            instances,
            edges: vec![Vec::new(); instances + edges.len()],
        };
        for (topic, &(from, to)) in edges.iter().enumerate() {
            let node = instances + topic;
            graph.edges[from].push((node, topic..topic + 1));
            graph.edges[node].push((to, topic..topic + 1));
        }
        graph
    }

    fn instances_on(graph: &Graph, cycle: &[(usize, Range<usize>)]) -> Vec<usize> {
        cycle
            .iter()
            .map(|(node, _)| *node)
            .filter(|&node| node < graph.instances)
            .collect()
    }

    fn groups(graph: &Graph) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = strongly_connected(graph)
            .into_iter()
            .map(|mut group| {
                group.sort_unstable();
                group
            })
            .filter(|group| group.len() > 1)
            .collect();
        groups.sort();
        groups
    }

    #[test]
    fn finds_the_shortest_cycle_back_to_the_start() {
        // 0 -> 1 -> 2 -> 0 and a shortcut 1 -> 0.
        let graph = graph(3, &[(0, 1), (1, 2), (2, 0), (1, 0)]);
        assert_eq!(groups(&graph), [vec![0, 1, 2, 3, 4, 5, 6]]);
        let all: Vec<usize> = (0..7).collect();
        let cycle = Search::new(7).shortest_cycle(&graph, 0, &all).unwrap();
        assert_eq!(instances_on(&graph, &cycle), [1, 0]);
        assert_eq!(cycle[0].1, 0..1, "it starts at the producer path of 0");
    }

    #[test]
    fn self_loops_are_cycles_and_chains_are_not() {
        let looped = graph(1, &[(0, 0)]);
        assert_eq!(groups(&looped), [vec![0, 1]]);
        let mut search = Search::new(2);
        let cycle = search.shortest_cycle(&looped, 0, &[0, 1]).unwrap();
        assert_eq!(instances_on(&looped, &cycle), [0]);
        let again = search.shortest_cycle(&looped, 0, &[0, 1]).unwrap();
        assert_eq!(instances_on(&looped, &again), [0], "the marks are cleared");
        assert!(groups(&graph(3, &[(0, 1), (1, 2)])).is_empty());
    }

    #[test]
    fn separate_cycles_are_separate_groups() {
        let graph = graph(4, &[(0, 1), (1, 0), (2, 3), (3, 2), (1, 2)]);
        assert_eq!(groups(&graph), [vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
    }

    #[test]
    fn a_chain_of_a_hundred_thousand_does_not_overflow_the_stack() {
        let n = 100_000;
        let mut edges: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        edges.push((n - 1, 0));
        let graph = graph(n, &edges);
        let groups = strongly_connected(&graph);
        assert_eq!(groups.iter().filter(|g| g.len() > 1).count(), 1);
        assert_eq!(groups.iter().map(Vec::len).max(), Some(2 * n));
    }
}
