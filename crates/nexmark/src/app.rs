//! The Nexmark app: the generator and every query registered under the names the
//! blueprints in `crates/nexmark/blueprints/` use (`q0` to `q12`; `q4` runs a `q9` instance
//! for its winning bids), and each query again with exactly-once delivery as
//! `<query>-exactly-once` ([`ExactlyOnce`]).

use runnel::prelude::Streamlet;

use crate::exactly_once::ExactlyOnce;
use crate::queries::{q0, q1, q2, q3, q4, q5, q7, q8, q9, q11, q12};
use crate::reader::Reader;
use crate::source::Source;

/// The app with its streamlet types registered.
pub fn app() -> runnel::App {
    let app = runnel::App::new("nexmark")
        .version(env!("CARGO_PKG_VERSION"))
        .streamlet("generator", || Source)
        .streamlet("reader", || Reader);
    let app = query(app, "q0", q0::streamlet);
    let app = query(app, "q1", q1::streamlet);
    let app = query(app, "q2", q2::streamlet);
    let app = query(app, "q3", q3::streamlet);
    let app = query(app, "q4", q4::streamlet);
    let app = query(app, "q5", q5::streamlet);
    let app = query(app, "q7", q7::streamlet);
    let app = query(app, "q8", q8::streamlet);
    let app = query(app, "q9", q9::streamlet);
    let app = query(app, "q11", q11::streamlet);
    query(app, "q12", q12::streamlet)
}

/// Registers a query as `name`, at least once, and as `<name>-exactly-once`.
fn query<S: Streamlet>(app: runnel::App, name: &str, make: fn() -> S) -> runnel::App {
    app.streamlet(name, make)
        .streamlet(&format!("{name}-exactly-once"), move || ExactlyOnce(make()))
}
