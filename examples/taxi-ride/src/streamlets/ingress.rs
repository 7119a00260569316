//! `taxi-ride` and `taxi-fare`: rides and fares POSTed over HTTP as newline-delimited JSON
//! (one per line, or a single one), keyed by ride id.

use runnel::http::{HttpIngress, Invalid};
use runnel::prelude::*;

use crate::model::{TaxiFare, TaxiRide};

/// Rides, keyed by ride id.
pub const RIDES: Outlet<TaxiRide> = Outlet::new("out").keyed_by(|ride| ride.ride_id.to_string());
/// Fares, keyed by ride id.
pub const FARES: Outlet<TaxiFare> = Outlet::new("out").keyed_by(|fare| fare.ride_id.to_string());

/// Ride events.
pub fn rides() -> impl Streamlet {
    HttpIngress::lines(RIDES)
        .validate(|ride| {
            if ride.ride_id > 0 {
                Ok(())
            } else {
                Err(Invalid::field("ride_id", "must be positive"))
            }
        })
        .describe("taxi ride events POSTed as newline-delimited JSON")
}

/// Fares.
pub fn fares() -> impl Streamlet {
    HttpIngress::lines(FARES)
        .validate(|fare| {
            if fare.ride_id <= 0 {
                Err(Invalid::field("ride_id", "must be positive"))
            } else if !(fare.total_fare.is_finite() && fare.total_fare >= 0.0) {
                Err(Invalid::field(
                    "total_fare",
                    "must be a non-negative number",
                ))
            } else {
                Ok(())
            }
        })
        .describe("taxi fares POSTed as newline-delimited JSON")
}
