//! `score`: the fraud probability of each enriched transaction, from the model serving
//! now; models arrive on the `models` inlet and replace each other at run time.

use runnel::onnx::{ModelScorer, Score, Scoring};
use runnel::prelude::*;

use crate::model::{EnrichedTransaction, ScoredTransaction};

/// Enriched transactions.
pub const IN: Inlet<EnrichedTransaction> = Inlet::new("in");
/// Scored transactions, keyed by card.
pub const OUT: Outlet<ScoredTransaction> =
    Outlet::new("out").keyed_by(|scored| scored.transaction.card.clone());

/// From this probability on, a transaction is flagged.
pub const THRESHOLD: f64 = 0.5;

/// Seven card features in, the probabilities of "legitimate" and "fraud" out.
#[derive(Debug)]
pub struct FraudScoring;

impl Scoring for FraudScoring {
    type Input = EnrichedTransaction;
    type Output = ScoredTransaction;
    const FEATURES: usize = 7;
    const OUTPUTS: usize = 2;

    fn features(&self, enriched: &EnrichedTransaction, features: &mut Vec<f32>) {
        features.extend(enriched.features.values());
    }

    fn scored(&self, enriched: EnrichedTransaction, score: Score<'_>) -> ScoredTransaction {
        let fraud_probability = f64::from(score.values[1]);
        ScoredTransaction {
            transaction: enriched.transaction,
            features: enriched.features,
            fraud_probability,
            flagged: fraud_probability >= THRESHOLD,
            model: score.model.to_owned(),
            model_version: score.version.to_owned(),
        }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    ModelScorer::new(IN, OUT, FraudScoring)
        .model_name("fraud")
        .describe("scores each transaction with the model serving now; models arrive on 'models'")
}
