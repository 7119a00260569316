//! End-to-end tests: the device-stats binary driven through its command line, with the
//! topics read back from the embedded log afterwards.

mod bounded_run; // a bounded run computes every minute's statistics exactly, and exits
mod crash; // kill -9 mid-stream, run again: no window result lost or counted twice
mod support; // running the binary, reading topics back, the statistics computed directly
