//! "Did you mean" suggestions: the closest candidate by edit distance, if close enough.

/// The candidate closest to `wanted`, if its edit distance is small for the length of the
/// word (at most a third of it, and at least 1 allowed edit); ties go to the first candidate.
pub(crate) fn closest<'c>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let allowed = (wanted.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(wanted, candidate), candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// `"; did you mean 'x'?"`, or nothing.
pub(crate) fn did_you_mean<'c>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn suggests_only_close_candidates() {
        let candidates = ["metrics.in", "generator.out"];
        assert_eq!(closest("metrics.inn", candidates), Some("metrics.in"));
        assert_eq!(closest("storage.in", candidates), None);
        assert_eq!(
            did_you_mean("partition", ["partitions"]),
            "; did you mean 'partitions'?"
        );
    }
}
