//! The streamlets of the sensor-data app, one per file.

pub mod generator;
pub mod http_ingress;
pub mod logger;
pub mod to_metrics;
pub mod validation;
