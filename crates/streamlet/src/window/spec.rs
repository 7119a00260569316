//! [`WindowSpec`]: the windows, trigger, accumulation mode and allowed lateness of a
//! windowed computation, declared once as a constant.

use std::time::Duration;

use super::windows::millis;
use super::{Accumulation, Trigger, Windows};

/// What a windowed computation does, apart from its key and its aggregate: the windows,
/// when panes fire, how they accumulate, and how late an element may be.
///
/// Declare it as a constant, like a port:
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::window::{Accumulation, Firing, Trigger, WindowSpec};
///
/// /// Two-minute windows, a speculative pane every minute, late corrections for ten minutes.
/// pub const SCORES: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120))
///     .trigger(Trigger::on_time().early(Firing::after_delay(Duration::from_secs(60))))
///     .allowed_lateness(Duration::from_secs(600))
///     .accumulation(Accumulation::AccumulatingAndRetracting);
/// assert!(SCORES.check().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    pub(crate) windows: Windows,
    pub(crate) trigger: Trigger,
    pub(crate) accumulation: Accumulation,
    pub(crate) allowed_lateness: i64,
}

/// Why a [`WindowSpec`] cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A window size, slide or gap is zero or negative.
    #[error("window {what} must be at least 1 ms")]
    NotPositive {
        /// Which length: size, slide or gap.
        what: &'static str,
    },
}

impl WindowSpec {
    /// Windows as given, fired on time, accumulating, with no allowed lateness.
    pub const fn new(windows: Windows) -> Self {
        WindowSpec {
            windows,
            trigger: Trigger::on_time(),
            accumulation: Accumulation::Accumulating,
            allowed_lateness: 0,
        }
    }

    /// Back-to-back windows of `size`.
    pub const fn tumbling(size: Duration) -> Self {
        Self::new(Windows::tumbling(size))
    }

    /// Windows of `size` starting every `slide`.
    pub const fn sliding(size: Duration, slide: Duration) -> Self {
        Self::new(Windows::sliding(size, slide))
    }

    /// Sessions that close after `gap` without elements.
    pub const fn session(gap: Duration) -> Self {
        Self::new(Windows::session(gap))
    }

    /// Sets when panes fire.
    pub const fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// Sets how successive panes relate.
    pub const fn accumulation(mut self, accumulation: Accumulation) -> Self {
        self.accumulation = accumulation;
        self
    }

    /// Keeps a window's state this long (in event time, measured by the watermark) after
    /// its end, so late elements still update it and fire late panes. After that the state
    /// is dropped and later elements go to the late output.
    pub const fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness = millis(lateness);
        self
    }

    /// The windows.
    pub const fn windows(&self) -> Windows {
        self.windows
    }

    /// The trigger.
    pub const fn trigger_config(&self) -> Trigger {
        self.trigger
    }

    /// The accumulation mode.
    pub const fn accumulation_mode(&self) -> Accumulation {
        self.accumulation
    }

    /// The allowed lateness in milliseconds.
    pub const fn allowed_lateness_millis(&self) -> i64 {
        self.allowed_lateness
    }

    /// Checks the lengths.
    ///
    /// # Errors
    ///
    /// [`SpecError::NotPositive`] for a size, slide or gap below 1 ms.
    pub const fn check(&self) -> Result<(), SpecError> {
        match self.windows {
            Windows::Tumbling { size } | Windows::Sliding { size, .. } if size <= 0 => {
                Err(SpecError::NotPositive { what: "size" })
            }
            Windows::Sliding { slide, .. } if slide <= 0 => {
                Err(SpecError::NotPositive { what: "slide" })
            }
            Windows::Session { gap } if gap <= 0 => Err(SpecError::NotPositive { what: "gap" }),
            _ => Ok(()),
        }
    }
}
