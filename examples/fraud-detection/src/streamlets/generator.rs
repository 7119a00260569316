//! `generator`: card transactions for demos, with an occasional burst of fraud.

use std::time::{Duration, Instant};

use runnel::prelude::*;

use crate::model::Transaction;
use crate::streamlets::ingress::TRANSACTIONS;

/// Transactions per second; 0 generates none.
pub const RATE: Parameter<i64> = Parameter::int("records-per-second")
    .describe("transactions generated per second; 0 generates none and finishes")
    .default("2");
/// Cards taking turns.
pub const CARDS: Parameter<i64> = Parameter::int("cards")
    .describe("number of simulated cards")
    .default("50");
/// Every n-th transaction starts a burst of fraud on its card.
pub const FRAUD_EVERY: Parameter<i64> = Parameter::int("fraud-every")
    .describe("every n-th transaction starts a burst of fraud; 0 means never")
    .default("97");

const COMMON: [&str; 5] = ["grocery", "fuel", "restaurant", "online", "travel"];
const RISKY: [&str; 3] = ["electronics", "jewelry", "cash"];

/// Generates transactions.
#[derive(Debug)]
pub struct Generator;

/// A small deterministic generator (splitmix64), so runs are repeatable.
#[derive(Debug)]
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1_u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The transaction number `sequence` of card `card`: its usual spending, or fraud.
fn transaction(
    random: &mut Random,
    sequence: u64,
    card: i64,
    fraud: bool,
    now: i64,
) -> Transaction {
    // Each card spends around its own typical amount in three usual categories.
    let typical = 15.0 + (card.rem_euclid(7) as f64) * 12.0;
    let (category, amount) = if fraud {
        (
            RISKY[random.below(RISKY.len())],
            typical * (10.0 + 15.0 * random.unit()),
        )
    } else {
        (
            COMMON[(card as usize + random.below(3)) % COMMON.len()],
            typical * (0.5 + random.unit()),
        )
    };
    Transaction {
        id: format!("gen-{sequence:08}"),
        card: format!("card-g{card:04}"),
        merchant: format!("{category}-{:02}", random.below(12)),
        category: category.to_owned(),
        amount: (amount * 100.0).round() / 100.0,
        timestamp: now,
    }
}

impl Streamlet for Generator {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("generates card transactions for demos, with occasional bursts of fraud")
            .outlet(TRANSACTIONS)
            .parameter(RATE)
            .parameter(CARDS)
            .parameter(FRAUD_EVERY)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(TRANSACTIONS);
        let (rate, cards) = (ctx.parameter(RATE), ctx.parameter(CARDS).max(1));
        let fraud_every = ctx.parameter(FRAUD_EVERY);
        if rate <= 0 {
            return Ok(());
        }
        let mut random = Random(14);
        let started = Instant::now();
        let mut sequence: u64 = 0;
        // Fraudulent transactions still to come, and on which card.
        let mut burst: (u32, i64) = (0, 0);
        while !ctx.is_stopping() {
            let due = (started.elapsed().as_secs_f64() * rate as f64) as u64 + 1;
            while sequence < due {
                let now = ctx.clock().now_millis();
                if fraud_every > 0 && sequence % fraud_every as u64 == fraud_every as u64 - 1 {
                    burst = (
                        1 + random.below(3) as u32,
                        random.below(cards as usize) as i64,
                    );
                }
                let transaction = if burst.0 > 0 {
                    burst.0 -= 1;
                    transaction(&mut random, sequence, burst.1, true, now)
                } else {
                    let card = random.below(cards as usize) as i64;
                    transaction(&mut random, sequence, card, false, now)
                };
                out.send(&transaction).await?;
                sequence += 1;
            }
            runnel::tokio::select! {
                () = ctx.stopped() => break,
                () = runnel::tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
        Ok(())
    }
}
