//! [`Accumulation`]: how the panes of one window relate to each other.

/// How successive panes of one window relate.
///
/// ```
/// use runnel_event_time::window::Accumulation;
/// assert_eq!(Accumulation::default(), Accumulation::Accumulating);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Accumulation {
    /// Each pane holds only the elements that arrived since the previous pane; summing the
    /// panes gives the window's value.
    Discarding,
    /// Each pane holds every element of the window so far; the latest pane is the window's
    /// value. The default: a late pane is then a complete, corrected result.
    #[default]
    Accumulating,
    /// Like accumulating, but each new pane is preceded by a retraction of the previous
    /// one (a pane with `retraction: true` carrying the previous value), so a consumer that
    /// adds panes and subtracts retractions always holds the window's value, even when
    /// session windows merge.
    AccumulatingAndRetracting,
}
