//! End-to-end tests: the device-stats binary driven through its command line, with the
//! topics read back from the embedded log afterwards, or from a tansu broker.

mod bounded_run; // a bounded run computes every minute's statistics exactly, and exits
mod crash; // kill -9 mid-stream, run again: no window result lost or counted twice
mod scaling; // on tansu, 1 then 3 then 2 processes through a kill: every minute as batch
mod support; // running the binary, reading topics back, the statistics computed directly
