//! [`Turns`]: when a task that never has to wait gives its worker back to the runtime.
//!
//! A streamlet handed buffered records never waits, so its task would not yield until the
//! buffer ran dry. Tokio runs a task woken by the running one (its committer, say) next on the
//! same worker, in a slot the other workers cannot steal from: without a yield that task
//! waits for the whole buffer, and with it the commits. Yielding after a count of messages
//! (tokio's cooperative budget yields every 128) bounds the wait by a count: long when each
//! message takes long, and needless trips through the scheduler when each takes a
//! microsecond (on the three-stage pipeline benchmark, 13% of its throughput). Turns bound
//! it by time instead: a task yields once it has handed out messages for a [`TURN`], and
//! looks at the clock every message when messages are slow, every few dozen when they are
//! fast.

use std::time::{Duration, Instant};

/// How long a task hands out buffered messages before it yields.
pub(crate) const TURN: Duration = Duration::from_millis(2);

/// The most messages between two looks at the clock: after a run of fast messages, a sudden
/// slow one is noticed within this many.
const MOST_BETWEEN_LOOKS: u32 = 64;

/// Decides when a task handing out messages without waiting yields.
#[derive(Debug)]
pub(crate) struct Turns {
    /// When the current turn started.
    started: Instant,
    /// When the clock was last looked at.
    looked: Instant,
    /// Messages between looks at the clock: halved when a look comes more than [`TURN`] / 4
    /// after the one before, doubled (up to [`MOST_BETWEEN_LOOKS`]) when less than
    /// [`TURN`] / 16.
    look_every: u32,
    /// Messages left until the next look.
    until_look: u32,
    /// The turn is over and the task has not yielded yet.
    overdue: bool,
}

impl Turns {
    /// A turn starting at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Turns {
            started: now,
            looked: now,
            look_every: 1,
            until_look: 1,
            overdue: false,
        }
    }

    /// Whether the task should yield before handing out one more message; `clock` is read
    /// only when it is time to look. Once due, it stays due until [`yielded`](Self::yielded):
    /// a yield can be lost, when the future that was to yield is polled once and dropped
    /// (as `now_or_never` does), and the next call must yield instead.
    pub(crate) fn due(&mut self, clock: impl FnOnce() -> Instant) -> bool {
        if self.overdue {
            return true;
        }
        self.until_look -= 1;
        if self.until_look > 0 {
            return false;
        }
        let now = clock();
        let since_look = now.saturating_duration_since(self.looked);
        if since_look > TURN / 4 {
            self.look_every = (self.look_every / 2).max(1);
        } else if since_look < TURN / 16 {
            self.look_every = (self.look_every * 2).min(MOST_BETWEEN_LOOKS);
        }
        self.until_look = self.look_every;
        self.looked = now;
        self.overdue = now.saturating_duration_since(self.started) >= TURN;
        self.overdue
    }

    /// The task yielded and runs again at `now`: the next turn starts.
    pub(crate) fn yielded(&mut self, now: Instant) {
        self.overdue = false;
        self.started = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out `messages` messages `each` apart from `start`; returns the yields and the
    /// looks at the clock.
    fn run(turns: &mut Turns, start: Instant, each: Duration, messages: u32) -> (u32, u32) {
        let (mut yields, mut looks) = (0, 0);
        for message in 1..=messages {
            let now = start + each * message;
            if turns.due(|| {
                looks += 1;
                now
            }) {
                yields += 1;
                turns.yielded(now);
            }
        }
        (yields, looks)
    }

    #[test]
    fn fast_messages_yield_once_a_turn_and_rarely_look_at_the_clock() {
        let start = Instant::now();
        let mut turns = Turns::new(start);
        // 100,000 messages of a microsecond: 100 ms, 50 turns.
        let (yields, looks) = run(&mut turns, start, Duration::from_micros(1), 100_000);
        assert!((45..=50).contains(&yields), "{yields} yields");
        assert!(
            looks <= 100_000 / 32,
            "{looks} looks at the clock for 100,000 messages"
        );
    }

    #[test]
    fn slow_messages_look_at_the_clock_every_message_and_yield_each_turn() {
        let start = Instant::now();
        let mut turns = Turns::new(start);
        // A message of 5 ms is past a whole turn: every one yields.
        let (yields, looks) = run(&mut turns, start, Duration::from_millis(5), 20);
        assert_eq!((yields, looks), (20, 20));
    }

    #[test]
    fn a_slowdown_after_fast_messages_is_noticed_within_64_messages() {
        let start = Instant::now();
        let mut turns = Turns::new(start);
        run(&mut turns, start, Duration::from_nanos(100), 200_000);
        // Messages now take 1 ms: looks were spread over 64 messages, and within twice
        // that come back to every message.
        let later = start + Duration::from_millis(20);
        let (yields, looks) = run(&mut turns, later, Duration::from_millis(1), 128);
        assert!(yields >= 4 && looks >= 7, "{yields} yields, {looks} looks");
        let later = later + Duration::from_millis(128);
        let (yields, looks) = run(&mut turns, later, Duration::from_millis(1), 100);
        assert_eq!((yields, looks), (50, 100));
    }

    #[test]
    fn a_lost_yield_is_due_again_at_the_next_message_without_a_look() {
        let start = Instant::now();
        let mut turns = Turns::new(start);
        assert!(turns.due(|| start + TURN));
        // The future that was to yield was dropped: no `yielded`.
        assert!(turns.due(|| unreachable!("an overdue turn does not look at the clock")));
        turns.yielded(start + TURN);
        assert!(!turns.due(|| start + TURN + TURN / 2));
    }
}
