//! `enrich`: adds each card's history to its transactions.
//!
//! The history of every card (count, mean and deviation of amounts, time of the last
//! transaction, transactions per category) is kept in the streamlet and checkpointed with
//! the input offsets every second, so a restart, even after `kill -9`, resumes from a
//! history that reflects exactly the transactions committed before it. (It will move to
//! Runnel's keyed state, scoped by partition, once that exists, so the streamlet can scale
//! out.)

use runnel::tracing;
use std::collections::BTreeMap;
use std::time::Duration;

use runnel::prelude::*;
use runnel::tokio::time::Instant;

use crate::history::CardHistory;
use crate::model::{EnrichedTransaction, Transaction};

/// Transactions, keyed by card.
pub const IN: Inlet<Transaction> = Inlet::new("in");
/// The same with their card's features, keyed by card.
pub const OUT: Outlet<EnrichedTransaction> =
    Outlet::new("out").keyed_by(|enriched| enriched.transaction.card.clone());

/// How often the history is checkpointed.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Adds card features to transactions, keeping every card's history.
#[derive(Debug)]
pub struct Enrich;

impl Streamlet for Enrich {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe("adds each card's history (amount statistics, time since last, categories) to its transactions")
            .inlet(IN)
            .outlet(OUT)
            .checkpointed()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
        let mut cards: BTreeMap<String, CardHistory> = match checkpoints.restored() {
            Some(state) => serde_json::from_slice(state).map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of 'enrich' does not decode: {error}"
                ))
            })?,
            None => BTreeMap::new(),
        };
        tracing::info!(
            cards = cards.len(),
            "enriching with the history of {} cards",
            cards.len()
        );
        let mut input = ctx.inlet(IN);
        let output = ctx.outlet(OUT);
        let mut next_checkpoint: Option<Instant> = None;
        loop {
            let checkpoint_due = async {
                match next_checkpoint {
                    Some(at) => runnel::tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            runnel::tokio::select! {
                biased;
                () = checkpoint_due => {
                    checkpoints.save(serde_json::to_vec(&cards)?);
                    next_checkpoint = None;
                }
                message = input.next() => {
                    let Some(message) = message? else { break };
                    let (transaction, token) = message.into_parts();
                    let history = cards.entry(transaction.card.clone()).or_default();
                    let features = history.features(&transaction);
                    history.update(&transaction);
                    let enriched = EnrichedTransaction { transaction, features };
                    let sent = output.send_derived(&enriched, &token).await;
                    token.settle(sent).await?;
                    next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
                }
            }
        }
        checkpoints.save(serde_json::to_vec(&cards)?);
        Ok(())
    }
}
