//! The device-stats app: simulated devices report power readings with event times, a bit out
//! of order; a windowed streamlet computes statistics per device per minute of event time;
//! readings that come too late go to their own topic.
//!
//! ```text
//! generator ─► readings ─► per-minute ─┬─► device-stats ─► stats-logger
//!                                      └─► late-readings ─► late-logger
//! ```
//!
//! Run it with `cargo run -p device-stats -- run examples/device-stats/blueprint.toml`.

pub mod model;
pub mod streamlets;

use streamlets::{generator, logger, per_minute};

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("device-stats")
        .streamlet("generator", || generator::Generator)
        .streamlet("per-minute", per_minute::streamlet)
        .streamlet("stats-logger", logger::stats)
        .streamlet("late-logger", logger::late)
}
