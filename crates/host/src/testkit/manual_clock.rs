//! [`ManualClock`]: processing time that moves only when a test says so.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use tokio::sync::watch;

use runnel_streamlet::Clock;

/// A processing-time clock moved by hand. Sleepers wake when it is set to or past their
/// deadline; the clock remembers the deadlines asked for, so a driver can move time from
/// one deadline to the next and let each fire at its own time.
///
/// ```
/// use runnel_streamlet::Clock;
/// use runnel_host::testkit::ManualClock;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = ManualClock::new(1_000);
/// let wake = clock.sleep_until(1_500);
/// assert_eq!(clock.next_deadline(2_000), Some(1_500));
/// clock.set(1_500);
/// wake.await; // completes at once: the clock reads 1 500
/// assert_eq!(clock.now_millis(), 1_500);
/// # }
/// ```
#[derive(Debug)]
pub struct ManualClock {
    now: watch::Sender<i64>,
    deadlines: Mutex<BTreeSet<i64>>,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: i64) -> Self {
        ManualClock {
            now: watch::Sender::new(start),
            deadlines: Mutex::new(BTreeSet::new()),
        }
    }

    /// Moves the clock to `now`, waking the sleepers it reaches. The clock never goes
    /// back: an earlier time is ignored.
    pub fn set(&self, now: i64) {
        self.now.send_if_modified(|current| {
            let later = now > *current;
            if later {
                *current = now;
            }
            later
        });
        let mut deadlines = self
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *deadlines = deadlines.split_off(&(self.now_millis() + 1));
    }

    /// The earliest deadline a sleeper asked for that lies after now and at or before
    /// `until`.
    pub fn next_deadline(&self, until: i64) -> Option<i64> {
        let now = self.now_millis();
        if until <= now {
            return None;
        }
        let deadlines = self
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        deadlines.range(now + 1..=until).next().copied()
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        *self.now.borrow()
    }

    fn sleep_until(&self, deadline: i64) -> BoxFuture<'static, ()> {
        let mut now = self.now.subscribe();
        if deadline > *now.borrow() {
            self.deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(deadline);
        }
        Box::pin(async move {
            while *now.borrow_and_update() < deadline {
                if now.changed().await.is_err() {
                    // The clock is gone: time never comes.
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}
