//! `runnel scale APP STREAMLET=N...`: sets replicas in the Application; the operator
//! changes the Deployments.

use std::io::Write;

use anyhow::Context as _;
use kube::Api;
use kube::api::PostParams;
use runnel_application::Problem;
use runnel_operator::Application;

use super::configure::deployed_configuration;
use super::deploy::{idle_warning, parse_scale};
use super::{application, connect};
use crate::Outcome;
use crate::args::ScaleArgs;

pub(crate) async fn run(args: &ScaleArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let apps: Api<Application> = Api::namespaced(client.clone(), &namespace);
    // A replace with the resourceVersion read: a concurrent change is a conflict, retried.
    for _ in 0..5 {
        let mut app = application(&client, &namespace, &args.app).await?;
        let mut effective = app.spec.defaults.clone();
        effective.overlay(&deployed_configuration(&client, &app).await?);
        let mut problems: Vec<Problem> = Vec::new();
        let mut lines = Vec::new();
        for assignment in &args.replicas {
            match parse_scale(assignment, &app.spec) {
                Ok((instance, replicas)) => {
                    let resolved = effective.resolve(&instance);
                    if let Some(autoscaling) = &resolved.autoscaling {
                        problems.push(Problem::new(
                            assignment.clone(),
                            format!(
                                "streamlet '{instance}' is autoscaled between {} and {} replicas; change that with `runnel configure {} scaling.{instance}.max-replicas=N`",
                                autoscaling.min_replicas, autoscaling.max_replicas, args.app
                            ),
                        ));
                        continue;
                    }
                    if resolved.external_scaling {
                        problems.push(Problem::new(
                            assignment.clone(),
                            format!("streamlet '{instance}' has its replicas set by another autoscaler (scaling.{instance}.external)"),
                        ));
                        continue;
                    }
                    let warning = idle_warning(&app.spec, &instance, replicas);
                    let streamlet = app
                        .spec
                        .streamlets
                        .iter_mut()
                        .find(|s| s.name == instance)
                        .expect("parse_scale checked the name");
                    lines.push(format!(
                        "  ~ {instance}: {} -> {replicas} replicas",
                        streamlet.replicas
                    ));

                    streamlet.replicas = replicas;
                    lines.extend(warning);
                }
                Err(problem) => problems.push(problem),
            }
        }
        if !problems.is_empty() {
            let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
            anyhow::bail!("nothing was scaled:\n  {}", listed.join("\n  "));
        }
        app.status = None;
        match apps.replace(&args.app, &PostParams::default(), &app).await {
            Ok(_) => {
                writeln!(out, "application '{}' in {namespace}:", args.app)?;
                for line in lines {
                    writeln!(out, "{line}")?;
                }
                if app.spec.suspended {
                    writeln!(
                        out,
                        "the application is suspended: its streamlets keep 0 replicas and get these when it resumes (`runnel resume {}`)",
                        args.app
                    )?;
                }
                return Ok(Outcome::Passed);
            }
            Err(kube::Error::Api(response)) if response.code == 409 => continue,
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("writing application {namespace}/{}", args.app));
            }
        }
    }
    anyhow::bail!(
        "application '{}' kept changing while scaling it; try again",
        args.app
    )
}
