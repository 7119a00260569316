use runnel_streamlet::prelude::*;

/// A temperature reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Reading {
    pub sensor: String,
    pub celsius: f64,
}

pub(crate) fn reading(sensor: &str, celsius: f64) -> Reading {
    Reading {
        sensor: sensor.to_owned(),
        celsius,
    }
}

pub(crate) const IN: Inlet<Reading> = Inlet::new("in");
pub(crate) const OUT: Outlet<Reading> = Outlet::new("out");
