//! The taxi-ride app, Runnel's port of Cloudflow's: rides and fares arrive over HTTP on
//! topics of their own, keyed by ride id; a stateful join pairs each ride's start with its
//! fare, and gives up on a half whose other half does not come within a timeout.
//!
//! ```text
//! taxi-ride ─► rides ─┐                ┌─► rides-with-fares ─► logger
//!                     ├─► processor ───┼─► unmatched-rides ─┐
//! taxi-fare ─► fares ─┘                └─► unmatched-fares ─┴─► unmatched-logger
//! ```
//!
//! Run it with `cargo run -p taxi-ride -- run examples/taxi-ride/blueprint.toml`.

pub mod model;
pub mod pending;
pub mod streamlets;

use streamlets::{ingress, join, loggers};

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("taxi-ride")
        .streamlet("taxi-ride-ingress", ingress::rides)
        .streamlet("taxi-fare-ingress", ingress::fares)
        .streamlet("ride-fare-join", || join::Join)
        .streamlet("logger", loggers::joined)
        .streamlet("unmatched-logger", || loggers::Unmatched)
}
