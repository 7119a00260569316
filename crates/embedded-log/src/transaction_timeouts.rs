//! Aborting transactions whose producer stalled: a thread of the log wakes every
//! [`CHECK_INTERVAL`], and aborts each transaction still undecided past its producer's
//! `transaction.timeout.ms` (Kafka's setting and default, 60 s), bumping the epoch so that
//! the stalled producer is fenced when it comes back. Without it, a live producer that never
//! commits would hold read-committed readers of its partitions at the last stable offset
//! for as long as the process runs.
//!
//! The thread holds the log only while it aborts something, so it never keeps a dropped
//! log open, and it stops once the log is gone.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::shared::Shared;
use crate::transactional_producer::{self, Context};

/// How often the thread looks for expired transactions.
const CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// Starts the thread that aborts expired transactions of `shared`.
pub(crate) fn start(shared: &Arc<Shared>) -> Result<()> {
    let log = Arc::downgrade(shared);
    let deadlines = shared.coordinator.deadlines();
    std::thread::Builder::new()
        .name("runnel-log-transaction-timeouts".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(CHECK_INTERVAL);
                if log.strong_count() == 0 {
                    return;
                }
                let now = Instant::now();
                for (id, fields) in deadlines.expired(now) {
                    if !abort_expired(&log, &id, fields, now) {
                        return;
                    }
                }
            }
        })
        .map(drop)
        .map_err(|source| Error::OpenFile {
            path: shared.directory.clone(),
            source,
        })
}

/// Aborts one expired transaction; `false` once the log is gone.
fn abort_expired(
    log: &Weak<Shared>,
    id: &str,
    fields: crate::batch::TransactionFields,
    now: Instant,
) -> bool {
    let Some(shared) = log.upgrade() else {
        return false;
    };
    let ending = shared.coordinator.ending_lock(id);
    let _ending = futures::executor::block_on(ending.lock());
    let outcome = match shared.coordinator.expire(id, fields, now) {
        Ok(Some(decided)) => {
            if decided.fields.control == crate::batch::Control::Commit {
                tracing::warn!(
                    id = %id,
                    partitions = decided.partitions.len(),
                    "finishing a transaction whose producer decided to commit it but stopped before writing its markers"
                );
            } else {
                tracing::warn!(
                    id = %id,
                    partitions = decided.partitions.len(),
                    "aborting a transaction whose producer did not commit within its transaction.timeout.ms; the producer is fenced"
                );
            }
            futures::executor::block_on(transactional_producer::finish(
                &shared,
                id,
                decided,
                Context::Blocking,
            ))
        }
        Ok(None) => Ok(()),
        Err(error) => Err(error),
    };
    if let Err(error) = outcome {
        tracing::error!(id = %id, error = %error, "aborting an expired transaction failed; it is finished when a producer with its id begins or the log is reopened");
    }
    true
}
