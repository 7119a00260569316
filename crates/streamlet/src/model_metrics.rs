//! [`ModelMetrics`]: what a model-serving streamlet exports beside the common counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::Histogram;

/// The metrics of a streamlet that serves models (`runnel-onnx`'s scorer): the model
/// serving now, the models loaded and rejected, and how long scoring a batch takes. The
/// admin endpoint's `/metrics` shows them for every instance that
/// [uses](crate::Context::model_metrics) them. Clones share the figures.
///
/// ```
/// use std::time::Duration;
/// use runnel_streamlet::ModelMetrics;
/// let metrics = ModelMetrics::default();
/// metrics.serving("fraud", "2");
/// metrics.rejected();
/// metrics.scored(Duration::from_micros(300));
/// assert_eq!(metrics.serving_model(), Some(("fraud".to_owned(), "2".to_owned())));
/// assert_eq!((metrics.loaded_count(), metrics.rejected_count()), (1, 1));
/// assert_eq!(metrics.scoring_time().count(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ModelMetrics {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    used: AtomicBool,
    serving: Mutex<Option<(String, String)>>,
    loaded: AtomicU64,
    rejected: AtomicU64,
    scoring: Histogram,
}

impl ModelMetrics {
    /// Says the instance serves models, so its model metrics are exported (at zero until
    /// something happens).
    pub(crate) fn use_them(&self) {
        self.inner.used.store(true, Ordering::Relaxed);
    }

    /// Whether the instance serves models.
    pub fn is_used(&self) -> bool {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// Model `name` at `version` serves now (and was loaded).
    pub fn serving(&self, name: &str, version: &str) {
        self.inner.used.store(true, Ordering::Relaxed);
        *self
            .inner
            .serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((name.to_owned(), version.to_owned()));
        self.inner.loaded.fetch_add(1, Ordering::Relaxed);
    }

    /// A model that arrived was rejected.
    pub fn rejected(&self) {
        self.inner.used.store(true, Ordering::Relaxed);
        self.inner.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Scoring one batch took `took`.
    pub fn scored(&self, took: Duration) {
        self.inner.scoring.observe(took);
    }

    /// The name and version of the model serving now, if any.
    pub fn serving_model(&self) -> Option<(String, String)> {
        self.inner
            .serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Models that started serving since the instance started.
    pub fn loaded_count(&self) -> u64 {
        self.inner.loaded.load(Ordering::Relaxed)
    }

    /// Models rejected since the instance started.
    pub fn rejected_count(&self) -> u64 {
        self.inner.rejected.load(Ordering::Relaxed)
    }

    /// How long scoring a batch took.
    pub fn scoring_time(&self) -> &Histogram {
        &self.inner.scoring
    }
}
