//! `alert-logger`, `report-logger` and `model-logger`: egresses that log what matters.

use runnel::onnx::ModelEvent;
use runnel::prelude::*;
use runnel::tracing;
use runnel::window::Pane;

use crate::model::{MerchantReport, ScoredTransaction};

/// Scored transactions.
pub const SCORED: Inlet<ScoredTransaction> = Inlet::new("in");
/// Reports per merchant and hour.
pub const REPORTS: Inlet<Pane<String, MerchantReport>> = Inlet::new("in");
/// What became of each model.
pub const MODEL_EVENTS: Inlet<ModelEvent> = Inlet::new("in");

/// Logs every flagged transaction.
pub fn alerts() -> impl Streamlet {
    Egress::new(SCORED, |scored: ScoredTransaction| async move {
        if scored.flagged {
            let t = &scored.transaction;
            tracing::warn!(
                "fraud suspected: {} on {} paid {:.2} at {} ({}): probability {:.3} by {}@{}",
                t.id,
                t.card,
                t.amount,
                t.merchant,
                t.category,
                scored.fraud_probability,
                scored.model,
                scored.model_version
            );
        }
        Ok(())
    })
    .describe("logs flagged transactions")
}

/// Logs the reports of merchants with flagged transactions.
pub fn reports() -> impl Streamlet {
    Egress::new(REPORTS, |pane: Pane<String, MerchantReport>| async move {
        if pane.value.flagged > 0 {
            tracing::warn!(
                "merchant {} in [{}, {}): {} of {} transactions flagged, {:.2} flagged in all",
                pane.key,
                pane.window_start,
                pane.window_end,
                pane.value.flagged,
                pane.value.transactions,
                pane.value.flagged_amount
            );
        }
        Ok(())
    })
    .describe("logs the hourly reports of merchants with flagged transactions")
}

/// Logs every model that starts serving or is rejected.
pub fn models() -> impl Streamlet {
    Egress::new(MODEL_EVENTS, |event: ModelEvent| async move {
        if event.serving {
            tracing::info!(
                "model {}@{} serves now (loaded in {:.1} ms){}",
                event.name,
                event.version,
                event.load_millis,
                if event.previous.is_empty() {
                    String::new()
                } else {
                    format!(", replacing {}", event.previous)
                }
            );
        } else {
            tracing::warn!(
                "model {}@{} was rejected: {}",
                event.name,
                event.version,
                event.reason
            );
        }
        Ok(())
    })
    .describe("logs models that start serving or are rejected")
}
