//! `cdr-generator`: call records at a steady rate, a few of them invalid.

use runnel::tracing;
use std::time::{Duration, Instant};

use runnel::prelude::*;

use crate::model::CallRecord;

/// Call records, keyed by user.
pub const OUT: Outlet<CallRecord> = Outlet::new("out").keyed_by(|record| record.user.clone());

/// Records per second; 0 as fast as possible.
pub const RATE: Parameter<i64> = Parameter::int("records-per-second")
    .describe("call records generated per second; 0 means as fast as possible")
    .default("10");
/// Records before finishing; negative is endless.
pub const COUNT: Parameter<i64> = Parameter::int("count")
    .describe("call records to generate before finishing; negative means endless")
    .default("-1");
/// Users taking turns.
pub const USERS: Parameter<i64> = Parameter::int("users")
    .describe("number of simulated subscribers")
    .default("20");
/// The prefix of user names, so several generators have users of their own.
pub const PREFIX: Parameter<String> = Parameter::string("user-prefix")
    .describe("the prefix of the generated user names")
    .default("user");
/// Every n-th record has a negative duration; 0 never.
pub const INVALID_EVERY: Parameter<i64> = Parameter::int("invalid-every")
    .describe("every n-th record has a negative duration; 0 means never")
    .default("50");

/// Generates call records.
#[derive(Debug)]
pub struct Generator;

/// The record with running number `sequence`: deterministic apart from its timestamp.
pub fn record(
    sequence: i64,
    prefix: &str,
    users: i64,
    invalid_every: i64,
    timestamp: i64,
) -> CallRecord {
    let users = users.max(1);
    let invalid = invalid_every > 0 && sequence % invalid_every == invalid_every - 1;
    CallRecord {
        user: format!("{prefix}-{}", sequence % users),
        other: format!("+1555{:07}", (sequence * 7919) % 10_000_000),
        direction: if sequence % 3 == 0 {
            "Incoming"
        } else {
            "Outgoing"
        }
        .to_owned(),
        duration: if invalid {
            -1
        } else {
            10 + (sequence * 37) % 600
        },
        timestamp,
    }
}

impl Streamlet for Generator {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("generates call records at a steady rate, every n-th one invalid")
            .outlet(OUT)
            .parameter(RATE)
            .parameter(COUNT)
            .parameter(USERS)
            .parameter(PREFIX)
            .parameter(INVALID_EVERY)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let (rate, count, users) = (
            ctx.parameter(RATE),
            ctx.parameter(COUNT),
            ctx.parameter(USERS),
        );
        let (prefix, invalid_every) = (ctx.parameter(PREFIX), ctx.parameter(INVALID_EVERY));
        let started = Instant::now();
        let mut sequence = 0;
        while !ctx.is_stopping() && (count < 0 || sequence < count) {
            let due = if rate > 0 {
                (started.elapsed().as_secs_f64() * rate as f64) as i64 + 1
            } else {
                sequence + 1024
            };
            while sequence < due && (count < 0 || sequence < count) {
                let now = ctx.clock().now_millis();
                out.send(&record(sequence, &prefix, users, invalid_every, now))
                    .await?;
                sequence += 1;
            }
            if rate > 0 {
                runnel::tokio::select! {
                    () = ctx.stopped() => break,
                    () = runnel::tokio::time::sleep(Duration::from_millis(5)) => {}
                }
            }
        }
        tracing::info!(
            records = sequence,
            "generator finished after {sequence} records"
        );
        Ok(())
    }
}
