//! The records of the taxi-ride app (Cloudflow's `TaxiRide`, `TaxiFare` and
//! `TaxiRideFare`, from the New York City taxi data set).

use runnel::prelude::*;

/// A taxi ride starting or ending.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct TaxiRide {
    /// The ride; its fare has the same id.
    pub ride_id: i64,
    /// Whether this is the ride's start (else its end).
    pub is_start: bool,
    /// The taxi.
    pub taxi_id: i64,
    /// How many passengers.
    pub passenger_count: i32,
    /// The driver.
    pub driver_id: i64,
    /// Where it started: longitude.
    pub start_lon: f64,
    /// Where it started: latitude.
    pub start_lat: f64,
    /// Where it ended: longitude.
    pub end_lon: f64,
    /// Where it ended: latitude.
    pub end_lat: f64,
    /// When it started, in milliseconds since the Unix epoch.
    pub start_time: i64,
    /// When it ended (0 for a start event).
    pub end_time: i64,
}

/// What a ride cost.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct TaxiFare {
    /// The ride.
    pub ride_id: i64,
    /// The taxi.
    pub taxi_id: i64,
    /// `CASH` or `CARD`.
    pub payment_type: String,
    /// The driver.
    pub driver_id: i64,
    /// When the ride started, in milliseconds since the Unix epoch.
    pub start_time: i64,
    /// The tip.
    pub tip: f64,
    /// Tolls paid.
    pub tolls: f64,
    /// Fare, tip and tolls.
    pub total_fare: f64,
}

/// A ride's start joined with its fare.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct TaxiRideFare {
    /// The ride.
    pub ride_id: i64,
    /// The total fare.
    pub total_fare: f64,
    /// The ride's start event.
    pub ride: TaxiRide,
    /// The fare.
    pub fare: TaxiFare,
}
