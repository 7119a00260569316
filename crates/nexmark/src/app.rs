//! The Nexmark app: the generator and every query registered under the names the
//! blueprints in `crates/nexmark/blueprints/` use (`q0` to `q12`; `q4` runs a `q9` instance
//! for its winning bids).

use crate::queries::{q0, q1, q2, q3, q4, q5, q7, q8, q9, q11, q12};
use crate::reader::Reader;
use crate::source::Source;

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    runnel::App::new("nexmark")
        .version(env!("CARGO_PKG_VERSION"))
        .streamlet("generator", || Source)
        .streamlet("reader", || Reader)
        .streamlet("q0", q0::streamlet)
        .streamlet("q1", q1::streamlet)
        .streamlet("q2", q2::streamlet)
        .streamlet("q3", q3::streamlet)
        .streamlet("q4", q4::streamlet)
        .streamlet("q5", q5::streamlet)
        .streamlet("q7", q7::streamlet)
        .streamlet("q8", q8::streamlet)
        .streamlet("q9", q9::streamlet)
        .streamlet("q11", q11::streamlet)
        .streamlet("q12", q12::streamlet)
}
