//! Ready-made streamlets for the common shapes, built from closures.
//!
//! | helper | shape | the closure |
//! |---|---|---|
//! | [`Processor`] | one inlet → one outlet | `FnMut(In) -> impl IntoIterator<Item = Out>`: map (a value), filter (`Option`), flat-map (`Vec`) |
//! | [`AsyncMap`] | one inlet → one outlet | `FnMut(In) -> impl Future<Output = Result<Out>>`, several at once, committed in order |
//! | [`Egress`] | one inlet | `FnMut(In) -> impl Future<Output = Result<()>>`, an async sink |
//! | [`Splitter`] | one inlet → two outlets | `FnMut(In) -> Either<Left, Right>` |
//! | [`Merge`] | several inlets → one outlet | none: values pass through |
//! | [`WindowedAggregate`] | one inlet → panes (+ late values) | a key, an [`Aggregate`](crate::window::Aggregate), a [`WindowSpec`](crate::window::WindowSpec) |
//!
//! Each commits an input only after every output derived from it has been sent, and keeps
//! the input's event timestamp on its outputs (a pane's is the last millisecond of its
//! window).

mod async_map;
mod egress;
mod merge;
mod processor;
mod splitter;
mod windowed;

pub use async_map::AsyncMap;
pub use egress::Egress;
pub use merge::Merge;
pub use processor::Processor;
pub use splitter::{Either, Splitter};
pub use windowed::WindowedAggregate;
