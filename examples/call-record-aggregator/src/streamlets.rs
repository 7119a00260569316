//! The streamlets of the call-record-aggregator app, one per file.

pub mod aggregator;
pub mod generator;
pub mod ingress;
pub mod loggers;
pub mod split;
