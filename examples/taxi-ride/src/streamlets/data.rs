//! Rides and fares derived from a ride id, for the demo's data files (`data/*.jsonl`) and
//! the tests.

use crate::model::{TaxiFare, TaxiRide};

/// The start of ride `ride_id`, a Manhattan trip on 2013-01-01.
pub fn ride(ride_id: i64) -> TaxiRide {
    let step = (ride_id % 97) as f64 / 1000.0;
    TaxiRide {
        ride_id,
        is_start: true,
        taxi_id: 2_013_000_000 + ride_id % 40,
        passenger_count: (1 + ride_id % 4) as i32,
        driver_id: 2_013_000_000 + ride_id % 40,
        start_lon: -73.99 + step,
        start_lat: 40.73 + step / 2.0,
        end_lon: -73.97 - step,
        end_lat: 40.76 - step / 3.0,
        start_time: 1_356_998_400_000 + ride_id * 20_000,
        end_time: 0,
    }
}

/// The end event of ride `ride_id`, twelve minutes after its start.
pub fn ride_end(ride_id: i64) -> TaxiRide {
    let start = ride(ride_id);
    TaxiRide {
        is_start: false,
        end_time: start.start_time + 12 * 60_000,
        ..start
    }
}

/// The fare of ride `ride_id`.
pub fn fare(ride_id: i64) -> TaxiFare {
    let start = ride(ride_id);
    let fare = 6.5 + (ride_id % 23) as f64 * 0.5;
    let tip = if ride_id % 3 == 0 {
        0.0
    } else {
        (fare * 0.2 * 100.0).round() / 100.0
    };
    let tolls = if ride_id % 11 == 0 { 5.33 } else { 0.0 };
    TaxiFare {
        ride_id,
        taxi_id: start.taxi_id,
        payment_type: if ride_id % 3 == 0 { "CASH" } else { "CARD" }.to_owned(),
        driver_id: start.driver_id,
        start_time: start.start_time,
        tip,
        tolls,
        total_fare: ((fare + tip + tolls) * 100.0).round() / 100.0,
    }
}

/// Rides 1 to 100 have a start; 55 and 66 have none (their fares wait in vain).
pub const WITHOUT_START: [i64; 2] = [55, 66];
/// Rides 1 to 100 have a fare; 7, 42 and 77 have none (their starts wait in vain).
pub const WITHOUT_FARE: [i64; 3] = [7, 42, 77];

/// The lines of `data/rides.jsonl`: the start and the end of rides 1 to 100, but for
/// [`WITHOUT_START`].
pub fn ride_lines() -> String {
    (1..=100)
        .filter(|id| !WITHOUT_START.contains(id))
        .flat_map(|id| [ride(id), ride_end(id)])
        .map(|ride| runnel::serde_json::to_string(&ride).expect("rides serialize") + "\n")
        .collect()
}

/// The lines of `data/fares.jsonl`: the fares of rides 1 to 100, but for [`WITHOUT_FARE`].
pub fn fare_lines() -> String {
    (1..=100)
        .filter(|id| !WITHOUT_FARE.contains(id))
        .map(|id| runnel::serde_json::to_string(&fare(id)).expect("fares serialize") + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data files are what this module makes; `REGENERATE_TAXI_DATA=1` rewrites them.
    #[test]
    fn the_data_files_hold_the_rides_and_fares_of_this_module() {
        let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
        for (file, lines) in [("rides.jsonl", ride_lines()), ("fares.jsonl", fare_lines())] {
            let path = format!("{directory}/{file}");
            if std::env::var_os("REGENERATE_TAXI_DATA").is_some() {
                std::fs::write(&path, &lines).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap();
            assert!(
                committed == lines,
                "{path} differs; rerun with REGENERATE_TAXI_DATA=1"
            );
        }
    }
}
