//! Per-card history: running statistics of a card's transactions, and the features they
//! give a new one. `model/train.py` computes the same features for training (its `Card`
//! class); keep the two in step.

use std::collections::BTreeMap;

use crate::model::{CardFeatures, Transaction};

/// The gap a card's first transaction counts as: 30 days, in seconds.
pub const FIRST_SEEN_GAP_SECONDS: f64 = 30.0 * 24.0 * 3600.0;
/// Categories where fraud is common.
pub const RISKY: [&str; 3] = ["electronics", "jewelry", "cash"];
const HOUR_MILLIS: i64 = 3_600_000;

/// What the app remembers about one card.
#[runnel::serializable]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardHistory {
    /// Transactions so far.
    pub count: u64,
    /// Their mean amount.
    pub mean: f64,
    /// The sum of squared deviations from the mean (Welford's method).
    pub m2: f64,
    /// When the last one was, in milliseconds since the Unix epoch.
    pub last: Option<i64>,
    /// Transactions per category.
    pub categories: BTreeMap<String, u64>,
}

impl CardHistory {
    /// The features of `transaction` given this history (before it joins).
    pub fn features(&self, transaction: &Transaction) -> CardFeatures {
        let amount = transaction.amount;
        let count = self.count as f64;
        let amount_z = if self.count >= 2 {
            let deviation = (self.m2 / (count - 1.0)).sqrt().max(1.0);
            (amount - self.mean) / deviation
        } else {
            0.0
        };
        let gap_log = match self.last {
            Some(last) => ((transaction.timestamp - last).max(0) as f64 / 1000.0).ln_1p(),
            None => FIRST_SEEN_GAP_SECONDS.ln_1p(),
        };
        let category_share = if self.count >= 1 {
            self.categories
                .get(&transaction.category)
                .copied()
                .unwrap_or(0) as f64
                / count
        } else {
            0.0
        };
        let hour = (transaction.timestamp / HOUR_MILLIS).rem_euclid(24);
        CardFeatures {
            amount_log: amount.ln_1p(),
            amount_z,
            gap_log,
            category_share,
            history_log: count.ln_1p(),
            night: if hour < 6 { 1.0 } else { 0.0 },
            risky_category: if RISKY.contains(&transaction.category.as_str()) {
                1.0
            } else {
                0.0
            },
        }
    }

    /// Adds `transaction` to the history.
    pub fn update(&mut self, transaction: &Transaction) {
        let amount = transaction.amount;
        self.count += 1;
        let delta = amount - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (amount - self.mean);
        self.last = Some(transaction.timestamp);
        *self
            .categories
            .entry(transaction.category.clone())
            .or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transaction(amount: f64, category: &str, timestamp: i64) -> Transaction {
        Transaction {
            id: "t".into(),
            card: "c".into(),
            merchant: "m".into(),
            category: category.into(),
            amount,
            timestamp,
        }
    }

    #[test]
    fn features_come_from_the_history_before_the_transaction() {
        let mut history = CardHistory::default();
        let first = transaction(10.0, "grocery", 1_700_000_000_000);
        let features = history.features(&first);
        assert_eq!(features.amount_z, 0.0);
        assert_eq!(features.gap_log, FIRST_SEEN_GAP_SECONDS.ln_1p());
        assert_eq!((features.category_share, features.history_log), (0.0, 0.0));
        history.update(&first);
        history.update(&transaction(30.0, "fuel", 1_700_000_060_000));
        // Mean 20, standard deviation sqrt(200) ≈ 14.1.
        let third = transaction(48.28, "jewelry", 1_700_000_120_000);
        let features = history.features(&third);
        assert!((features.amount_z - 2.0).abs() < 1e-3, "{features:?}");
        assert_eq!(features.gap_log, 60.0_f64.ln_1p());
        assert_eq!(features.category_share, 0.0);
        assert_eq!(features.risky_category, 1.0);
        assert_eq!(features.history_log, 2.0_f64.ln_1p());
        // 1_700_000_120_000 ms is 22:15 UTC.
        assert_eq!(features.night, 0.0);
        assert_eq!(
            history
                .features(&transaction(1.0, "fuel", 1_700_010_000_000))
                .category_share,
            0.5
        );
    }
}
