//! Publishing Events about Applications (`events.k8s.io/v1`), one per distinct message: a
//! message repeated within six minutes becomes a series (count and last time) of the
//! first, as `kubectl describe` shows them.
//!
//! kube's `Recorder` folds events with the same reason into one series and keeps the first
//! note, which would hide, say, the second streamlet an `Updated` event names; so the key
//! here includes the note.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::{Event as KubeEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource as _, ResourceExt as _};
use tokio_util::sync::CancellationToken;

use crate::Application;
use crate::plan::Event;

/// How long a repeated message counts as the same series.
const SERIES: Duration = Duration::from_secs(360);

/// Publishes Events as one replica of the operator.
pub(crate) struct Events {
    client: Client,
    instance: String,
    /// Cancelled once this replica stops leading: it publishes nothing from then on.
    deposed: CancellationToken,
    sent: Mutex<HashMap<String, (String, i32, Instant)>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("instance", &self.instance)
            .finish()
    }
}

impl Events {
    pub(crate) fn new(client: Client, instance: &str, deposed: CancellationToken) -> Events {
        Events {
            client,
            instance: instance.to_owned(),
            deposed,
            sent: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes `event` about `app`; a failure is logged, never fatal.
    pub(crate) async fn publish(&self, app: &Application, event: &Event) {
        if self.deposed.is_cancelled() {
            tracing::debug!(
                "not publishing the event {} about application {}: no longer leading",
                event.reason,
                app.name()
            );
            return;
        }
        if let Err(error) = self.try_publish(app, event).await {
            tracing::warn!(
                "publishing the event {} about application {} failed: {error}",
                event.reason,
                app.name()
            );
        }
    }

    async fn try_publish(&self, app: &Application, event: &Event) -> Result<(), kube::Error> {
        let namespace = app.namespace().unwrap_or_default();
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
        let note: String = event.note.chars().take(1000).collect();
        let key = format!(
            "{}/{}/{}/{note}",
            app.uid().unwrap_or_default(),
            event.reason,
            event.warning
        );
        let now = Timestamp::now();
        let repeat = {
            let mut sent = self.sent.lock().expect("not poisoned");
            sent.retain(|_, (_, _, at)| at.elapsed() < SERIES);
            sent.get_mut(&key).map(|(name, count, at)| {
                *count += 1;
                *at = Instant::now();
                (name.clone(), *count)
            })
        };
        if let Some((name, count)) = repeat {
            let series = serde_json::json!({"series": EventSeries {
                count,
                last_observed_time: MicroTime(now),
            }});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                .await?;
            return Ok(());
        }
        let name = format!("{}.{:x}", app.name(), now.as_nanosecond());
        let object = KubeEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: Some(note),
            regarding: Some(app.object_ref(&())),
            reporting_controller: Some("runnel.dev/operator".to_owned()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(if event.warning { "Warning" } else { "Normal" }.to_owned()),
            ..KubeEvent::default()
        };
        api.create(&PostParams::default(), &object).await?;
        self.sent
            .lock()
            .expect("not poisoned")
            .insert(key, (name, 1, Instant::now()));
        Ok(())
    }
}
