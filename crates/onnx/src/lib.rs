//! Model serving for Runnel: score records with ONNX models that arrive on a stream of
//! their own and replace each other while the app runs.
//!
//! A [`ModelScorer`] is a streamlet with two inlets: the records to score, and
//! [`MODELS`], where [`ModelRecord`]s (name, version, ONNX bytes, input and output shapes)
//! arrive. Each model is loaded with [tract](https://github.com/sonos/tract) (pure Rust, no
//! native runtime), checked ([`Model::load`]), and swapped in between two batches; an
//! invalid one is rejected and the previous model goes on serving. What to feed the model
//! and what to make of its output is a [`Scoring`]:
//!
//! ```
//! use runnel_onnx::{ModelScorer, Score, Scoring};
//! use runnel_streamlet::prelude::*;
//!
//! #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
//! pub struct Payment { pub amount: f64 }
//!
//! #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
//! pub struct Scored { pub amount: f64, pub fraud: f64, pub model: String }
//!
//! pub struct FraudScoring;
//!
//! impl Scoring for FraudScoring {
//!     type Input = Payment;
//!     type Output = Scored;
//!     const FEATURES: usize = 1;
//!     const OUTPUTS: usize = 2;
//!
//!     fn features(&self, payment: &Payment, features: &mut Vec<f32>) {
//!         features.push(payment.amount as f32);
//!     }
//!
//!     fn scored(&self, payment: Payment, score: Score<'_>) -> Scored {
//!         Scored { amount: payment.amount, fraud: f64::from(score.values[1]), model: score.label() }
//!     }
//! }
//!
//! pub const PAYMENTS: Inlet<Payment> = Inlet::new("in");
//! pub const SCORED: Outlet<Scored> = Outlet::new("out");
//!
//! let scorer = ModelScorer::new(PAYMENTS, SCORED, FraudScoring);
//! # let _ = scorer;
//! ```
//!
//! In a blueprint the scorer's ports are the two given to it plus `models` and
//! `model-events` ([`MODEL_EVENTS`]: serving or rejected, with the reason). This crate is
//! the only one that builds tract; apps without models never compile it.
//!
//! Where to begin: [`ModelScorer`], then [`ModelRecord`] for publishing models.

mod error;
mod model;
mod record;
mod scorer;
mod scoring;
mod slot;

pub use error::ModelError;
pub use model::Model;
pub use record::{ModelEvent, ModelRecord, OnnxBytes};
pub use scorer::{
    BATCH_LINGER, BATCH_SIZE, MODEL_EVENTS, MODEL_NAME, MODELS, ModelScorer, REFUSE_OLDER_VERSIONS,
};
pub use scoring::{Score, Scoring};
