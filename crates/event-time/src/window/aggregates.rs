//! The built-in aggregates: [`Count`], [`Sum`], [`Min`], [`Max`], [`Average`], and
//! [`ProcessWindow`], which keeps every element for a function over the whole window.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Add;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Aggregate;

/// A number the built-in aggregates can add and compare.
pub trait Number:
    Copy + PartialOrd + Add<Output = Self> + Default + Serialize + DeserializeOwned + Send + 'static
{
    /// The value as `f64`, for averages.
    fn to_f64(self) -> f64;

    /// `self - other`, where `self` is a sum that includes `other`, if that is exact: for
    /// integers (wrapping, as their sums do in release builds), not for floating point,
    /// whose rounding would make a sum depend on the order it was computed in. The default
    /// is `None`. Lets [`Sum`] subtract ([`Aggregate::subtract`]).
    fn exact_difference(self, other: Self) -> Option<Self> {
        let _ = other;
        None
    }
}

macro_rules! number {
    ($($type:ty),*) => {$(
        impl Number for $type {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
number!(f32, f64);

macro_rules! integer {
    ($($type:ty),*) => {$(
        impl Number for $type {
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn exact_difference(self, other: Self) -> Option<Self> {
                Some(self.wrapping_sub(other))
            }
        }
    )*};
}
integer!(i32, i64, u32);

/// Counts elements.
///
/// ```
/// use runnel_event_time::window::{Aggregate, Count};
/// let count = Count::<String>::new();
/// let mut acc = count.create();
/// count.add(&mut acc, &"a".to_owned());
/// assert_eq!(count.result(&acc), 1);
/// ```
pub struct Count<T> {
    _input: PhantomData<fn(&T)>,
}

impl<T> Count<T> {
    /// A count of elements of type `T`.
    pub const fn new() -> Self {
        Count {
            _input: PhantomData,
        }
    }
}

impl<T> Default for Count<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> Aggregate for Count<T> {
    type Input = T;
    type Accumulator = i64;
    type Output = i64;

    fn create(&self) -> i64 {
        0
    }
    fn add(&self, accumulator: &mut i64, _input: &T) {
        *accumulator += 1;
    }
    fn merge(&self, accumulator: &mut i64, other: &i64) {
        *accumulator += other;
    }
    fn result(&self, accumulator: &i64) -> i64 {
        *accumulator
    }
    // Exact on integers, so sliding counts fire in time proportional to the slide.
    fn subtract(&self, accumulator: &mut i64, other: &i64) -> bool {
        *accumulator -= other;
        true
    }
}

/// Sums a number taken from each element.
///
/// ```
/// use runnel_event_time::window::{Aggregate, Sum};
/// let sum = Sum::of(|points: &i64| *points);
/// let mut acc = sum.create();
/// sum.add(&mut acc, &5);
/// sum.add(&mut acc, &9);
/// assert_eq!(sum.result(&acc), 14);
/// ```
pub struct Sum<T, N> {
    field: fn(&T) -> N,
}

impl<T, N> Sum<T, N> {
    /// The sum of `field` over the window's elements.
    pub const fn of(field: fn(&T) -> N) -> Self {
        Sum { field }
    }
}

impl<T: 'static, N: Number> Aggregate for Sum<T, N> {
    type Input = T;
    type Accumulator = N;
    type Output = N;

    fn create(&self) -> N {
        N::default()
    }
    fn add(&self, accumulator: &mut N, input: &T) {
        *accumulator = *accumulator + (self.field)(input);
    }
    fn merge(&self, accumulator: &mut N, other: &N) {
        *accumulator = *accumulator + *other;
    }
    fn result(&self, accumulator: &N) -> N {
        *accumulator
    }
    // Integer sums subtract, so sliding sums fire in time proportional to the slide.
    fn subtract(&self, accumulator: &mut N, other: &N) -> bool {
        match accumulator.exact_difference(*other) {
            Some(difference) => {
                *accumulator = difference;
                true
            }
            None => false,
        }
    }
}

/// The smallest value of a number taken from each element.
///
/// ```
/// use runnel_event_time::window::{Aggregate, Min};
/// let min = Min::of(|celsius: &f64| *celsius);
/// let mut acc = min.create();
/// min.add(&mut acc, &21.5);
/// min.add(&mut acc, &19.0);
/// assert_eq!(min.result(&acc), 19.0);
/// ```
pub struct Min<T, N> {
    field: fn(&T) -> N,
}

impl<T, N> Min<T, N> {
    /// The minimum of `field` over the window's elements.
    pub const fn of(field: fn(&T) -> N) -> Self {
        Min { field }
    }
}

impl<T: 'static, N: Number> Aggregate for Min<T, N> {
    type Input = T;
    type Accumulator = Option<N>;
    type Output = N;

    fn create(&self) -> Option<N> {
        None
    }
    fn add(&self, accumulator: &mut Option<N>, input: &T) {
        self.merge(accumulator, &Some((self.field)(input)));
    }
    fn merge(&self, accumulator: &mut Option<N>, other: &Option<N>) {
        *accumulator = match (*accumulator, *other) {
            (Some(a), Some(b)) => Some(if b < a { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    fn result(&self, accumulator: &Option<N>) -> N {
        accumulator.unwrap_or_default()
    }
}

/// The largest value of a number taken from each element.
///
/// ```
/// use runnel_event_time::window::{Aggregate, Max};
/// let max = Max::of(|celsius: &f64| *celsius);
/// let mut acc = max.create();
/// max.add(&mut acc, &21.5);
/// max.add(&mut acc, &19.0);
/// assert_eq!(max.result(&acc), 21.5);
/// ```
pub struct Max<T, N> {
    field: fn(&T) -> N,
}

impl<T, N> Max<T, N> {
    /// The maximum of `field` over the window's elements.
    pub const fn of(field: fn(&T) -> N) -> Self {
        Max { field }
    }
}

impl<T: 'static, N: Number> Aggregate for Max<T, N> {
    type Input = T;
    type Accumulator = Option<N>;
    type Output = N;

    fn create(&self) -> Option<N> {
        None
    }
    fn add(&self, accumulator: &mut Option<N>, input: &T) {
        self.merge(accumulator, &Some((self.field)(input)));
    }
    fn merge(&self, accumulator: &mut Option<N>, other: &Option<N>) {
        *accumulator = match (*accumulator, *other) {
            (Some(a), Some(b)) => Some(if b > a { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    fn result(&self, accumulator: &Option<N>) -> N {
        accumulator.unwrap_or_default()
    }
}

/// The mean of a number taken from each element, as `f64`.
///
/// ```
/// use runnel_event_time::window::{Aggregate, Average};
/// let average = Average::of(|celsius: &f64| *celsius);
/// let mut acc = average.create();
/// average.add(&mut acc, &20.0);
/// average.add(&mut acc, &23.0);
/// assert_eq!(average.result(&acc), 21.5);
/// ```
pub struct Average<T, N> {
    field: fn(&T) -> N,
}

impl<T, N> Average<T, N> {
    /// The mean of `field` over the window's elements.
    pub const fn of(field: fn(&T) -> N) -> Self {
        Average { field }
    }
}

impl<T: 'static, N: Number> Aggregate for Average<T, N> {
    type Input = T;
    /// The sum and the count.
    type Accumulator = (f64, i64);
    type Output = f64;

    fn create(&self) -> (f64, i64) {
        (0.0, 0)
    }
    fn add(&self, accumulator: &mut (f64, i64), input: &T) {
        accumulator.0 += (self.field)(input).to_f64();
        accumulator.1 += 1;
    }
    fn merge(&self, accumulator: &mut (f64, i64), other: &(f64, i64)) {
        accumulator.0 += other.0;
        accumulator.1 += other.1;
    }
    fn result(&self, accumulator: &(f64, i64)) -> f64 {
        if accumulator.1 == 0 {
            0.0
        } else {
            accumulator.0 / accumulator.1 as f64
        }
    }
}

/// Keeps every element of the window and applies a function to all of them when a pane
/// fires: for what cannot be computed incrementally (a median, a sort, a model over the
/// whole window). State grows with the window's elements, so prefer an incremental
/// [`Aggregate`] where one exists.
///
/// ```
/// use runnel_event_time::window::{Aggregate, ProcessWindow};
/// let median = ProcessWindow::new(|values: &[f64]| {
///     let mut sorted = values.to_vec();
///     sorted.sort_by(f64::total_cmp);
///     sorted[sorted.len() / 2]
/// });
/// let mut acc = median.create();
/// for value in [3.0, 1.0, 2.0] {
///     median.add(&mut acc, &value);
/// }
/// assert_eq!(median.result(&acc), 2.0);
/// ```
pub struct ProcessWindow<T, R> {
    function: fn(&[T]) -> R,
}

impl<T, R> ProcessWindow<T, R> {
    /// Applies `function` to the window's elements, in arrival order.
    pub const fn new(function: fn(&[T]) -> R) -> Self {
        ProcessWindow { function }
    }
}

impl<T, R> Aggregate for ProcessWindow<T, R>
where
    T: Clone + Serialize + DeserializeOwned + Send + 'static,
    R: Clone + Serialize + DeserializeOwned + Send + 'static,
{
    type Input = T;
    type Accumulator = Vec<T>;
    type Output = R;

    fn create(&self) -> Vec<T> {
        Vec::new()
    }
    fn add(&self, accumulator: &mut Vec<T>, input: &T) {
        accumulator.push(input.clone());
    }
    fn merge(&self, accumulator: &mut Vec<T>, other: &Vec<T>) {
        accumulator.extend_from_slice(other);
    }
    fn result(&self, accumulator: &Vec<T>) -> R {
        (self.function)(accumulator)
    }
}

macro_rules! debug_by_name {
    ($($name:ident<$($param:ident),*>),*) => {$(
        impl<$($param),*> fmt::Debug for $name<$($param),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    )*};
}
debug_by_name!(Count<T>, Sum<T, N>, Min<T, N>, Max<T, N>, Average<T, N>, ProcessWindow<T, R>);

// They hold only function pointers: copies whatever their type parameters, so a streamlet
// that keeps state by partition can give each partition its own.
macro_rules! copy_whatever_the_parameters {
    ($($name:ident<$($param:ident),*>),*) => {$(
        impl<$($param),*> Clone for $name<$($param),*> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($param),*> Copy for $name<$($param),*> {}
    )*};
}
copy_whatever_the_parameters!(
    Count<T>,
    Sum<T, N>,
    Min<T, N>,
    Max<T, N>,
    Average<T, N>,
    ProcessWindow<T, R>
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_equals_adding_everything_to_one_accumulator() {
        let values = [4.0, -2.5, 9.0, 1.0];
        let max = Max::of(|v: &f64| *v);
        let average = Average::of(|v: &f64| *v);
        let (mut left, mut right) = (max.create(), max.create());
        let (mut avg_left, mut avg_right) = (average.create(), average.create());
        for (i, value) in values.iter().enumerate() {
            if i % 2 == 0 {
                max.add(&mut left, value);
                average.add(&mut avg_left, value);
            } else {
                max.add(&mut right, value);
                average.add(&mut avg_right, value);
            }
        }
        max.merge(&mut left, &right);
        average.merge(&mut avg_left, &avg_right);
        assert_eq!(max.result(&left), 9.0);
        assert_eq!(average.result(&avg_left), 2.875);
        let min = Min::of(|v: &f64| *v);
        let mut empty = min.create();
        min.merge(&mut empty, &Some(-2.5));
        assert_eq!(min.result(&empty), -2.5);
    }
}
