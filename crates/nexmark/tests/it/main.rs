//! End-to-end tests of the nexmark app binary: every query's blueprint run as a user runs
//! it, bounded by an event count, on the embedded log (and some on Apache Kafka).

mod backlog_on_kafka;
mod bounded_runs;
mod crash;
mod sql;
