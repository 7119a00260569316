//! Checkpointing a [`WindowOperator`]: its whole state (watermark, every key's windows and
//! accumulators, pending timers) as JSON, and back.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::operator::State;
use super::{Aggregate, Key, WindowOperator};

/// Why a snapshot cannot be restored.
#[derive(Debug, thiserror::Error)]
#[error("the window state does not decode")]
pub struct RestoreError(#[source] serde_json::Error);

impl<K, A> WindowOperator<K, A>
where
    K: Key + Serialize + DeserializeOwned,
    A: Aggregate,
{
    /// The operator's state, for a checkpoint. Restoring it gives an operator that emits
    /// exactly what this one would.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_streamlet::window::{Count, WindowOperator, WindowSpec};
    /// const MINUTE: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
    /// let mut counts = WindowOperator::new(MINUTE, Count::<()>::new());
    /// counts.add("a".to_owned(), 1_000, &(), 0, &mut Vec::new());
    ///
    /// let mut restored = WindowOperator::<String, _>::new(MINUTE, Count::<()>::new());
    /// restored.restore(&counts.snapshot()).unwrap();
    /// let mut panes = Vec::new();
    /// restored.advance_watermark(60_000, 0, &mut panes);
    /// assert_eq!(panes[0].value, 1);
    /// ```
    pub fn snapshot(&self) -> Vec<u8> {
        serde_json::to_vec(&self.state).expect("window state serializes")
    }

    /// Replaces the state with a [`snapshot`](Self::snapshot).
    ///
    /// # Errors
    ///
    /// When the snapshot was taken with other key, accumulator or output types.
    pub fn restore(&mut self, snapshot: &[u8]) -> Result<(), RestoreError> {
        self.state = serde_json::from_slice::<State<K, A::Accumulator, A::Output>>(snapshot)
            .map_err(RestoreError)?;
        Ok(())
    }

    pub(crate) fn state(&self) -> &State<K, A::Accumulator, A::Output> {
        &self.state
    }

    pub(crate) fn set_state(&mut self, state: State<K, A::Accumulator, A::Output>) {
        self.state = state;
    }
}
