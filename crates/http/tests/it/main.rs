//! Integration tests of the HTTP streamlets, each run by the same host as production on an
//! in-memory backplane, spoken to over real sockets.

mod egress; // POST each record; retry what may pass; dead-letter refusals
mod ingress; // one JSON body per request: 200 once durable, 400, 413, 503
mod lines; // newline-delimited JSON: streamed, counted, bounded
mod support; // running a streamlet, a backplane that holds acknowledgements back, a client
