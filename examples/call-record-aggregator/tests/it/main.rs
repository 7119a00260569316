//! End-to-end tests: the call-record-aggregator binary driven as a user runs it, with its
//! topics read back from the embedded log.

mod run; // generators and HTTP on one topic, split, aggregated per window as parameterised
