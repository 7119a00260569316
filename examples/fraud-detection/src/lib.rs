//! The fraud-detection app: card transactions arrive over HTTP (or from a generator), are
//! enriched with their card's history, scored by the model serving now, and reported per
//! merchant; models arrive over HTTP too and replace each other while the app runs.
//!
//! ```text
//! transactions-http ──┐
//! transactions-lines ─┼─► transactions ─► enrich ─► enriched ─► score ─► scored ─┬─► alert-logger
//! generator ──────────┘                                           ▲              └─► merchant-report ─► merchant-reports ─► report-logger
//! model-ingress ─────────────────────────────────────► models ────┘
//!                                                        score ─► model-events ─► model-logger
//! ```
//!
//! Run it with `cargo run -p fraud-detection -- run examples/fraud-detection/blueprint.toml`
//! (the README walks through it with curl).

pub mod history;
pub mod model;
pub mod streamlets;

use streamlets::{enrich, generator, ingress, loggers, report, score};

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("fraud-detection")
        .streamlet("http-ingress", ingress::transactions)
        .streamlet("http-lines-ingress", ingress::transaction_lines)
        .streamlet("model-ingress", ingress::models)
        .streamlet("generator", || generator::Generator)
        .streamlet("enrich", || enrich::Enrich)
        .streamlet("score", score::streamlet)
        .streamlet("merchant-report", report::streamlet)
        .streamlet("alert-logger", loggers::alerts)
        .streamlet("report-logger", loggers::reports)
        .streamlet("model-logger", loggers::models)
}
