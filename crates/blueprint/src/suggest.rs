//! "Did you mean" suggestions: the nearest candidate by edit distance, if near enough.
//!
//! A candidate is near enough when its edit distance from the wanted word is at most a third
//! of the word's length, at least one edit and at most [`MAX_EDITS`]. Few candidates are
//! compared one by one ([`closest`]); many (every instance of a large blueprint) are searched
//! through a [`NameIndex`], so that a blueprint with every port path misspelt still verifies
//! in time linear in its size.

/// The most edits a suggestion may be away from what was written.
pub(crate) const MAX_EDITS: usize = 3;

/// How many trie nodes one [`NameIndex::nearest`] search may visit before it settles for the
/// nearest name found so far.
const SEARCH_BUDGET: usize = 2_048;

/// Names longer than this are not searched for (no valid name is this long).
const LONGEST_SEARCHED: usize = 64;

/// How many edits a suggestion for `wanted` may be away.
pub(crate) fn allowed_edits(wanted: &str) -> usize {
    (wanted.chars().count() / 3).clamp(1, MAX_EDITS)
}

/// The candidate closest to `wanted`, if near enough (at most a third of its length in edits,
/// at least one, at most three); ties go to the first candidate.
///
/// ```
/// assert_eq!(runnel_blueprint::closest("valid-loger", ["valid-logger", "gen"]), Some("valid-logger"));
/// assert_eq!(runnel_blueprint::closest("printer", ["valid-logger", "gen"]), None);
/// ```
pub fn closest<'c>(wanted: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let allowed = allowed_edits(wanted);
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(wanted, candidate), candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// `"; did you mean 'x'?"` for the [`closest`] candidate, or nothing when none is near.
///
/// ```
/// assert_eq!(runnel_blueprint::did_you_mean("logg", ["log", "gen"]), "; did you mean 'log'?");
/// assert_eq!(runnel_blueprint::did_you_mean("printer", ["log"]), "");
/// ```
pub fn did_you_mean<'c>(wanted: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    closest(wanted, candidates)
        .map(|candidate| format!("; did you mean '{candidate}'?"))
        .unwrap_or_default()
}

/// Levenshtein distance over characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// Names in a trie, searched for the nearest one by walking the trie with one row of the
/// edit-distance table per node (only the band of cells that can stay within the allowed
/// distance), allowing one more edit at a time.
///
/// A search costs at most [`SEARCH_BUDGET`] node visits of a few cells each, however many
/// names there are; when very many names are near (thousands of generated names differing in
/// a few characters) it settles for the nearest one found within the budget.
#[derive(Debug)]
pub(crate) struct NameIndex {
    nodes: Vec<Node>,
}

#[derive(Debug)]
struct Node {
    /// The character on the edge into this node (`'\0'` for the root).
    label: char,
    /// The children's indices, in insertion order.
    children: Vec<u32>,
    /// The first name (lowest position) that ends here.
    name: Option<u32>,
}

impl Node {
    fn new(label: char) -> Self {
        Node {
            label,
            children: Vec::new(),
            name: None,
        }
    }
}

impl NameIndex {
    /// Indexes names; [`nearest`](Self::nearest) answers with their positions.
    pub(crate) fn new<'n>(names: impl IntoIterator<Item = &'n str>) -> Self {
        let mut nodes = vec![Node::new('\0')];
        for (index, name) in names.into_iter().enumerate() {
            let mut at = 0;
            for c in name.chars() {
                let existing = nodes[at]
                    .children
                    .iter()
                    .copied()
                    .find(|&child| nodes[child as usize].label == c);
                at = match existing {
                    Some(child) => child as usize,
                    None => {
                        nodes.push(Node::new(c));
                        let child = nodes.len() - 1;
                        nodes[at].children.push(child as u32);
                        child
                    }
                };
            }
            nodes[at].name.get_or_insert(index as u32);
        }
        NameIndex { nodes }
    }

    /// The position of the name nearest to `wanted`, if one is near enough (see the module
    /// documentation). Among names equally near, it prefers the one that starts with more of
    /// `wanted`, then the one indexed first. An indexed name equal to `wanted` is the nearest
    /// of all.
    pub(crate) fn nearest(&self, wanted: &str) -> Option<usize> {
        let query: Vec<char> = wanted.chars().collect();
        if query.len() > LONGEST_SEARCHED {
            return None;
        }
        let mut budget = SEARCH_BUDGET;
        (0..=allowed_edits(wanted)).find_map(|edits| self.search(&query, edits, &mut budget))
    }

    /// A name at most `edits` away, depth first, following the query's own characters
    /// first; the first one found.
    fn search(&self, query: &[char], edits: usize, budget: &mut usize) -> Option<usize> {
        let width = query.len() + 1;
        let deepest = query.len() + edits;
        // Distances are saturated here: anything above `edits` is as good as out of reach.
        let limit = u8::try_from(edits + 1).unwrap_or(u8::MAX);
        let saturate = |n: usize| u8::try_from(n).unwrap_or(u8::MAX).min(limit);
        // rows[d]: the row of the node being visited at depth d, the distance between its
        // prefix and each prefix of the query. Depth first, a node's parent row is always
        // the one above it.
        let mut rows = vec![limit; width * (deepest + 1)];
        for (j, cell) in rows[..width].iter_mut().enumerate() {
            *cell = saturate(j);
        }
        let found = |node: &Node, distance: u8| {
            node.name
                .filter(|_| distance < limit)
                .map(|name| name as usize)
        };
        if let Some(name) = found(&self.nodes[0], rows[query.len()]) {
            return Some(name);
        }
        let mut stack: Vec<(u32, usize)> = Vec::new();
        self.push_children(&self.nodes[0], 1, query, &mut stack);
        while let Some((index, depth)) = stack.pop() {
            if depth > deepest {
                continue;
            }
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let node = &self.nodes[index as usize];
            let (above, below) = rows.split_at_mut(depth * width);
            let previous = &above[(depth - 1) * width..];
            let row = &mut below[..width];
            row.fill(limit);
            let mut smallest = limit;
            for j in depth.saturating_sub(edits)..=(depth + edits).min(query.len()) {
                let value = if j == 0 {
                    saturate(depth)
                } else {
                    let substitution = previous[j - 1] + u8::from(node.label != query[j - 1]);
                    let deletion = previous[j] + 1;
                    let insertion = row[j - 1] + 1;
                    substitution.min(deletion).min(insertion).min(limit)
                };
                row[j] = value;
                smallest = smallest.min(value);
            }
            if let Some(name) = found(node, row[query.len()]) {
                return Some(name);
            }
            if smallest < limit && depth < deepest {
                self.push_children(node, depth + 1, query, &mut stack);
            }
        }
        None
    }

    /// Pushes a node's children so that they pop in insertion order, except that the child
    /// continuing the query (its character at `depth`) pops first.
    fn push_children(
        &self,
        node: &Node,
        depth: usize,
        query: &[char],
        stack: &mut Vec<(u32, usize)>,
    ) {
        let next = query.get(depth - 1);
        let continues = |&&child: &&u32| Some(&self.nodes[child as usize].label) == next;
        stack.extend(
            node.children
                .iter()
                .rev()
                .filter(|child| !continues(child))
                .map(|&child| (child, depth)),
        );
        stack.extend(
            node.children
                .iter()
                .filter(continues)
                .map(|&child| (child, depth)),
        );
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The index finds a name as near as comparing every name would, when the budget
        /// is not hit.
        #[test]
        fn the_index_agrees_with_comparing_every_name(
            names in prop::collection::vec("[abc]{0,6}", 0..40),
            wanted in "[abcd]{0,7}",
        ) {
            let index = NameIndex::new(names.iter().map(String::as_str));
            let nearest = names
                .iter()
                .map(|name| edit_distance(&wanted, name))
                .filter(|distance| *distance <= allowed_edits(&wanted))
                .min();
            let found = index.nearest(&wanted).map(|position| edit_distance(&wanted, &names[position]));
            prop_assert_eq!(found, nearest);
        }
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn allowed_edits_grow_with_the_word_up_to_three() {
        assert_eq!(allowed_edits("ab"), 1);
        assert_eq!(allowed_edits("abcdef"), 2);
        assert_eq!(allowed_edits(&"x".repeat(40)), MAX_EDITS);
    }

    #[test]
    fn the_index_finds_the_nearest_name_and_the_first_of_equals() {
        let names = ["metrics", "printer", "gen", "generator", "gem"];
        let index = NameIndex::new(names);
        assert_eq!(index.nearest("printr"), Some(1));
        assert_eq!(index.nearest("gen"), Some(2), "an exact name is nearest");
        assert_eq!(
            index.nearest("gex"),
            Some(2),
            "gen and gem tie; gen comes first"
        );
        assert_eq!(index.nearest("generatr"), Some(3));
        let prefixed = NameIndex::new(["xbcd", "abcx"]);
        assert_eq!(
            prefixed.nearest("abcd"),
            Some(1),
            "equally near, the one starting like the query wins"
        );
        assert_eq!(index.nearest("storage"), None);
        assert_eq!(NameIndex::new([]).nearest("x"), None);
    }

    #[test]
    fn the_index_search_is_bounded_among_many_similar_names() {
        let names: Vec<String> = (0..10_000).map(|i| format!("stage-{i:05}")).collect();
        let index = NameIndex::new(names.iter().map(String::as_str));
        assert_eq!(index.nearest("stage-01234x"), Some(1234));
        assert_eq!(index.nearest("stag-09999"), Some(9999));
    }

    #[test]
    fn suggests_only_close_candidates() {
        let candidates = ["metrics.in", "generator.out"];
        assert_eq!(closest("metrics.inn", candidates), Some("metrics.in"));
        assert_eq!(closest("storage.in", candidates), None);
        assert_eq!(closest("partition", ["partitions"]), Some("partitions"));
    }
}
