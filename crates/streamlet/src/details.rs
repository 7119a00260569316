//! [`StatusDetails`]: short facts a streamlet shows in the status, such as the model it serves.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Short named facts about a running instance that the status shows beside its counters
/// (`runnel status`, `/api/status`): the model a scorer serves now, the last model it
/// rejected and why. Setting a name again replaces its value. Get it from
/// [`Context::status_details`](crate::Context::status_details); clones share the facts.
///
/// ```
/// use runnel_streamlet::StatusDetails;
/// let details = StatusDetails::default();
/// details.set("model", "fraud@1");
/// details.set("model", "fraud@2");
/// assert_eq!(details.snapshot()["model"], "fraud@2");
/// ```
#[derive(Clone, Debug, Default)]
pub struct StatusDetails {
    facts: Arc<Mutex<BTreeMap<String, String>>>,
}

impl StatusDetails {
    /// Shows `value` under `name`, replacing what was there.
    pub fn set(&self, name: &str, value: impl Into<String>) {
        self.facts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), value.into());
    }

    /// Every fact, by name.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.facts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
