//! Leader election with a `coordination.k8s.io/v1` Lease, so that two replicas of the
//! operator can run and only one reconciles. The lease also says which operator version
//! and protocol run, for `runnel version`.
//!
//! Whoever holds the lease renews it every third of its duration with a replace carrying
//! the lease's resourceVersion, so two replicas never both win; another replica takes it
//! over once it has not been renewed for a whole duration. A leader that cannot renew
//! steps down (the caller stops reconciling) before its lease can expire.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use crate::Error;

/// The annotation on the lease with the operator's version.
pub const VERSION_ANNOTATION: &str = "runnel.dev/operator-version";
/// The annotation on the lease with the operator's protocol version.
pub const PROTOCOL_ANNOTATION: &str = "runnel.dev/protocol-version";
/// The lease's default name.
pub const LEASE_NAME: &str = "runnel-operator";

/// How to elect.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// The lease's namespace.
    pub namespace: String,
    /// The lease's name ([`LEASE_NAME`]).
    pub name: String,
    /// This replica's name (its pod name).
    pub identity: String,
    /// How long a lease lasts without renewal.
    pub lease_duration: Duration,
    /// The operator's version, written on the lease.
    pub version: String,
}

/// The lease held: renewed in the background until `stop` (given to [`lead`]) is
/// cancelled, which releases it.
pub(crate) struct Leadership {
    /// Cancelled if renewing fails for longer than two thirds of the lease, or another
    /// replica took it: the caller then stops reconciling.
    pub(crate) lost: CancellationToken,
    /// The renewing task; it ends once the lease is released (or lost). Await it after
    /// cancelling `stop`, so that a process exits only once the lease is free for the next
    /// replica.
    pub(crate) renewing: tokio::task::JoinHandle<()>,
}

/// Waits until this replica holds the lease, then keeps renewing it in the background
/// (see [`Leadership`]); cancelling `stop` releases it.
pub(crate) async fn lead(
    client: &Client,
    config: &LeaderConfig,
    stop: CancellationToken,
) -> Result<Leadership, Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &config.namespace);
    let retry = config.lease_duration / 3;
    loop {
        if stop.is_cancelled() {
            return Ok(Leadership {
                lost: stop.child_token(),
                renewing: tokio::spawn(async {}),
            });
        }
        if try_acquire(&api, config).await? {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            () = stop.cancelled() => {}
        }
    }
    tracing::info!(
        "leading as {} with lease {}/{}",
        config.identity,
        config.namespace,
        config.name
    );
    let lost = CancellationToken::new();
    let (renewing, config, stopping) = (lost.clone(), config.clone(), stop.clone());
    let task = tokio::spawn(async move {
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(retry) => {}
                () = stopping.cancelled() => {
                    let _ = release(&api, &config).await;
                    return;
                }
            }
            match try_acquire(&api, &config).await {
                Ok(true) => last = tokio::time::Instant::now(),
                Ok(false) => {
                    // Stop writing first; the log line marks the moment for tests too.
                    renewing.cancel();
                    tracing::error!(
                        identity = %config.identity,
                        "another replica took the leader lease over from {}",
                        config.identity
                    );
                    return;
                }
                Err(error) => {
                    tracing::warn!("renewing the leader lease failed: {error}");
                    if last.elapsed() > config.lease_duration * 2 / 3 {
                        renewing.cancel();
                        return;
                    }
                }
            }
        }
    });
    Ok(Leadership {
        lost,
        renewing: task,
    })
}

/// Takes or renews the lease when it is free, expired or ours; `false` when another
/// replica holds it (or won the race).
async fn try_acquire(api: &Api<Lease>, config: &LeaderConfig) -> Result<bool, Error> {
    let failed = |action: &'static str| {
        move |source| Error::Lease {
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            action,
            source,
        }
    };
    let now = Timestamp::now();
    let existing = api.get_opt(&config.name).await.map_err(failed("read"))?;
    let seconds = config.lease_duration.as_secs().max(1) as i32;
    let Some(mut lease) = existing else {
        let lease = Lease {
            metadata: metadata(config),
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(response)) if response.code == 409 => Ok(false),
            Err(source) => Err(failed("created")(source)),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let expired = spec.renew_time.as_ref().is_none_or(|renewed| {
        let duration = i64::from(spec.lease_duration_seconds.unwrap_or(seconds));
        renewed.0.as_second() + duration < now.as_second()
    });
    let ours = holder == config.identity;
    if !ours && !holder.is_empty() && !expired {
        return Ok(false);
    }
    let mut renewed = spec.clone();
    renewed.holder_identity = Some(config.identity.clone());
    renewed.lease_duration_seconds = Some(seconds);
    renewed.renew_time = Some(MicroTime(now));
    if !ours {
        renewed.acquire_time = Some(MicroTime(now));
        renewed.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    lease.spec = Some(renewed);
    let mut annotations = lease.metadata.annotations.take().unwrap_or_default();
    annotations.extend(metadata(config).annotations.unwrap_or_default());
    lease.metadata.annotations = Some(annotations);
    // The resourceVersion read above makes this replace fail if anyone wrote meanwhile.
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(response)) if response.code == 409 => Ok(false),
        Err(source) => Err(failed("renewed")(source)),
    }
}

/// Gives the lease up so that another replica takes over at once.
async fn release(api: &Api<Lease>, config: &LeaderConfig) -> Result<(), Error> {
    let Some(mut lease) = api
        .get_opt(&config.name)
        .await
        .map_err(|source| Error::Lease {
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            action: "read",
            source,
        })?
    else {
        return Ok(());
    };
    if let Some(spec) = lease.spec.as_mut()
        && spec.holder_identity.as_deref() == Some(config.identity.as_str())
    {
        spec.holder_identity = None;
        spec.renew_time = None;
        api.replace(&config.name, &PostParams::default(), &lease)
            .await
            .map_err(|source| Error::Lease {
                namespace: config.namespace.clone(),
                name: config.name.clone(),
                action: "released",
                source,
            })?;
    }
    Ok(())
}

fn metadata(config: &LeaderConfig) -> ObjectMeta {
    ObjectMeta {
        name: Some(config.name.clone()),
        namespace: Some(config.namespace.clone()),
        annotations: Some(
            [
                (VERSION_ANNOTATION.to_owned(), config.version.clone()),
                (
                    PROTOCOL_ANNOTATION.to_owned(),
                    runnel_application::PROTOCOL_VERSION.to_string(),
                ),
            ]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}
