//! The call-record-aggregator app, Runnel's port of Cloudflow's: call records from two
//! generators and an HTTP ingress share one topic, a splitter sets invalid ones aside, and
//! the valid ones are aggregated per window of event time, whose size and watermark delay
//! are parameters.
//!
//! ```text
//! cdr-generator1 ─┐                                ┌─► invalid-call-records ─► error-egress
//! cdr-generator2 ─┼─► call-records ─► split ───────┤                              ▲
//! cdr-ingress ────┘                                └─► valid-call-records ─► cdr-aggregator ─┬─► call-stats ─► console-egress
//!                                                                                            └─► late-call-records ──┘
//! ```
//!
//! Run it with `cargo run -p call-record-aggregator -- run examples/call-record-aggregator/blueprint.toml`.

pub mod model;
pub mod streamlets;

use streamlets::{aggregator, generator, ingress, loggers, split};

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("call-record-aggregator")
        .streamlet("cdr-generator", || generator::Generator)
        .streamlet("cdr-ingress", ingress::streamlet)
        .streamlet("split", split::streamlet)
        .streamlet("cdr-aggregator", || aggregator::Aggregator)
        .streamlet("console-egress", loggers::console)
        .streamlet("error-egress", || loggers::Errors)
        .streamlet("long-call-egress", loggers::long_calls)
}
