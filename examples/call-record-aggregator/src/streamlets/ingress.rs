//! `cdr-ingress`: call records POSTed over HTTP, newline-delimited JSON (one record per
//! line, or a single record). Validation is the splitter's job, so records that decode are
//! accepted whatever their values.

use runnel::http::HttpIngress;
use runnel::prelude::*;

use crate::streamlets::generator::OUT;

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    HttpIngress::lines(OUT).describe("call records POSTed as newline-delimited JSON")
}
