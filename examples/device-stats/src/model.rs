//! The records of the device-stats app.

use runnel::prelude::*;

/// One power reading of one device, stamped with the time it was measured.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The device that measured it.
    pub device: String,
    /// The generator's running number, to tell readings apart.
    pub sequence: i64,
    /// When it was measured (event time), milliseconds since the Unix epoch.
    pub time: i64,
    /// Power in kilowatts.
    pub power: f64,
}

/// Statistics of a device's readings in one window.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct PowerStats {
    /// How many readings.
    pub readings: i64,
    /// Their mean power.
    pub mean: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
}
