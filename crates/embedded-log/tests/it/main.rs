//! Integration tests of the embedded log, through its public API, compiled as one binary.

mod backpressure; // the bounded pending buffer and the record size limit
mod conformance; // the backplane conformance suite shared with every backplane
mod durability; // records and offsets survive reopening and a killed process; the lock
mod format; // segments in the previous batch format still read
mod inspect; // reading the files of a log in use, without opening it
mod linger; // small batches wait for company, large ones do not
mod model; // random operations compared against an in-memory model (proptest)
mod recovery; // torn tails are truncated, corruption elsewhere is an error
mod retention; // size and age retention, topic settings
mod support; // a backend in a temporary directory and small helpers
mod transactions; // zombies, the last stable offset, isolation, reopening, a killed process
