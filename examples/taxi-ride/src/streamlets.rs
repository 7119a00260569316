//! The streamlets of the taxi-ride app, one per file.

pub mod data;
pub mod ingress;
pub mod join;
pub mod loggers;
