//! [`Aggregate`]: an incremental aggregation, kept as one accumulator per window and key.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// An aggregation computed incrementally: elements are added to an accumulator as they
/// arrive, accumulators of two parts of a window merge (for sliding windows kept in
/// slices, and for sessions that merge), and the result is read when a pane fires. State
/// is therefore one accumulator per window and key, never a buffer of records (unless the
/// accumulator is one, as in [`ProcessWindow`](super::ProcessWindow)).
///
/// Accumulators are checkpointed, so they are serde types. `result` is only called on
/// accumulators that saw at least one element.
///
/// ```
/// use runnel_event_time::window::Aggregate;
///
/// /// The spread (max - min) of readings.
/// #[derive(Debug)]
/// struct Spread;
///
/// impl Aggregate for Spread {
///     type Input = f64;
///     type Accumulator = Option<(f64, f64)>;
///     type Output = f64;
///
///     fn create(&self) -> Self::Accumulator {
///         None
///     }
///     fn add(&self, acc: &mut Self::Accumulator, value: &f64) {
///         let (low, high) = acc.get_or_insert((*value, *value));
///         *low = low.min(*value);
///         *high = high.max(*value);
///     }
///     fn merge(&self, acc: &mut Self::Accumulator, other: &Self::Accumulator) {
///         if let Some((low, high)) = *other {
///             self.add(acc, &low);
///             self.add(acc, &high);
///         }
///     }
///     fn result(&self, acc: &Self::Accumulator) -> f64 {
///         acc.map_or(0.0, |(low, high)| high - low)
///     }
/// }
///
/// let mut acc = Spread.create();
/// Spread.add(&mut acc, &3.0);
/// Spread.add(&mut acc, &7.5);
/// assert_eq!(Spread.result(&acc), 4.5);
/// ```
pub trait Aggregate: Send + 'static {
    /// What is aggregated.
    type Input;
    /// The running state of one window and key.
    type Accumulator: Clone + Serialize + DeserializeOwned + Send + 'static;
    /// What a pane carries.
    type Output: Clone + Serialize + DeserializeOwned + Send + 'static;

    /// An accumulator that has seen nothing.
    fn create(&self) -> Self::Accumulator;

    /// Adds one element.
    fn add(&self, accumulator: &mut Self::Accumulator, input: &Self::Input);

    /// Adds everything `other` has seen.
    fn merge(&self, accumulator: &mut Self::Accumulator, other: &Self::Accumulator);

    /// The value of a pane.
    fn result(&self, accumulator: &Self::Accumulator) -> Self::Output;

    /// Removes from `accumulator` everything `other` has seen, where `accumulator` saw it
    /// too (merged `other`, or added its elements): the inverse of [`merge`](Self::merge).
    /// Returns whether it did; the default does nothing and returns `false`, as a minimum or
    /// a maximum must. The answer must not depend on the accumulators.
    ///
    /// With it, a sliding window fires by updating its predecessor's accumulator with the
    /// slices that left and entered it, not by merging all of its slices, so small slides
    /// cost little more than large ones. Implement it only where subtracting is exact
    /// (integer counts and sums): with floating-point rounding, a pane's value would depend
    /// on which panes fired before it, and a restored operator could emit other values.
    fn subtract(&self, accumulator: &mut Self::Accumulator, other: &Self::Accumulator) -> bool {
        let _ = (accumulator, other);
        false
    }
}
