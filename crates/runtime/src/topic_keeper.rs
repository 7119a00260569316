//! Creating a managed topic again when it disappears under a running app (deleted by an
//! administrator, or lost with a broker that came back empty).

use std::sync::Arc;

use runnel_backend::{Backend, TopicSpec};
use tokio_util::sync::CancellationToken;

use crate::health::REQUEST_TIMEOUT;
use crate::status::StatusBoard;

/// Watches the board's samples until `stop` fires; each managed topic a sample finds
/// missing is created again (unmanaged ones are only reported, as the sample's problem).
pub(crate) async fn keep_topics(
    board: Arc<StatusBoard>,
    backend: Arc<dyn Backend>,
    managed: Vec<TopicSpec>,
    stop: CancellationToken,
) {
    let mut latest = board.latest();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = latest.changed() => if changed.is_err() { return },
        }
        let missing: Vec<TopicSpec> = latest
            .borrow_and_update()
            .topics
            .iter()
            .filter(|topic| topic.missing)
            .filter_map(|topic| managed.iter().find(|spec| spec.name == topic.name))
            .cloned()
            .collect();
        for spec in missing {
            tracing::warn!(
                topic = %spec.name,
                "topic '{}' has disappeared; creating it again with {} partitions, as the blueprint manages it",
                spec.name,
                spec.partitions
            );
            match tokio::time::timeout(REQUEST_TIMEOUT * 5, backend.create_topic(&spec)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => tracing::error!(
                    topic = %spec.name,
                    "creating topic '{}' again failed: {error}",
                    spec.name
                ),
                Err(_) => tracing::error!(
                    topic = %spec.name,
                    "creating topic '{}' again took too long; trying again after the next sample",
                    spec.name
                ),
            }
        }
    }
}
