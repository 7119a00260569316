//! [`Scoring`]: what a scorer feeds its model for each record, and what it makes of the
//! score.

use runnel_streamlet::Data;

/// The part of a [`ModelScorer`](crate::ModelScorer) that knows the records: the features
/// of an input record, and the output record made of an input and its [`Score`].
///
/// ```
/// use runnel_onnx::{Score, Scoring};
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
/// pub struct Payment { pub amount: f64, pub night: bool }
///
/// #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
/// pub struct ScoredPayment { pub payment: Payment, pub fraud: f64, pub model: String }
///
/// /// Two features in, two class probabilities out.
/// pub struct FraudScoring;
///
/// impl Scoring for FraudScoring {
///     type Input = Payment;
///     type Output = ScoredPayment;
///     const FEATURES: usize = 2;
///     const OUTPUTS: usize = 2;
///
///     fn features(&self, payment: &Payment, features: &mut Vec<f32>) {
///         features.extend([payment.amount.ln_1p() as f32, f32::from(u8::from(payment.night))]);
///     }
///
///     fn scored(&self, payment: Payment, score: Score<'_>) -> ScoredPayment {
///         ScoredPayment { payment, fraud: f64::from(score.values[1]), model: score.label() }
///     }
/// }
/// ```
pub trait Scoring: Send + Sync + 'static {
    /// The records scored.
    type Input: Data;
    /// The records sent on, each with its score.
    type Output: Data;
    /// How many values the model takes per record (the product of a model record's
    /// `input_shape` after the batch dimension).
    const FEATURES: usize;
    /// How many values the model gives per record (the product of a model record's
    /// `output_shape` after the batch dimension).
    const OUTPUTS: usize;

    /// Appends the [`FEATURES`](Scoring::FEATURES) values of `input` to `features`. A
    /// record that yields another number is rejected (by default, to the dead-letter
    /// topic).
    fn features(&self, input: &Self::Input, features: &mut Vec<f32>);

    /// The output record of `input` and its score.
    fn scored(&self, input: Self::Input, score: Score<'_>) -> Self::Output;
}

/// What a model made of one record: its [`OUTPUTS`](Scoring::OUTPUTS) values, and which
/// model it was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score<'a> {
    /// The model's name.
    pub model: &'a str,
    /// The model's version.
    pub version: &'a str,
    /// The values the model gave for the record.
    pub values: &'a [f32],
}

impl Score<'_> {
    /// `name@version` of the model.
    ///
    /// ```
    /// let score = runnel_onnx::Score { model: "fraud", version: "2", values: &[0.1, 0.9] };
    /// assert_eq!(score.label(), "fraud@2");
    /// ```
    pub fn label(&self) -> String {
        format!("{}@{}", self.model, self.version)
    }
}
