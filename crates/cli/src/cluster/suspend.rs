//! `runnel suspend APP` and `runnel resume APP`: set `spec.suspended` in the Application;
//! the operator keeps every object and scales every streamlet to 0 replicas, or back to
//! the spec's. Both wait until the operator's status says it has done so.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kube::Api;
use kube::api::PostParams;
use runnel_application::{Configuration, Phase};
use runnel_operator::Application;

use super::configure::deployed_configuration;
use super::{application, connect};
use crate::Outcome;
use crate::args::SuspendArgs;

/// Suspends the app (`suspend` true) or resumes it.
pub(crate) async fn run(
    args: &SuspendArgs,
    suspend: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let apps: Api<Application> = Api::namespaced(client.clone(), &namespace);
    let name = &args.app;
    let (done, doing) = if suspend {
        ("suspended", "suspending")
    } else {
        ("running", "resuming")
    };
    // A replace with the resourceVersion read, as `scale` does: a concurrent change is a
    // conflict, retried.
    for _ in 0..5 {
        let mut app = application(&client, &namespace, name).await?;
        if app.spec.suspended == suspend {
            writeln!(
                out,
                "application '{name}' in {namespace} is already {done}; nothing was written"
            )?;
            return Ok(Outcome::Passed);
        }
        let mut effective = app.spec.defaults.clone();
        effective.overlay(&deployed_configuration(&client, &app).await?);
        app.spec.suspended = suspend;
        app.status = None;
        let written = match apps.replace(name, &PostParams::default(), &app).await {
            Ok(written) => written,
            Err(kube::Error::Api(response)) if response.code == 409 => continue,
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("writing application {namespace}/{name}"));
            }
        };
        anyhow::ensure!(
            written.spec.suspended == suspend,
            "the API server dropped spec.suspended from application {namespace}/{name}: the Application CRD installed there predates suspend; install this runnel's (`runnel crd | kubectl apply -f -`) and upgrade the operator"
        );
        writeln!(out, "application '{name}' in {namespace}: {doing}")?;
        for line in replica_lines(&written, &effective, suspend) {
            writeln!(out, "{line}")?;
        }
        if args.no_wait {
            return Ok(Outcome::Passed);
        }
        let generation = written.metadata.generation.unwrap_or_default();
        return wait(
            &apps,
            name,
            &namespace,
            generation,
            suspend,
            args.timeout,
            out,
            err,
        )
        .await;
    }
    anyhow::bail!("application '{name}' kept changing while {doing} it; try again")
}

/// `  ~ STREAMLET: FROM -> TO replicas` for every streamlet, saying who sets the replicas
/// of autoscaled ones once resumed.
fn replica_lines(app: &Application, configuration: &Configuration, suspend: bool) -> Vec<String> {
    app.spec
        .streamlets
        .iter()
        .map(|streamlet| {
            let resolved = configuration.resolve(&streamlet.name);
            let running = if resolved.external_scaling {
                "its autoscaler's replicas (scaling external)".to_owned()
            } else if let Some(autoscaling) = &resolved.autoscaling {
                format!(
                    "{} replicas, then autoscaled between {} and {}",
                    streamlet.replicas, autoscaling.min_replicas, autoscaling.max_replicas
                )
            } else {
                format!("{} replicas", streamlet.replicas)
            };
            if suspend {
                format!("  ~ {}: {running} -> 0 replicas", streamlet.name)
            } else {
                format!("  ~ {}: 0 -> {running}", streamlet.name)
            }
        })
        .collect()
}

/// Waits until the operator's status describes `generation` (or a later one) and says
/// suspended (or no longer suspended); a Failed status ends the wait with its message.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; a struct for it would only rename the arguments"
)]
async fn wait(
    apps: &Api<Application>,
    name: &str,
    namespace: &str,
    generation: i64,
    suspend: bool,
    timeout: Duration,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + timeout;
    loop {
        let app = apps
            .get_opt(name)
            .await
            .with_context(|| format!("reading application {namespace}/{name}"))?
            .with_context(|| format!("application '{name}' was deleted meanwhile"))?;
        if let Some(status) = app
            .status
            .filter(|status| status.observed_generation.unwrap_or_default() >= generation)
        {
            match status.phase {
                Phase::Failed => {
                    writeln!(
                        err,
                        "error: the operator cannot carry out application '{name}': {}",
                        status.message
                    )?;
                    return Ok(Outcome::Failed);
                }
                Phase::Suspended if suspend => {
                    writeln!(out, "{}", status.message)?;
                    writeln!(
                        out,
                        "its objects, configuration, topics and consumer offsets stay; `runnel resume {name}` runs it again"
                    )?;
                    return Ok(Outcome::Passed);
                }
                phase if !suspend && phase != Phase::Suspended => {
                    writeln!(out, "resumed: {phase}, {}", status.message)?;
                    return Ok(Outcome::Passed);
                }
                _ => {}
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the operator did not report application '{name}' {} within {timeout:?}; is a runnel operator that knows suspend running? (`runnel version -n {namespace}`)",
            if suspend { "suspended" } else { "resumed" }
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
