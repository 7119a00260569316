//! `logger` and `unmatched-logger`: egresses that log joined rides and halves given up on.

use runnel::prelude::*;
use runnel::tracing;

use crate::model::{TaxiFare, TaxiRide, TaxiRideFare};

/// Joined rides.
pub const JOINED: Inlet<TaxiRideFare> = Inlet::new("in");
/// Rides without a fare.
pub const RIDES: Inlet<TaxiRide> = Inlet::new("rides");
/// Fares without a ride.
pub const FARES: Inlet<TaxiFare> = Inlet::new("fares");

/// Logs each ride with its total fare.
pub fn joined() -> impl Streamlet {
    Egress::new(JOINED, |joined: TaxiRideFare| async move {
        tracing::info!(
            "ride {}: {} passenger(s), paid {:.2} ({})",
            joined.ride_id,
            joined.ride.passenger_count,
            joined.total_fare,
            joined.fare.payment_type
        );
        Ok(())
    })
    .describe("logs each ride with its fare")
}

/// Logs the halves given up on.
#[derive(Debug)]
pub struct Unmatched;

impl Streamlet for Unmatched {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("logs ride starts and fares that found no other half in time")
            .inlet(RIDES)
            .inlet(FARES)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let (mut rides, mut fares) = (ctx.inlet(RIDES), ctx.inlet(FARES));
        let (mut rides_open, mut fares_open) = (true, true);
        while rides_open || fares_open {
            runnel::tokio::select! {
                message = rides.next(), if rides_open => match message? {
                    Some(message) => {
                        tracing::warn!("unmatched ride {}", message.value().ride_id);
                        message.commit();
                    }
                    None => rides_open = false,
                },
                message = fares.next(), if fares_open => match message? {
                    Some(message) => {
                        tracing::warn!("unmatched fare of ride {}", message.value().ride_id);
                        message.commit();
                    }
                    None => fares_open = false,
                },
            }
        }
        Ok(())
    }
}
