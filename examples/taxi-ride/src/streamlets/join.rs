//! `processor`: joins each ride's start with its fare by ride id (Cloudflow's
//! `TaxiRideFareProcessor`), and gives up on a half whose other half has not arrived within
//! `unmatched-timeout` of processing time, sending it to its own outlet.
//!
//! The halves waiting are kept in the streamlet and checkpointed with the input offsets
//! every second, so a restart, even after `kill -9`, resumes with exactly the halves that
//! the committed inputs left waiting. (They will move to Runnel's keyed state, scoped by
//! partition, once that exists, so the join can run as several instances.)

use runnel::tracing;
use std::time::Duration;

use runnel::OutletSender;
use runnel::prelude::*;
use runnel::tokio::time::Instant;

use crate::model::{TaxiFare, TaxiRide, TaxiRideFare};
use crate::pending::{Half, Pending};

/// Ride events (only starts are joined), keyed by ride id.
pub const RIDES: Inlet<TaxiRide> = Inlet::new("rides");
/// Fares, keyed by ride id.
pub const FARES: Inlet<TaxiFare> = Inlet::new("fares");
/// Each ride's start with its fare.
pub const OUT: Outlet<TaxiRideFare> =
    Outlet::new("out").keyed_by(|joined| joined.ride_id.to_string());
/// Ride starts whose fare did not arrive in time.
pub const UNMATCHED_RIDES: Outlet<TaxiRide> =
    Outlet::new("unmatched-rides").keyed_by(|ride| ride.ride_id.to_string());
/// Fares whose ride start did not arrive in time.
pub const UNMATCHED_FARES: Outlet<TaxiFare> =
    Outlet::new("unmatched-fares").keyed_by(|fare| fare.ride_id.to_string());

/// How long a half waits for the other.
pub const TIMEOUT: Parameter<Duration> = Parameter::duration("unmatched-timeout")
    .describe("how long (processing time) a ride start or fare waits for its other half")
    .default("1m");

/// How often the waiting halves are checkpointed.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The join.
#[derive(Debug)]
pub struct Join;

impl Streamlet for Join {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("joins each ride's start with its fare by ride id; gives up on unmatched halves after a timeout")
            .inlet(RIDES)
            .inlet(FARES)
            .outlet(OUT)
            .outlet(UNMATCHED_RIDES)
            .outlet(UNMATCHED_FARES)
            .parameter(TIMEOUT)
            .checkpointed()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
        let mut pending: Pending = match checkpoints.restored() {
            Some(state) => serde_json::from_slice(state).map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of the join does not decode: {error}"
                ))
            })?,
            None => Pending::default(),
        };
        let timeout = ctx.parameter(TIMEOUT).as_millis() as i64;
        let clock = ctx.clock().clone();
        let (mut rides, mut fares) = (ctx.inlet(RIDES), ctx.inlet(FARES));
        let output = ctx.outlet(OUT);
        let unmatched = Unmatched {
            rides: ctx.outlet(UNMATCHED_RIDES),
            fares: ctx.outlet(UNMATCHED_FARES),
        };
        let (mut rides_open, mut fares_open) = (true, true);
        let mut next_checkpoint: Option<Instant> = None;
        while rides_open || fares_open {
            let expiry = match pending.next_deadline() {
                Some(deadline) => clock.sleep_until(deadline),
                None => Box::pin(std::future::pending()),
            };
            let checkpoint_due = async {
                match next_checkpoint {
                    Some(at) => runnel::tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            runnel::tokio::select! {
                biased;
                () = checkpoint_due => {
                    checkpoints.save(serde_json::to_vec(&pending)?);
                    next_checkpoint = None;
                    continue;
                }
                () = expiry => {
                    unmatched.send(pending.expire(clock.now_millis())).await?;
                    continue;
                }
                message = rides.next(), if rides_open => match message? {
                    None => rides_open = false,
                    Some(message) => {
                        let (ride, token) = message.into_parts();
                        let ride_id = ride.ride_id;
                        // Only starts are joined, as in Cloudflow; ends pass.
                        let sent = match ride.is_start {
                            true => match pending.arrive(ride_id, Half::Ride(ride), clock.now_millis() + timeout) {
                                Some(joined) => output.send_derived(&joined, &token).await,
                                None => Ok(()),
                            },
                            false => Ok(()),
                        };
                        token.settle(sent).await?;
                    }
                },
                message = fares.next(), if fares_open => match message? {
                    None => fares_open = false,
                    Some(message) => {
                        let (fare, token) = message.into_parts();
                        let ride_id = fare.ride_id;
                        let sent = match pending.arrive(ride_id, Half::Fare(fare), clock.now_millis() + timeout) {
                            Some(joined) => output.send_derived(&joined, &token).await,
                            None => Ok(()),
                        };
                        token.settle(sent).await?;
                    }
                },
            }
            next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
        }
        if !ctx.is_stopping() {
            // Both inputs ended: nothing more can match what waits.
            unmatched.send(pending.drain()).await?;
        }
        checkpoints.save(serde_json::to_vec(&pending)?);
        Ok(())
    }
}

/// Where halves given up on go.
struct Unmatched {
    rides: OutletSender<TaxiRide>,
    fares: OutletSender<TaxiFare>,
}

impl Unmatched {
    async fn send(&self, halves: Vec<Half>) -> Result<()> {
        for half in halves {
            match half {
                Half::Ride(ride) => {
                    tracing::warn!("ride {} had no fare within the timeout", ride.ride_id);
                    self.rides.send(&ride).await?;
                }
                Half::Fare(fare) => {
                    tracing::warn!(
                        "fare of ride {} had no ride start within the timeout",
                        fare.ride_id
                    );
                    self.fares.send(&fare).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::data::{fare, ride, ride_end};
    use runnel::testkit::TestRun;

    #[runnel::test]
    async fn halves_join_in_either_order_and_unmatched_ones_go_aside_after_the_timeout()
    -> anyhow::Result<()> {
        let run = TestRun::new(Join)
            .parameter("unmatched-timeout", "10s")
            .at(0)
            .input(RIDES, [ride(1), ride_end(1), ride(2)])
            .input(FARES, [fare(3)])
            .at(5_000)
            .input(FARES, [fare(1)])
            .at(8_000)
            .input(RIDES, [ride(3)])
            .at(30_000)
            .input(FARES, [fare(2)]) // ride 2 was given up on at 10 s
            .run()
            .await?;
        let joined = run.timed_output(OUT)?;
        let pairs: Vec<(i64, i64)> = joined.iter().map(|(at, j)| (*at, j.ride_id)).collect();
        assert_eq!(pairs, [(5_000, 1), (8_000, 3)]);
        assert_eq!(joined[0].1.fare, fare(1));
        assert_eq!(
            joined[0].1.ride,
            ride(1),
            "the start is joined, not the end"
        );
        let rides = run.timed_output(UNMATCHED_RIDES)?;
        assert_eq!(rides, [(10_000, ride(2))]);
        // Fare 2 came after its ride was given up on; the end of the input gives it up too.
        assert_eq!(run.output(UNMATCHED_FARES), [fare(2)]);
        Ok(())
    }
}
