//! [`ScriptedWatermarks`]: watermarks set from outside a streamlet, as the test kit does.

use tokio::sync::watch;

/// Watermarks set from outside the streamlet instead of generated from its input: the
/// test kit's `TestRun::watermark` uses them to reproduce a heuristic or perfect watermark
/// exactly. A streamlet given them (see `Context::scripted_watermarks` in `runnel-streamlet`) follows them and
/// ignores its own generator; the end of a bounded input still completes every window.
///
/// ```
/// use runnel_event_time::watermark::ScriptedWatermarks;
/// let (set, mut watermarks) = ScriptedWatermarks::channel();
/// assert_eq!(watermarks.current(), i64::MIN);
/// set.send_replace(Some(120_000));
/// assert_eq!(watermarks.current(), 120_000);
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedWatermarks {
    receiver: watch::Receiver<Option<i64>>,
}

impl ScriptedWatermarks {
    /// A sender to set watermarks with, and the watermarks it sets.
    pub fn channel() -> (watch::Sender<Option<i64>>, Self) {
        let (sender, receiver) = watch::channel(None);
        (sender, ScriptedWatermarks { receiver })
    }

    /// The latest watermark set, `i64::MIN` before the first.
    pub fn current(&mut self) -> i64 {
        self.receiver.borrow_and_update().unwrap_or(i64::MIN)
    }

    /// The latest watermark set, `i64::MIN` before the first, without marking it seen (so
    /// [`changed`](Self::changed) still reports it).
    pub fn latest(&self) -> i64 {
        self.receiver.borrow().unwrap_or(i64::MIN)
    }

    /// Waits until a new watermark is set and returns it. Never completes once the sender
    /// is gone.
    pub async fn changed(&mut self) -> i64 {
        if self.receiver.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        self.current()
    }
}
