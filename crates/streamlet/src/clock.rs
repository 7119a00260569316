//! The processing-time clock, behind a seam so tests control it.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Tells the current processing time.
pub trait Clock: fmt::Debug + Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;
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
