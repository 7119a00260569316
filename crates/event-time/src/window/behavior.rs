//! [`OnTimeBehavior`] and [`ClosingBehavior`]: whether the on-time pane and the final pane
//! fire when they would be empty, as in Beam.

/// Whether the on-time pane fires when nothing arrived since the previous pane (Beam's
/// `Window.OnTimeBehavior`). "Empty" means no new elements: in discarding mode the pane's
/// value is then the aggregate of nothing (`Aggregate::result` of a fresh accumulator); in
/// accumulating modes it repeats the previous pane's value.
///
/// The on-time pane is the one a trigger's watermark part fires when the watermark passes
/// the end of the window. With [`FireAlways`](Self::FireAlways), Beam's default, every
/// window that has a watermark part emits it, so a consumer can count on it and pane
/// indices match Beam's.
///
/// ```
/// use runnel_event_time::window::OnTimeBehavior;
/// assert_eq!(OnTimeBehavior::default(), OnTimeBehavior::FireAlways);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnTimeBehavior {
    /// Always emit the on-time pane, even with nothing new in it. The default.
    #[default]
    FireAlways,
    /// Emit the on-time pane only if something arrived since the previous pane. A skipped
    /// pane takes no index: the next pane has the index the skipped one would have had.
    FireIfNonEmpty,
}

/// Whether a window emits a final pane when it expires (Beam's `Window.ClosingBehavior`).
///
/// A window expires when the watermark passes its end plus the allowed lateness (at once
/// with no allowed lateness; for every window at the end of a bounded input). A pane fired
/// at that moment is the window's last and says so (`is_last`). If the trigger does not
/// fire then, the window emits a final pane of the elements it has not emitted yet; with
/// [`FireIfNonEmpty`](Self::FireIfNonEmpty), Beam's default, only if there are any, so the
/// last pane a consumer sees may not be marked last. [`FireAlways`](Self::FireAlways)
/// always emits it, so every window that ever fired ends with exactly one pane with
/// `is_last`.
///
/// ```
/// use runnel_event_time::window::ClosingBehavior;
/// assert_eq!(ClosingBehavior::default(), ClosingBehavior::FireIfNonEmpty);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClosingBehavior {
    /// Emit a final pane only for elements not yet emitted. The default.
    #[default]
    FireIfNonEmpty,
    /// Always emit a final pane, marked `is_last`, even with nothing new in it.
    FireAlways,
}
