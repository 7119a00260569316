//! Consumer-group membership for backplanes that live inside one process.
//!
//! Kafka runs its own group coordinator; the in-memory and embedded backplanes use this one.
//! Members join with the topics they read; every partition of a topic is assigned to exactly
//! one of the members reading it, round robin in join order, and the assignment is
//! recomputed whenever a member joins or leaves (an eager rebalance). Members see the change
//! through [`GroupCoordinator::watch`] and re-read their assignment.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::TopicPartition;

/// Identifies a member within its group; later joiners get larger ids.
pub type MemberId = u64;

/// Tracks the members of every consumer group and who owns which partition.
///
/// ```
/// use runnel_backend::group::GroupCoordinator;
/// let groups = GroupCoordinator::default();
/// let first = groups.join("g", vec!["t".into()]);
/// let second = groups.join("g", vec!["t".into()]);
/// let partitions = |_: &str| 4;
/// assert_eq!(groups.assignment("g", first, partitions).len(), 2);
/// assert_eq!(groups.assignment("g", second, partitions).len(), 2);
/// groups.leave("g", second);
/// assert_eq!(groups.assignment("g", first, partitions).len(), 4);
/// ```
#[derive(Debug, Default)]
pub struct GroupCoordinator {
    groups: Mutex<HashMap<String, Group>>,
}

#[derive(Debug)]
struct Group {
    next_member: MemberId,
    members: BTreeMap<MemberId, Vec<String>>,
    generation: watch::Sender<u64>,
}

impl GroupCoordinator {
    /// Adds a member reading `topics` to `group` and returns its id. Every member of the
    /// group sees a new generation.
    pub fn join(&self, group: &str, topics: Vec<String>) -> MemberId {
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        let group = groups.entry(group.to_owned()).or_insert_with(|| Group {
            next_member: 0,
            members: BTreeMap::new(),
            generation: watch::Sender::new(0),
        });
        let id = group.next_member;
        group.next_member += 1;
        group.members.insert(id, topics);
        group.generation.send_modify(|generation| *generation += 1);
        id
    }

    /// Removes a member; its partitions go to the others.
    pub fn leave(&self, group: &str, member: MemberId) {
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = groups.get_mut(group)
            && state.members.remove(&member).is_some()
        {
            state.generation.send_modify(|generation| *generation += 1);
        }
    }

    /// A receiver that changes whenever the membership of `group` does.
    ///
    /// # Panics
    ///
    /// If nobody ever joined `group`: join first.
    pub fn watch(&self, group: &str) -> watch::Receiver<u64> {
        let groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        groups
            .get(group)
            .expect("watching a group that nobody joined")
            .generation
            .subscribe()
    }

    /// Checks that the members that `members` names (per group: the member a transactional
    /// producer's consumer joined as) still own every partition `offsets` commits, as of the
    /// current generation, so a member a rebalance replaced cannot commit a transaction
    /// over partitions it no longer owns. Groups without a member in `members` are not
    /// checked.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use runnel_backend::group::GroupCoordinator;
    /// use runnel_backend::{CommitOffset, GroupOffsets};
    /// let groups = GroupCoordinator::default();
    /// let first = groups.join("g", vec!["t".into()]);
    /// let commit = |partition| vec![GroupOffsets {
    ///     group: "g".into(),
    ///     offsets: vec![CommitOffset { topic: "t".into(), partition, offset: 1 }],
    /// }];
    /// let members = HashMap::from([("g".to_owned(), first)]);
    /// assert!(groups.check_owned(&members, &commit(1), |_| 2).is_ok());
    /// groups.join("g", vec!["t".into()]); // partition 1 moves to the newcomer
    /// assert!(groups.check_owned(&members, &commit(0), |_| 2).is_ok());
    /// assert!(groups.check_owned(&members, &commit(1), |_| 2).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Reassigned`](crate::Error::Reassigned) naming the first partition not owned.
    pub fn check_owned(
        &self,
        members: &HashMap<String, MemberId>,
        offsets: &[crate::GroupOffsets],
        partitions_of: impl Fn(&str) -> u32,
    ) -> crate::Result<()> {
        for group in offsets {
            let Some(member) = members.get(&group.group) else {
                continue;
            };
            let owned = self.assignment(&group.group, *member, &partitions_of);
            for offset in &group.offsets {
                let is_owned = owned.iter().any(|owned| {
                    *owned.topic == *offset.topic && owned.partition == offset.partition
                });
                if !is_owned {
                    return Err(crate::Error::Reassigned {
                        group: group.group.clone(),
                        topic: offset.topic.to_string(),
                        partition: offset.partition,
                    });
                }
            }
        }
        Ok(())
    }

    /// The partitions `member` owns, given each topic's partition count.
    pub fn assignment(
        &self,
        group: &str,
        member: MemberId,
        partitions_of: impl Fn(&str) -> u32,
    ) -> Vec<TopicPartition> {
        let groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(state) = groups.get(group) else {
            return Vec::new();
        };
        let Some(topics) = state.members.get(&member) else {
            return Vec::new();
        };
        let mut owned = Vec::new();
        for topic in topics {
            let readers: Vec<MemberId> = state
                .members
                .iter()
                .filter(|(_, subscribed)| subscribed.contains(topic))
                .map(|(id, _)| *id)
                .collect();
            let rank = readers.iter().position(|id| *id == member).unwrap_or(0);
            let topic_name: Arc<str> = Arc::from(topic.as_str());
            owned.extend(
                (0..partitions_of(topic))
                    .filter(|partition| *partition as usize % readers.len() == rank)
                    .map(|partition| TopicPartition::new(topic_name.clone(), partition)),
            );
        }
        owned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_reading_different_topics_do_not_share() {
        let groups = GroupCoordinator::default();
        let a = groups.join("g", vec!["a".into()]);
        let b = groups.join("g", vec!["b".into()]);
        assert_eq!(groups.assignment("g", a, |_| 2).len(), 2);
        assert_eq!(groups.assignment("g", b, |_| 2).len(), 2);
    }

    #[test]
    fn joining_bumps_the_generation() {
        let groups = GroupCoordinator::default();
        groups.join("g", vec!["t".into()]);
        let watch = groups.watch("g");
        let before = *watch.borrow();
        groups.join("g", vec!["t".into()]);
        assert!(*watch.borrow() > before);
    }
}
