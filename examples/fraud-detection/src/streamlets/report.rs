//! `merchant-report`: per merchant and hour of event time, how many transactions were
//! scored and flagged, and the flagged amount.

use std::time::Duration;

use runnel::prelude::*;
use runnel::watermark::Watermarks;
use runnel::window::{Aggregate, Pane, WindowSpec};

use crate::model::{MerchantReport, ScoredTransaction};

/// Scored transactions.
pub const IN: Inlet<ScoredTransaction> = Inlet::new("in");
/// One report per merchant and hour.
pub const OUT: Outlet<Pane<String, MerchantReport>> =
    Outlet::new("out").keyed_by(|pane| pane.key.clone());

/// Hours of event time.
pub const HOURS: WindowSpec = WindowSpec::tumbling(Duration::from_secs(3600));
/// Transactions arrive at most ten minutes out of order.
pub const WATERMARKS: Watermarks =
    Watermarks::bounded(Duration::from_secs(600)).idle_after(Duration::from_secs(60));

/// Counts and sums what the reports hold.
#[derive(Debug)]
pub struct MerchantSummary;

impl Aggregate for MerchantSummary {
    type Input = ScoredTransaction;
    /// Transactions, flagged ones, flagged amount, highest probability.
    type Accumulator = (i64, i64, f64, f64);
    type Output = MerchantReport;

    fn create(&self) -> Self::Accumulator {
        (0, 0, 0.0, 0.0)
    }

    fn add(&self, acc: &mut Self::Accumulator, scored: &ScoredTransaction) {
        acc.0 += 1;
        if scored.flagged {
            acc.1 += 1;
            acc.2 += scored.transaction.amount;
        }
        acc.3 = acc.3.max(scored.fraud_probability);
    }

    fn merge(&self, acc: &mut Self::Accumulator, other: &Self::Accumulator) {
        acc.0 += other.0;
        acc.1 += other.1;
        acc.2 += other.2;
        acc.3 = acc.3.max(other.3);
    }

    fn result(&self, acc: &Self::Accumulator) -> MerchantReport {
        MerchantReport {
            transactions: acc.0,
            flagged: acc.1,
            flagged_amount: acc.2,
            max_probability: acc.3,
        }
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    WindowedAggregate::new(IN, OUT, HOURS, MerchantSummary)
        .key_by(|scored| scored.transaction.merchant.clone())
        .event_time(|scored| scored.transaction.timestamp)
        .watermarks(WATERMARKS)
        .describe(
            "per merchant and hour of event time: transactions scored and flagged, flagged amount",
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CardFeatures, Transaction};
    use runnel::testkit::TestRun;

    fn scored(merchant: &str, minute: i64, amount: f64, probability: f64) -> ScoredTransaction {
        ScoredTransaction {
            transaction: Transaction {
                id: format!("{merchant}-{minute}"),
                card: "card-1".into(),
                merchant: merchant.into(),
                category: "jewelry".into(),
                amount,
                timestamp: minute * 60_000,
            },
            features: CardFeatures {
                amount_log: 0.0,
                amount_z: 0.0,
                gap_log: 0.0,
                category_share: 0.0,
                history_log: 0.0,
                night: 0.0,
                risky_category: 1.0,
            },
            fraud_probability: probability,
            flagged: probability >= 0.5,
            model: "fraud".into(),
            model_version: "1".into(),
        }
    }

    #[runnel::test]
    async fn each_merchant_hour_counts_its_flagged_transactions() -> anyhow::Result<()> {
        let run = TestRun::new(streamlet())
            .input(
                IN,
                [
                    scored("jewelry-01", 5, 100.0, 0.1),
                    scored("jewelry-01", 10, 900.0, 0.97),
                    scored("fuel-02", 20, 40.0, 0.2),
                    scored("jewelry-01", 70, 50.0, 0.3),
                ],
            )
            .run()
            .await?;
        let reports = run.output(OUT);
        let first = reports
            .iter()
            .find(|pane| pane.key == "jewelry-01" && pane.window_start == 0)
            .expect("jewelry-01's first hour");
        assert_eq!(
            first.value,
            MerchantReport {
                transactions: 2,
                flagged: 1,
                flagged_amount: 900.0,
                max_probability: 0.97
            }
        );
        assert_eq!(reports.len(), 3);
        Ok(())
    }
}
