//! The Nexmark app: the generator and every query registered under the names the
//! blueprints in `crates/nexmark/blueprints/` use.

use crate::queries::{q0, q1, q2, q5, q7, q11, q12};
use crate::source::Source;

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("nexmark")
        .streamlet("generator", || Source)
        .streamlet("q0", q0::streamlet)
        .streamlet("q1", q1::streamlet)
        .streamlet("q2", q2::streamlet)
        .streamlet("q5", q5::streamlet)
        .streamlet("q7", q7::streamlet)
        .streamlet("q11", q11::streamlet)
        .streamlet("q12", q12::streamlet)
}
