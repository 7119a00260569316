//! The rules a [`Trigger`] must follow, Beam's among them, checked by
//! [`WindowSpec::check`](super::WindowSpec::check) before anything runs.
//!
//! - The parts that repeat implicitly (a watermark trigger's early and late firings) and
//!   the parts that fire at most once by definition (`after_first`, `after_all`, the
//!   condition of `or_finally`) take triggers that fire once: Beam types them
//!   `OnceTrigger`.
//! - No trigger may finish before its window expires: a finished window drops every later
//!   element (Beam's "unsafe trigger may lose data", checked by its `GroupByKey`).
//! - Counts and alignment periods are positive.

// A SpecError carries the trigger it is about, to print it as written; a spec is checked
// once, so its size costs nothing that matters.
#![allow(clippy::result_large_err)]

use super::trigger::{Fault, Node};
use super::{SpecError, Trigger};

/// When a trigger can finish, at the earliest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Finish {
    /// As soon as a once part fires: any time.
    Anytime,
    /// No earlier than the watermark passing the end of the window.
    AtEndOfWindow,
    /// Never.
    Never,
}

/// Checks `trigger` for windows with `lateness` milliseconds of allowed lateness.
pub(crate) const fn check(trigger: &Trigger, lateness: i64) -> Result<(), SpecError> {
    if let Some(fault) = trigger.fault() {
        return Err(match fault {
            Fault::TooLarge => SpecError::TriggerTooLarge,
            Fault::WrongReceiver { method, expected } => SpecError::WrongReceiver {
                method,
                expected,
                trigger: *trigger,
            },
            Fault::NoParts { combinator } => SpecError::NoParts { combinator },
            Fault::ZeroPeriod => SpecError::ZeroPeriod { trigger: *trigger },
        });
    }
    let mut at = 0;
    while at < trigger.len() {
        if let Err(error) = check_part(trigger, at) {
            return Err(error);
        }
        at += 1;
    }
    let safe = match finish(trigger, 0) {
        Finish::Never => true,
        Finish::AtEndOfWindow => lateness == 0,
        Finish::Anytime => false,
    };
    if safe {
        Ok(())
    } else {
        Err(SpecError::FinishesEarly {
            trigger: *trigger,
            at_end_of_window: matches!(finish(trigger, 0), Finish::AtEndOfWindow),
        })
    }
}

/// The rules of one part.
const fn check_part(trigger: &Trigger, at: usize) -> Result<(), SpecError> {
    match trigger.node(at) {
        Node::ElementCount(0) => Err(SpecError::ZeroCount { trigger: *trigger }),
        Node::Watermark { early, late } => {
            if early && let Err(error) = once(trigger, trigger.child(at, 0), "the early firings") {
                return Err(error);
            }
            if late {
                return once(
                    trigger,
                    trigger.child(at, early as usize),
                    "the late firings",
                );
            }
            Ok(())
        }
        Node::AfterFirst(count) | Node::AfterAll(count) => {
            let place = match trigger.node(at) {
                Node::AfterFirst(_) => "each part of after_first",
                _ => "each part of after_all",
            };
            let mut n = 0;
            while n < count as usize {
                if let Err(error) = once(trigger, trigger.child(at, n), place) {
                    return Err(error);
                }
                n += 1;
            }
            Ok(())
        }
        Node::OrFinally => once(trigger, trigger.child(at, 1), "the condition of or_finally"),
        _ => Ok(()),
    }
}

/// Requires the part at `at` to fire at most once.
const fn once(trigger: &Trigger, at: usize, place: &'static str) -> Result<(), SpecError> {
    match trigger.node(at) {
        Node::Watermark {
            early: false,
            late: false,
        }
        | Node::ProcessingTime { .. }
        | Node::ElementCount(_)
        | Node::Never
        | Node::AfterFirst(_)
        | Node::AfterAll(_) => Ok(()),
        _ => Err(SpecError::NotOnce {
            place,
            part: at as u8,
            trigger: *trigger,
        }),
    }
}

/// When the part at `at` can finish, at the earliest.
const fn finish(trigger: &Trigger, at: usize) -> Finish {
    match trigger.node(at) {
        Node::Watermark { late: true, .. } | Node::Never | Node::Repeatedly => Finish::Never,
        Node::Watermark { late: false, .. } => Finish::AtEndOfWindow,
        Node::ProcessingTime { .. } | Node::ElementCount(_) | Node::Empty => Finish::Anytime,
        Node::OrFinally => earliest(
            finish(trigger, trigger.child(at, 0)),
            finish(trigger, trigger.child(at, 1)),
        ),
        Node::AfterFirst(count) => {
            let mut result = Finish::Never;
            let mut n = 0;
            while n < count as usize {
                result = earliest(result, finish(trigger, trigger.child(at, n)));
                n += 1;
            }
            result
        }
        // A sequence finishes with its last part, which starts after the others finished;
        // all of them finishes with the last to finish.
        Node::AfterEach(count) | Node::AfterAll(count) => {
            let mut result = Finish::Anytime;
            let mut n = 0;
            while n < count as usize {
                result = latest(result, finish(trigger, trigger.child(at, n)));
                n += 1;
            }
            result
        }
    }
}

const fn rank(finish: Finish) -> u8 {
    match finish {
        Finish::Anytime => 0,
        Finish::AtEndOfWindow => 1,
        Finish::Never => 2,
    }
}

const fn earliest(a: Finish, b: Finish) -> Finish {
    if rank(a) <= rank(b) { a } else { b }
}

const fn latest(a: Finish, b: Finish) -> Finish {
    if rank(a) >= rank(b) { a } else { b }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn beams_safe_triggers_pass() {
        for (trigger, lateness) in [
            (Trigger::on_time(), 600_000),
            (Trigger::watermark(), 0),
            (
                Trigger::watermark().early(Trigger::after_processing_time(MINUTE)),
                0,
            ),
            (Trigger::repeatedly(Trigger::element_count(1)), 600_000),
            (Trigger::never(), 600_000),
            (
                Trigger::repeatedly(Trigger::element_count(2)).or_finally(Trigger::watermark()),
                0,
            ),
            (
                Trigger::after_each(&[
                    Trigger::element_count(2),
                    Trigger::repeatedly(Trigger::after_processing_time(MINUTE)),
                ]),
                600_000,
            ),
        ] {
            assert_eq!(check(&trigger, lateness), Ok(()), "{trigger}");
        }
    }

    #[test]
    fn a_trigger_that_finishes_before_its_window_expires_is_refused() {
        let once = Trigger::element_count(5);
        assert_eq!(
            check(&once, 0),
            Err(SpecError::FinishesEarly {
                trigger: once,
                at_end_of_window: false
            })
        );
        let until_the_end =
            Trigger::repeatedly(Trigger::element_count(1)).or_finally(Trigger::watermark());
        assert_eq!(
            check(&until_the_end, 1),
            Err(SpecError::FinishesEarly {
                trigger: until_the_end,
                at_end_of_window: true
            })
        );
        let first = Trigger::after_first(&[Trigger::watermark(), Trigger::element_count(3)]);
        assert!(matches!(
            check(&first, 0),
            Err(SpecError::FinishesEarly { .. })
        ));
    }

    #[test]
    fn parts_that_must_fire_once_refuse_repeating_triggers() {
        let repeating = Trigger::repeatedly(Trigger::element_count(1));
        let early = Trigger::watermark().early(repeating);
        assert_eq!(
            check(&early, 0),
            Err(SpecError::NotOnce {
                place: "the early firings",
                part: 1,
                trigger: early
            })
        );
        let until = Trigger::repeatedly(Trigger::element_count(1)).or_finally(repeating);
        assert!(matches!(
            check(&until, 0),
            Err(SpecError::NotOnce {
                place: "the condition of or_finally",
                ..
            })
        ));
        let all = Trigger::repeatedly(Trigger::after_all(&[Trigger::on_time()]));
        assert!(matches!(
            check(&all, 0),
            Err(SpecError::NotOnce {
                place: "each part of after_all",
                ..
            })
        ));
    }

    #[test]
    fn counts_and_periods_must_be_positive() {
        let zero = Trigger::repeatedly(Trigger::element_count(0));
        assert_eq!(check(&zero, 0), Err(SpecError::ZeroCount { trigger: zero }));
        let unaligned = Trigger::after_processing_time(MINUTE).aligned_to(Duration::ZERO);
        assert!(matches!(
            check(&Trigger::repeatedly(unaligned), 0),
            Err(SpecError::ZeroPeriod { .. })
        ));
    }
}
