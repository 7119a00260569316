//! The records of the fraud-detection app.

use runnel::prelude::*;

/// A card payment, as POSTed to the ingress.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    /// Unique per transaction.
    pub id: String,
    /// The card paid with.
    pub card: String,
    /// Where: a merchant id (`jewelry-03`).
    pub merchant: String,
    /// The merchant's category: grocery, fuel, restaurant, online, travel, electronics,
    /// jewelry or cash.
    pub category: String,
    /// How much, in the card's currency.
    pub amount: f64,
    /// When, in milliseconds since the Unix epoch (event time).
    pub timestamp: i64,
}

/// What a card's history says about one of its transactions, computed before the
/// transaction joins the history. The model's seven features, in this order.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct CardFeatures {
    /// `ln(1 + amount)`.
    pub amount_log: f64,
    /// How many standard deviations (at least 1.0) the amount is from the card's mean;
    /// 0 before the card has two transactions.
    pub amount_z: f64,
    /// `ln(1 + seconds since the card's previous transaction)`; 30 days for the first.
    pub gap_log: f64,
    /// The share of the card's transactions in this category so far.
    pub category_share: f64,
    /// `ln(1 + transactions the card made before)`.
    pub history_log: f64,
    /// 1 between midnight and 6 am (UTC), else 0.
    pub night: f64,
    /// 1 for electronics, jewelry and cash, else 0.
    pub risky_category: f64,
}

impl CardFeatures {
    /// The features in the model's order, as the model takes them.
    pub fn values(&self) -> [f32; 7] {
        [
            self.amount_log,
            self.amount_z,
            self.gap_log,
            self.category_share,
            self.history_log,
            self.night,
            self.risky_category,
        ]
        .map(|value| value as f32)
    }
}

/// A transaction with its card's features.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct EnrichedTransaction {
    /// The transaction.
    pub transaction: Transaction,
    /// Its features.
    pub features: CardFeatures,
}

/// A transaction with the model's verdict.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredTransaction {
    /// The transaction.
    pub transaction: Transaction,
    /// The features it was scored on.
    pub features: CardFeatures,
    /// The model's probability that it is fraud.
    pub fraud_probability: f64,
    /// Whether the probability is at least the threshold (0.5).
    pub flagged: bool,
    /// The name of the model that scored it.
    pub model: String,
    /// The version of the model that scored it.
    pub model_version: String,
}

/// One merchant's transactions in one window of event time.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct MerchantReport {
    /// Transactions scored.
    pub transactions: i64,
    /// Transactions flagged as fraud.
    pub flagged: i64,
    /// The amount of the flagged ones.
    pub flagged_amount: f64,
    /// The highest fraud probability seen.
    pub max_probability: f64,
}
