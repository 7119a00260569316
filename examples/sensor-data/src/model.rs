//! The records of the sensor-data app.

use runnel::prelude::*;

/// What a wind turbine measures.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct Measurements {
    /// Power output in kW.
    pub power: f64,
    /// Rotor speed in revolutions per minute.
    pub rotor_speed: f64,
    /// Wind speed in m/s.
    pub wind_speed: f64,
}

/// One reading of one device.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct SensorData {
    /// The device's id, a UUID.
    pub device_id: String,
    /// When it was measured, in milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The generator's running number of the reading.
    pub sequence: i64,
    /// The measured values.
    pub measurements: Measurements,
}

/// One named measurement of one reading.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The device.
    pub device_id: String,
    /// When it was measured.
    pub timestamp: i64,
    /// The reading it came from.
    pub sequence: i64,
    /// `power`, `rotor-speed` or `wind-speed`.
    pub name: String,
    /// The value.
    pub value: f64,
}

/// A metric that failed validation, with the reason.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMetric {
    /// The metric.
    pub metric: Metric,
    /// Why it is invalid.
    pub error: String,
}
