//! Runnel's event-time engine: windows, triggers and panes ([`window`]), watermarks
//! ([`watermark`]), the changelog entries that window state and keyed state are checkpointed
//! as ([`changelog_entries`]), and state by key that writes only what changed to them
//! ([`tracked_map`]).
//!
//! The engine is pure: [`window::WindowOperator`] is driven by explicit calls (an element
//! with its event time, a new watermark, the current processing time) and returns the panes
//! that fire; it knows nothing of inlets, logs or clocks. `runnel-streamlet` runs it inside
//! a streamlet (its `WindowedAggregate` helper) and re-exports [`window`] and [`watermark`],
//! so authors write `runnel::window::...`.
//!
//! Where to begin: [`window`] for the model and an example, [`window::WindowSpec`] for what a
//! window computes and when, [`watermark::Watermarks`] for how event time advances.
#![deny(missing_docs)]

pub mod changelog_entries;
pub mod tracked_map;
pub mod watermark;
pub mod window;
