//! The processing-time clock, behind a seam so tests control it.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

/// Tells the current processing time, and waits for a later one.
///
/// Processing-time behaviour (early and late firings after a delay, idle partitions,
/// checkpoint intervals) reads the clock and sleeps through it, so a test kit clock
/// (the test kit's `ManualClock`) makes that behaviour deterministic.
///
/// ```
/// use runnel_streamlet::{Clock, SystemClock};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = SystemClock;
/// let start = clock.now_millis();
/// clock.sleep_until(start + 5).await;
/// assert!(clock.now_millis() >= start + 5);
/// # }
/// ```
pub trait Clock: fmt::Debug + Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;

    /// Completes once the clock reads `deadline` or later. The default sleeps on the
    /// tokio timer for the difference.
    fn sleep_until(&self, deadline: i64) -> BoxFuture<'static, ()> {
        let wait = deadline.saturating_sub(self.now_millis()).max(0);
        Box::pin(tokio::time::sleep(Duration::from_millis(wait as u64)))
    }
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as i64)
    }
}
