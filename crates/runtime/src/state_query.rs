//! Asking a running instance for the keyed state of a key: what `/api/state/{instance}`
//! and `runnel state get` answer, found through the [`StatusBoard`]'s instances.

use std::time::Duration;

use runnel_streamlet::state::{KeyState, QueryError};

use crate::StatusBoard;

/// How long a query waits for the streamlet to get to it (it answers between messages).
pub const STATE_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the state of a key could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateQueryError {
    /// No instance of that name runs in this process.
    #[error("no streamlet instance '{instance}' runs in this process (it runs {})", list(.running))]
    UnknownInstance {
        /// The instance asked for.
        instance: String,
        /// The instances this process runs.
        running: Vec<String>,
    },
    /// The instance did not answer.
    #[error("streamlet instance '{instance}' did not answer the query")]
    Query {
        /// The instance asked.
        instance: String,
        /// Why it did not.
        #[source]
        source: QueryError,
    },
}

impl StateQueryError {
    /// The reason the instance gave, when it was asked.
    pub fn query_error(&self) -> Option<&QueryError> {
        match self {
            StateQueryError::Query { source, .. } => Some(source),
            StateQueryError::UnknownInstance { .. } => None,
        }
    }
}

impl StatusBoard {
    /// The state of `key` in instance `instance` of this process, as the running
    /// streamlet holds it (see [`KeyState`]), waiting at most [`STATE_QUERY_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// When no such instance runs here, it keeps no keyed state, its state is not running
    /// now, or it did not answer in time.
    pub async fn query_state(
        &self,
        instance: &str,
        key: Vec<u8>,
    ) -> Result<KeyState, StateQueryError> {
        let Some(status) = self
            .instances()
            .iter()
            .find(|status| status.name == instance)
        else {
            return Err(StateQueryError::UnknownInstance {
                instance: instance.to_owned(),
                running: self
                    .instances()
                    .iter()
                    .map(|status| status.name.clone())
                    .collect(),
            });
        };
        status
            .metrics
            .state_queries()
            .ask(key, STATE_QUERY_TIMEOUT)
            .await
            .map_err(|source| StateQueryError::Query {
                instance: instance.to_owned(),
                source,
            })
    }
}

/// Names as `a, b`, or `nothing`.
fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    }
}
