//! [`Pending`]: the halves of rides waiting for their other half, by ride id, each until
//! its deadline.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{TaxiFare, TaxiRide, TaxiRideFare};

/// What arrived of one ride so far.
#[runnel::serializable]
#[derive(Debug, Clone, PartialEq)]
pub enum Half {
    /// The ride's start, waiting for its fare.
    Ride(TaxiRide),
    /// The fare, waiting for the ride's start.
    Fare(TaxiFare),
}

/// A half and when it is given up on (processing time, milliseconds since the Unix epoch).
#[runnel::serializable]
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The half.
    pub half: Half,
    /// When it is given up on.
    pub deadline: i64,
}

/// The halves waiting for their other half. Serializes as the map of halves by ride id.
#[runnel::serializable]
#[derive(Clone, Debug, Default)]
#[serde(from = "BTreeMap<i64, Waiting>", into = "BTreeMap<i64, Waiting>")]
pub struct Pending {
    waiting: BTreeMap<i64, Waiting>,
    /// (deadline, ride id) of every waiting half, to find the ones due.
    deadlines: BTreeSet<(i64, i64)>,
}

impl Pending {
    /// Takes a half: returns the joined ride and fare if the other half was waiting;
    /// otherwise the half waits until `deadline` (a half of the same kind waiting for the
    /// same ride, a duplicate, is replaced).
    pub fn arrive(&mut self, ride_id: i64, half: Half, deadline: i64) -> Option<TaxiRideFare> {
        match (self.waiting.remove(&ride_id), half) {
            (Some(waiting), half) => {
                self.deadlines.remove(&(waiting.deadline, ride_id));
                match (waiting.half, half) {
                    (Half::Ride(ride), Half::Fare(fare)) | (Half::Fare(fare), Half::Ride(ride)) => {
                        return Some(TaxiRideFare {
                            ride_id,
                            total_fare: fare.total_fare,
                            ride,
                            fare,
                        });
                    }
                    (_, half) => self.wait(ride_id, half, deadline),
                }
            }
            (None, half) => self.wait(ride_id, half, deadline),
        }
        None
    }

    fn wait(&mut self, ride_id: i64, half: Half, deadline: i64) {
        self.deadlines.insert((deadline, ride_id));
        self.waiting.insert(ride_id, Waiting { half, deadline });
    }

    /// The earliest deadline, if any half waits.
    pub fn next_deadline(&self) -> Option<i64> {
        self.deadlines.first().map(|(deadline, _)| *deadline)
    }

    /// Removes and returns the halves whose deadline is `now` or earlier, earliest first.
    pub fn expire(&mut self, now: i64) -> Vec<Half> {
        let mut expired = Vec::new();
        while let Some(&(deadline, ride_id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(waiting) = self.waiting.remove(&ride_id) {
                expired.push(waiting.half);
            }
        }
        expired
    }

    /// Removes and returns every waiting half.
    pub fn drain(&mut self) -> Vec<Half> {
        self.expire(i64::MAX)
    }

    /// How many halves wait.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no half waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

impl From<BTreeMap<i64, Waiting>> for Pending {
    fn from(waiting: BTreeMap<i64, Waiting>) -> Self {
        let deadlines = waiting
            .iter()
            .map(|(ride_id, waiting)| (waiting.deadline, *ride_id))
            .collect();
        Pending { waiting, deadlines }
    }
}

impl From<Pending> for BTreeMap<i64, Waiting> {
    fn from(pending: Pending) -> Self {
        pending.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::data::{fare, ride};

    #[test]
    fn halves_join_in_either_order_and_the_rest_expire_in_deadline_order() {
        let mut pending = Pending::default();
        assert_eq!(pending.arrive(1, Half::Ride(ride(1)), 100), None);
        assert_eq!(pending.arrive(2, Half::Fare(fare(2)), 50), None);
        assert_eq!(pending.arrive(3, Half::Fare(fare(3)), 70), None);
        let joined = pending.arrive(1, Half::Fare(fare(1)), 120).unwrap();
        assert_eq!((joined.ride_id, joined.total_fare), (1, fare(1).total_fare));
        let joined = pending.arrive(3, Half::Ride(ride(3)), 130).unwrap();
        assert_eq!(joined.ride, ride(3));
        assert_eq!(pending.next_deadline(), Some(50));
        assert_eq!(pending.expire(49), []);
        assert_eq!(pending.expire(50), [Half::Fare(fare(2))]);
        assert!(pending.is_empty());
    }

    #[test]
    fn a_duplicate_half_replaces_the_waiting_one_and_the_state_round_trips() {
        let mut pending = Pending::default();
        pending.arrive(4, Half::Ride(ride(4)), 10);
        pending.arrive(4, Half::Ride(ride(4)), 20);
        pending.arrive(5, Half::Fare(fare(5)), 15);
        assert_eq!(pending.len(), 2);
        let saved = runnel::serde_json::to_vec(&pending).unwrap();
        let mut restored: Pending = runnel::serde_json::from_slice(&saved).unwrap();
        assert_eq!(restored.next_deadline(), Some(15));
        assert_eq!(restored.drain(), [Half::Fare(fare(5)), Half::Ride(ride(4))]);
    }
}
