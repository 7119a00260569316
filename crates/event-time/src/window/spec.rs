//! [`WindowSpec`]: the windows, trigger, accumulation mode, allowed lateness and pane
//! behaviours of a windowed computation, declared once as a constant, and [`SpecError`]:
//! why one cannot run.

use std::time::Duration;

use super::windows::millis;
use super::{Accumulation, ClosingBehavior, OnTimeBehavior, Trigger, Windows, trigger_check};

/// What a windowed computation does, apart from its key and its aggregate: the windows,
/// when panes fire, how they accumulate, how late an element may be, and whether empty
/// on-time and final panes fire.
///
/// Declare it as a constant, like a port. [`checked`](Self::checked) makes a mistake in it
/// a compile error; `WindowedAggregate::new` (in `runnel-streamlet`) checks it
/// when the streamlet is built in any case.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{Accumulation, Trigger, WindowSpec};
///
/// /// Two-minute windows, a speculative pane a minute after the first element of each,
/// /// late corrections for ten minutes.
/// pub const SCORES: WindowSpec = WindowSpec::tumbling(Duration::from_secs(120))
///     .trigger(
///         Trigger::watermark()
///             .early(Trigger::after_processing_time(Duration::from_secs(60)))
///             .late(Trigger::element_count(1)),
///     )
///     .allowed_lateness(Duration::from_secs(600))
///     .accumulation(Accumulation::AccumulatingAndRetracting)
///     .checked();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    pub(crate) windows: Windows,
    pub(crate) trigger: Trigger,
    pub(crate) accumulation: Accumulation,
    pub(crate) allowed_lateness: i64,
    pub(crate) on_time: OnTimeBehavior,
    pub(crate) closing: ClosingBehavior,
}

/// Why a [`WindowSpec`] cannot run. The message names the trigger as written and says what
/// to change.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{SpecError, Trigger, WindowSpec};
///
/// let spec = WindowSpec::tumbling(Duration::from_secs(60)).trigger(Trigger::element_count(100));
/// let error = spec.check().unwrap_err();
/// assert!(matches!(error, SpecError::FinishesEarly { .. }));
/// assert_eq!(
///     error.to_string(),
///     "trigger element_count(100) finishes once a part of it fires, before its window \
///      expires, and the window would drop every element after that: repeat it with \
///      Trigger::repeatedly, or end it with or_finally(Trigger::watermark()) and no allowed \
///      lateness"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
// Variants carry the trigger they are about, to print it as written: a spec is checked
// once, so the size costs nothing that matters.
#[allow(clippy::large_enum_variant)]
pub enum SpecError {
    /// A window size, slide or gap is zero or negative.
    #[error("window {what} must be at least 1 ms")]
    NotPositive {
        /// Which length: size, slide or gap.
        what: &'static str,
    },
    /// A trigger has more parts than a trigger can hold.
    #[error(
        "a trigger may have at most 16 parts (watermarks, delays, counts and combinators); this one has more"
    )]
    TriggerTooLarge,
    /// A method for one kind of trigger was called on another.
    #[error("{method}() applies to {expected} only, not to {trigger}")]
    WrongReceiver {
        /// The method.
        method: &'static str,
        /// The kind of trigger it applies to.
        expected: &'static str,
        /// The trigger it was called on.
        trigger: Trigger,
    },
    /// A combinator was given no triggers.
    #[error("{combinator}() needs at least one trigger")]
    NoParts {
        /// The combinator.
        combinator: &'static str,
    },
    /// An element count of zero.
    #[error("trigger {trigger}: element_count(0) never fires; the count must be at least 1")]
    ZeroCount {
        /// The whole trigger.
        trigger: Trigger,
    },
    /// A processing-time trigger aligned to a period of zero.
    #[error(
        "trigger {trigger}: the period a processing-time trigger is aligned to must be at least 1 ms"
    )]
    ZeroPeriod {
        /// The whole trigger.
        trigger: Trigger,
    },
    /// A part that must fire at most once is a trigger that can fire again (Beam types
    /// these parts `OnceTrigger`).
    #[error(
        "trigger {trigger}: {place} must fire once (element_count, after_processing_time, \
         watermark(), never, after_first or after_all), not {}{}",
        trigger.part(*part as usize),
        if place.ends_with("firings") { "; early and late firings repeat by themselves" } else { "" }
    )]
    NotOnce {
        /// Which part: "the early firings", "each part of after_first", ...
        place: &'static str,
        /// Where the offending part is in the trigger (pre-order).
        part: u8,
        /// The whole trigger.
        trigger: Trigger,
    },
    /// The trigger can finish while its window still takes elements, which would then be
    /// dropped (Beam's "unsafe trigger may lose data").
    #[error(
        "trigger {trigger} finishes {}, and the window would drop every element after that: \
         repeat it with Trigger::repeatedly, or end it with or_finally(Trigger::watermark()) \
         and no allowed lateness",
        if *at_end_of_window {
            "when the watermark passes the end of the window, before its allowed lateness runs out"
        } else {
            "once a part of it fires, before its window expires"
        }
    )]
    FinishesEarly {
        /// The trigger.
        trigger: Trigger,
        /// Whether it finishes at the end of the window (fine without allowed lateness),
        /// rather than at any time.
        at_end_of_window: bool,
    },
    /// Global windows end with the input, so nothing in them is ever late.
    #[error(
        "global windows take no allowed lateness: they end with the input, so no element is late"
    )]
    LatenessOnGlobalWindows,
}

impl SpecError {
    /// A fixed summary, for [`WindowSpec::checked`], which runs in `const` and cannot
    /// format.
    const fn summary(&self) -> &'static str {
        match self {
            SpecError::NotPositive { .. } => "invalid window spec: a window length is below 1 ms",
            SpecError::TriggerTooLarge => "invalid window spec: the trigger has more than 16 parts",
            SpecError::WrongReceiver { .. } => {
                "invalid window spec: early, late or aligned_to applied to the wrong kind of trigger"
            }
            SpecError::NoParts { .. } => "invalid window spec: a trigger combinator has no parts",
            SpecError::ZeroCount { .. } => "invalid window spec: element_count(0) never fires",
            SpecError::ZeroPeriod { .. } => {
                "invalid window spec: a processing-time trigger is aligned to a period of 0"
            }
            SpecError::NotOnce { .. } => {
                "invalid window spec: a trigger part that must fire once can fire again"
            }
            SpecError::FinishesEarly { .. } => {
                "invalid window spec: the trigger can finish before its window expires"
            }
            SpecError::LatenessOnGlobalWindows => {
                "invalid window spec: global windows take no allowed lateness"
            }
        }
    }
}

impl WindowSpec {
    /// Windows as given, fired on time and for every late element, accumulating, with no
    /// allowed lateness, the on-time pane always and a final pane only with new elements.
    pub const fn new(windows: Windows) -> Self {
        WindowSpec {
            windows,
            trigger: Trigger::on_time(),
            accumulation: Accumulation::Accumulating,
            allowed_lateness: 0,
            on_time: OnTimeBehavior::FireAlways,
            closing: ClosingBehavior::FireIfNonEmpty,
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

    /// One window per key for all time, ending with the input: the batch case, and
    /// per-key state emitted by a trigger (Beam's `GlobalWindows`).
    pub const fn global() -> Self {
        Self::new(Windows::Global)
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
    /// its end, so late elements still update it and fire late panes. After that the
    /// window expires: its final pane fires (see [`ClosingBehavior`]), its state is dropped
    /// and later elements go to the late output.
    pub const fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness = millis(lateness);
        self
    }

    /// Sets whether the on-time pane fires with nothing new in it (default: always, as
    /// Beam).
    pub const fn on_time_behavior(mut self, behavior: OnTimeBehavior) -> Self {
        self.on_time = behavior;
        self
    }

    /// Sets whether an expiring window fires a final pane with nothing new in it (default:
    /// only with new elements, as Beam).
    pub const fn closing_behavior(mut self, behavior: ClosingBehavior) -> Self {
        self.closing = behavior;
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

    /// Whether the on-time pane fires when empty.
    pub const fn on_time_behavior_config(&self) -> OnTimeBehavior {
        self.on_time
    }

    /// Whether an expiring window fires an empty final pane.
    pub const fn closing_behavior_config(&self) -> ClosingBehavior {
        self.closing
    }

    /// Checks the window lengths and the trigger's rules (see [`Trigger`]).
    ///
    /// # Errors
    ///
    /// The first [`SpecError`] found.
    #[allow(clippy::result_large_err)] // see SpecError
    pub const fn check(&self) -> Result<(), SpecError> {
        let lengths = match self.windows {
            Windows::Tumbling { size } | Windows::Sliding { size, .. } if size <= 0 => {
                Err(SpecError::NotPositive { what: "size" })
            }
            Windows::Sliding { slide, .. } if slide <= 0 => {
                Err(SpecError::NotPositive { what: "slide" })
            }
            Windows::Session { gap } if gap <= 0 => Err(SpecError::NotPositive { what: "gap" }),
            Windows::Global if self.allowed_lateness != 0 => {
                Err(SpecError::LatenessOnGlobalWindows)
            }
            _ => Ok(()),
        };
        if lengths.is_err() {
            return lengths;
        }
        trigger_check::check(&self.trigger, self.allowed_lateness)
    }

    /// The spec, checked: in a `const` item a mistake is a compile error.
    ///
    /// # Panics
    ///
    /// If [`check`](Self::check) fails (at compile time in a `const` item), with a
    /// summary of the error; `check` gives the whole message.
    ///
    /// ```compile_fail,E0080
    /// use std::time::Duration;
    /// use runnel_event_time::window::{Trigger, WindowSpec};
    /// // error: invalid window spec: the trigger can finish before its window expires
    /// const ONCE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60))
    ///     .trigger(Trigger::element_count(10))
    ///     .checked();
    /// ```
    pub const fn checked(self) -> Self {
        match self.check() {
            Ok(()) => self,
            Err(error) => panic!("{}", error.summary()),
        }
    }
}
