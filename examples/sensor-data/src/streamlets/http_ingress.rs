//! `http-ingress` and `http-lines-ingress`: readings POSTed over HTTP, as in Cloudflow's
//! sensor-data example.
//!
//! ```sh
//! curl -d '{"device_id": "c75cb448-df0e-4692-8e06-0321b7703992", "timestamp": 1700000000000,
//!           "sequence": 1, "measurements": {"power": 1700.5, "rotor_speed": 13.2, "wind_speed": 9.1}}' \
//!     localhost:3003
//! ```

use runnel::http::{HttpIngress, Invalid};
use runnel::prelude::*;

use crate::model::SensorData;
use crate::streamlets::generator::OUT;

/// Device ids are UUIDs: 8-4-4-4-12 hexadecimal digits.
pub fn check(data: &SensorData) -> Result<(), Invalid> {
    let groups: Vec<&str> = data.device_id.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|group| group.len()).collect();
    let hex = groups
        .iter()
        .all(|group| group.chars().all(|c| c.is_ascii_hexdigit()));
    if lengths == [8, 4, 4, 4, 12] && hex {
        Ok(())
    } else {
        Err(Invalid::field(
            "device_id",
            format!("'{}' is not a UUID", data.device_id),
        ))
    }
}

/// One reading per `POST /`, as JSON; answered once it is durable.
pub fn streamlet() -> impl Streamlet {
    HttpIngress::new(OUT)
        .validate(check)
        .describe("readings POSTed as JSON, one per request")
}

/// Readings as newline-delimited JSON, many per `POST /`.
pub fn lines() -> impl Streamlet {
    HttpIngress::lines(OUT)
        .validate(check)
        .describe("readings POSTed as newline-delimited JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::generator::reading;

    #[test]
    fn generated_device_ids_pass_and_others_do_not() {
        let mut data = reading(3, 4, 0, 0);
        assert_eq!(check(&data), Ok(()));
        data.device_id = "turbine-7".to_owned();
        let refused = check(&data).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "field 'device_id': 'turbine-7' is not a UUID"
        );
    }
}
