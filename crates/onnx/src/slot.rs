//! [`ModelSlot`]: the model serving now, the one loading, and the model records not yet
//! committed, so that the serving model is read again after a restart.
//!
//! The models inlet is committed only up to (not including) the record of the serving
//! model: that record, and every one after it (rejected models, or one still loading), stay
//! uncommitted. After a restart the inlet therefore delivers the serving model first, which
//! loads and serves again before the first record is scored, and then the models after it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_streamlet::{CommitToken, Message, ModelMetrics, OutletSender, Result, StatusDetails};
use tokio::task::JoinHandle;

use crate::{Model, ModelError, ModelEvent, ModelRecord};

/// A model being loaded and validated on a blocking thread.
struct Loading {
    name: String,
    version: String,
    token: CommitToken,
    task: JoinHandle<(std::result::Result<Model, ModelError>, Duration)>,
}

/// Which model records a scorer takes.
#[derive(Clone, Debug, Default)]
pub(crate) struct ModelPolicy {
    /// The model name it serves; without one, the name of the first model that serves.
    pub(crate) name: Option<String>,
    /// Whether a version older than the serving one is rejected.
    pub(crate) refuse_older: bool,
}

impl ModelPolicy {
    /// Why `record` may not replace `serving`, if it may not.
    fn refusal(&self, record: &ModelRecord, serving: Option<&Model>) -> Option<ModelError> {
        let serves = self
            .name
            .as_deref()
            .or_else(|| serving.map(|model| model.name()));
        if let Some(serves) = serves
            && record.name != serves
        {
            return Some(ModelError::OtherModel {
                name: record.name.clone(),
                serves: serves.to_owned(),
            });
        }
        if !self.refuse_older {
            return None;
        }
        let Some(version) = dotted_numbers(&record.version) else {
            return Some(ModelError::UnorderedVersion {
                version: record.version.clone(),
            });
        };
        let serving = serving?;
        match dotted_numbers(serving.version()) {
            Some(current) if version < current => Some(ModelError::OlderVersion {
                version: record.version.clone(),
                serving: serving.version().to_owned(),
            }),
            _ => None,
        }
    }
}

/// `1.10.3` as `[1, 10, 3]`, compared part by part (so 1.10 is after 1.9); `None` when the
/// version is not dotted numbers. Trailing zero parts do not count: `2` and `2.0` are equal.
fn dotted_numbers(version: &str) -> Option<Vec<u64>> {
    let mut parts = version
        .trim()
        .split('.')
        .map(|part| part.parse::<u64>().ok())
        .collect::<Option<Vec<u64>>>()?;
    while parts.len() > 1 && parts.last() == Some(&0) {
        parts.pop();
    }
    Some(parts)
}

/// The serving model and the bookkeeping around it.
pub(crate) struct ModelSlot {
    serving: Option<Arc<Model>>,
    /// The record of the serving model (first, when there is one) and every model record
    /// after it, uncommitted.
    held: Vec<CommitToken>,
    loading: Option<Loading>,
    features: usize,
    outputs: usize,
    events: OutletSender<ModelEvent>,
    /// Where the status shows the serving model and the last one rejected.
    details: StatusDetails,
    rejected: u64,
    policy: ModelPolicy,
    metrics: ModelMetrics,
}

impl ModelSlot {
    pub(crate) fn new(
        features: usize,
        outputs: usize,
        events: OutletSender<ModelEvent>,
        details: StatusDetails,
        policy: ModelPolicy,
        metrics: ModelMetrics,
    ) -> Self {
        details.set("model", "none yet");
        ModelSlot {
            serving: None,
            held: Vec::new(),
            loading: None,
            features,
            outputs,
            events,
            details,
            rejected: 0,
            policy,
            metrics,
        }
    }

    /// The model serving now.
    pub(crate) fn serving(&self) -> Option<&Arc<Model>> {
        self.serving.as_ref()
    }

    pub(crate) fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    /// Starts loading the model of `message` off the scoring path.
    pub(crate) fn load(&mut self, message: Message<ModelRecord>) {
        let (record, token) = message.into_parts();
        let (name, version) = (record.name.clone(), record.version.clone());
        let (features, outputs) = (self.features, self.outputs);
        let refusal = self.policy.refusal(&record, self.serving.as_deref());
        let task = match refusal {
            // Refused before loading: it never takes the place of the serving model.
            Some(refusal) => tokio::task::spawn_blocking(move || (Err(refusal), Duration::ZERO)),
            None => {
                tracing::info!("loading model {name}@{version}");
                tokio::task::spawn_blocking(move || {
                    let started = Instant::now();
                    let loaded = Model::load(&record, features, outputs);
                    (loaded, started.elapsed())
                })
            }
        };
        self.loading = Some(Loading {
            name,
            version,
            token,
            task,
        });
    }

    /// Waits for the model loading now (forever if none is) and swaps it in, or rejects
    /// it; either way sends its event.
    ///
    /// # Errors
    ///
    /// When the event cannot be sent.
    pub(crate) async fn loaded(&mut self) -> Result<()> {
        let Some(loading) = self.loading.as_mut() else {
            return std::future::pending().await;
        };
        let joined = (&mut loading.task).await;
        let loading = self.loading.take().expect("a model is loading");
        let (loaded, took) = joined.unwrap_or_else(|join| {
            let reason = format!("loading it panicked: {join}");
            (Err(ModelError::Unreadable { reason }), Duration::ZERO)
        });
        let previous = self
            .serving
            .as_ref()
            .map(|model| model.label())
            .unwrap_or_default();
        let label = format!("{}@{}", loading.name, loading.version);
        let load_millis = took.as_secs_f64() * 1e3;
        match loaded {
            Ok(model) => {
                tracing::info!(
                    "serving model {label} (loaded and checked in {load_millis:.1} ms){}",
                    if previous.is_empty() {
                        String::new()
                    } else {
                        format!(", replacing {previous}")
                    }
                );
                self.serving = Some(Arc::new(model));
                self.details.set("model", label.as_str());
                self.metrics.serving(&loading.name, &loading.version);
                self.events
                    .send(&ModelEvent {
                        name: loading.name,
                        version: loading.version,
                        serving: true,
                        reason: String::new(),
                        load_millis,
                        previous,
                    })
                    .await?;
                // Everything before the new serving model can go; it stays until the next.
                for token in std::mem::take(&mut self.held) {
                    token.commit();
                }
                self.held.push(loading.token);
            }
            Err(error) => {
                tracing::warn!(
                    "rejected model {label}: {error}; {}",
                    if previous.is_empty() {
                        "no model serves yet".to_owned()
                    } else {
                        format!("{previous} goes on serving")
                    }
                );
                self.rejected += 1;
                self.metrics.rejected();
                self.details
                    .set("models rejected", self.rejected.to_string());
                self.details
                    .set("last rejected model", format!("{label}: {error}"));
                self.events
                    .send(&ModelEvent {
                        name: loading.name,
                        version: loading.version,
                        serving: false,
                        reason: error.to_string(),
                        load_millis,
                        previous,
                    })
                    .await?;
                self.held.push(loading.token);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_dotted_numbers() {
        assert!(dotted_numbers("1.10") > dotted_numbers("1.9"));
        assert_eq!(dotted_numbers("2"), dotted_numbers("2.0.0"));
        assert!(dotted_numbers("10") > dotted_numbers("9.99"));
        assert_eq!(dotted_numbers("2024-06-01"), None);
        assert_eq!(dotted_numbers("corrupt"), None);
        assert_eq!(dotted_numbers(""), None);
    }
}
