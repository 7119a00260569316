//! The streamlets of the fraud-detection app, one per file.

pub mod enrich;
pub mod generator;
pub mod ingress;
pub mod loggers;
pub mod report;
pub mod score;
