//! Records an inlet cannot deliver or the streamlet cannot process: each is handled once by
//! the inlet's bad-data policy, so one poison record never stalls its partition.
//!
//! A record is rejected when it does not decode, when the streamlet rejects it
//! ([`Message::reject`](crate::Message::reject)), when handling it failed on bad data (an
//! output too large for its topic; see [`CommitToken::settle`]), or when the streamlet
//! failed several times in a row while it was the last record handed out
//! ([`FailedAttempts`]).
//!
//! The policy itself is applied here, by `InletHandle::apply_policy`; the handle is defined
//! beside the [`CommitToken`] that holds it, in `message.rs`.

use std::sync::{Mutex, PoisonError};

use runnel_blueprint::descriptor::BadDataPolicy;

use crate::dead_letter::Origin;
use crate::message::{CommitToken, InletHandle};
use crate::{Error, Result};

/// A record rejected under the `fail` policy: the error the streamlet fails with.
#[derive(Debug, thiserror::Error)]
#[error("record at offset {offset} of {topic}/{partition} on inlet '{inlet}' {reason}")]
pub struct RejectedRecord {
    /// The inlet.
    pub inlet: String,
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The offset.
    pub offset: u64,
    /// What happened to it, as a predicate: `does not decode: ...`,
    /// `was rejected by the streamlet: ...`.
    pub reason: String,
}

impl InletHandle {
    /// Applies the policy to the message `token` commits; `reason` completes
    /// "record at offset ... on inlet '...'".
    pub(crate) async fn apply_policy(&self, token: CommitToken, reason: String) -> Result<()> {
        let (partition, offset) = (token.partition, token.offset);
        let (topic, port) = (&*self.topic, self.port);
        match self.policy {
            BadDataPolicy::DeadLetter => {
                tracing::warn!(
                    inlet = port,
                    %topic,
                    partition,
                    offset,
                    "sending record at offset {offset} of {topic}/{partition} to the dead-letter topic '{}': it {reason}",
                    self.dead_letters.topic
                );
                let (inlet, partition, offset, record, permit) = token.into_commit();
                let origin = Origin {
                    inlet: port,
                    topic: inlet.topic.clone(),
                    partition,
                    offset,
                };
                self.dead_letters
                    .send(&origin, record, &reason)
                    .await
                    .map_err(Error::external)?;
                self.metrics.count_dead_lettered();
                self.acknowledgements
                    .commit(self.index, partition, offset, None, permit);
                Ok(())
            }
            BadDataPolicy::Skip => {
                tracing::warn!(
                    inlet = port,
                    %topic,
                    partition,
                    offset,
                    "skipping record at offset {offset} of {topic}/{partition}: it {reason}"
                );
                self.metrics.count_skipped();
                let (_, partition, offset, _, permit) = token.into_commit();
                self.acknowledgements
                    .commit(self.index, partition, offset, None, permit);
                Ok(())
            }
            BadDataPolicy::Fail => Err(Error::bad_data(RejectedRecord {
                inlet: port.to_owned(),
                topic: topic.to_owned(),
                partition,
                offset,
                reason,
            })),
        }
    }
}

/// The record a streamlet instance was handling when it failed, remembered across restarts
/// so that a record that fails it again and again is given up on.
///
/// Every message handed out is noted; when the
/// instance fails on something attributable to a record (an internal or bad-data error, or
/// a panic, but not an external system being unavailable), its supervisor reports it
/// ([`record_failure`](FailedAttempts::record_failure)) and the last message handed out
/// becomes the suspect. A restarted instance reads the suspect again; once it has failed
/// `max_attempts` times in a row with the same suspect, the inlet hands that record to its
/// bad-data policy instead of delivering it, with the last failure as the reason.
///
/// ```
/// use runnel_streamlet::FailedAttempts;
/// let attempts = FailedAttempts::new(3);
/// assert_eq!(attempts.max_attempts(), 3);
/// ```
#[derive(Debug)]
pub struct FailedAttempts {
    max_attempts: u32,
    state: Mutex<Attempts>,
}

/// A record by its inlet's position in the shape, partition and offset.
type Position = (usize, u32, u64);

#[derive(Debug, Default)]
struct Attempts {
    last_delivered: Option<Position>,
    suspect: Option<Suspect>,
}

#[derive(Debug)]
struct Suspect {
    position: Position,
    failures: u32,
    last_error: String,
}

/// A record given up on: it failed the streamlet this many times, the last time with this
/// error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GiveUp {
    pub(crate) failures: u32,
    pub(crate) last_error: String,
}

impl FailedAttempts {
    /// Gives up on a record after it failed the instance `max_attempts` times in a row (at
    /// least once).
    pub fn new(max_attempts: u32) -> Self {
        FailedAttempts {
            max_attempts: max_attempts.max(1),
            state: Mutex::default(),
        }
    }

    /// How many failures in a row a record may cause before it is given up on.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Notes that the instance failed, with `error`: the record handed out last is the
    /// suspect. Returns how often in a row it has been the suspect, or `None` when no record
    /// was handed out since the last start.
    pub fn record_failure(&self, error: &str) -> Option<u32> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let position = state.last_delivered.take()?;
        let failures = match &mut state.suspect {
            Some(suspect) if suspect.position == position => {
                suspect.failures += 1;
                suspect.last_error = error.to_owned();
                suspect.failures
            }
            _ => {
                state.suspect = Some(Suspect {
                    position,
                    failures: 1,
                    last_error: error.to_owned(),
                });
                1
            }
        };
        Some(failures)
    }

    /// Notes that the record at `position` is about to be handed out, or returns why it must
    /// be given up on instead.
    pub(crate) fn deliver(&self, position: Position) -> Option<GiveUp> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let give_up = state.suspect.as_ref().is_some_and(|suspect| {
            suspect.position == position && suspect.failures >= self.max_attempts
        });
        if give_up {
            let suspect = state.suspect.take().expect("checked above");
            return Some(GiveUp {
                failures: suspect.failures,
                last_error: suspect.last_error,
            });
        }
        state.last_delivered = Some(position);
        None
    }
}

impl Default for FailedAttempts {
    /// Gives up after 3 failures in a row.
    fn default() -> Self {
        FailedAttempts::new(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_given_up_on_after_failing_the_streamlet_max_attempts_times_in_a_row() {
        let attempts = FailedAttempts::new(2);
        assert_eq!(attempts.deliver((0, 1, 7)), None);
        assert_eq!(attempts.record_failure("boom"), Some(1));
        assert_eq!(attempts.deliver((0, 1, 7)), None);
        assert_eq!(attempts.record_failure("boom again"), Some(2));
        assert_eq!(
            attempts.deliver((0, 1, 7)),
            Some(GiveUp {
                failures: 2,
                last_error: "boom again".to_owned()
            })
        );
        // Given up once: the suspect is forgotten.
        assert_eq!(attempts.deliver((0, 1, 8)), None);
    }

    #[test]
    fn failures_on_different_records_do_not_add_up() {
        let attempts = FailedAttempts::new(2);
        attempts.deliver((0, 0, 1));
        assert_eq!(attempts.record_failure("a"), Some(1));
        attempts.deliver((0, 0, 1));
        attempts.deliver((0, 0, 2));
        assert_eq!(attempts.record_failure("b"), Some(1));
        assert_eq!(attempts.deliver((0, 0, 1)), None);
        assert_eq!(attempts.deliver((0, 0, 2)), None);
    }

    #[test]
    fn a_failure_before_any_delivery_has_no_suspect() {
        let attempts = FailedAttempts::new(1);
        assert_eq!(attempts.record_failure("connecting failed"), None);
    }
}
