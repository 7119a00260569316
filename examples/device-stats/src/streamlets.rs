//! The streamlets of the device-stats app, one per file.

pub mod generator;
pub mod logger;
pub mod per_minute;
