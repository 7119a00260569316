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
    /// use runnel_event_time::window::{Count, WindowOperator, WindowSpec};
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

    /// Replaces the state with a [`snapshot`](Self::snapshot). Snapshots taken before
    /// panes had metadata (on-time index, first, last) restore too: see
    /// `docs/event-time.md` for what their windows' next panes say.
    ///
    /// # Errors
    ///
    /// When the snapshot was taken with other key, accumulator or output types.
    pub fn restore(&mut self, snapshot: &[u8]) -> Result<(), RestoreError> {
        let state = serde_json::from_slice::<State<K, A::Accumulator, A::Output>>(snapshot)
            .map_err(RestoreError)?;
        self.set_state(state);
        Ok(())
    }

    #[doc(hidden)]
    pub fn state(&self) -> &State<K, A::Accumulator, A::Output> {
        &self.state
    }

    /// Replaces the state with one restored from a checkpoint, filling in what a
    /// checkpoint from an earlier version lacks.
    #[doc(hidden)]
    pub fn set_state(&mut self, mut state: State<K, A::Accumulator, A::Output>) {
        state.upgrade(&self.spec);
        self.state = state;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::window::{Sum, WindowSpec};

    #[test]
    fn floats_survive_a_snapshot_bit_for_bit() {
        const SPEC: WindowSpec = WindowSpec::tumbling(Duration::from_secs(60));
        let mut sums = WindowOperator::new(SPEC, Sum::of(|value: &f64| *value));
        for value in [0.1, 0.2, 1e-300, 1399.9635843700335] {
            sums.add("k".to_owned(), 0, &value, 0, &mut Vec::new());
        }
        let mut restored = WindowOperator::<String, _>::new(SPEC, Sum::of(|value: &f64| *value));
        restored.restore(&sums.snapshot()).unwrap();
        let (mut before, mut after) = (Vec::new(), Vec::new());
        sums.advance_watermark(i64::MAX, 0, &mut before);
        restored.advance_watermark(i64::MAX, 0, &mut after);
        assert_eq!(before[0].value.to_bits(), after[0].value.to_bits());
    }
}
