//! The sensor-data app: simulated wind-turbine readings become metrics, metrics are
//! validated, and each side is logged.
//!
//! ```text
//! generator ─► sensor-data ─► to-metrics ─► metrics ─► validation ─┬─► valid-metrics ───► valid-logger
//!                                                                  └─► invalid-metrics ─► invalid-logger
//! ```
//!
//! Run it with `cargo run -p sensor-data -- run examples/sensor-data/blueprint.toml`; the
//! variant in `http/blueprint.toml` takes readings over HTTP instead of generating them.

pub mod model;
pub mod streamlets;

use streamlets::{generator, http_ingress, logger, to_metrics, validation};

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("sensor-data")
        .version(env!("CARGO_PKG_VERSION"))
        .streamlet("generator", || generator::Generator)
        .streamlet("http-ingress", http_ingress::streamlet)
        .streamlet("http-lines-ingress", http_ingress::lines)
        .streamlet("to-metrics", to_metrics::streamlet)
        .streamlet("validation", validation::streamlet)
        .streamlet("valid-logger", logger::valid)
        .streamlet("invalid-logger", logger::invalid)
}
