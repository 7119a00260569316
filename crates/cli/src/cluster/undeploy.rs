//! `runnel undeploy APP`: delete the Application in the foreground, so that Kubernetes'
//! garbage collector removes what the operator created (Deployments, then their pods;
//! ConfigMaps, Secrets, Services) before the Application itself goes. Topics stay.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kube::Api;
use kube::api::DeleteParams;
use runnel_operator::Application;

use super::connect;
use crate::Outcome;
use crate::args::UndeployArgs;

pub(crate) async fn run(args: &UndeployArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let apps: Api<Application> = Api::namespaced(client, &namespace);
    match apps.delete(&args.app, &DeleteParams::foreground()).await {
        Ok(_) => {}
        Err(kube::Error::Api(response)) if response.code == 404 => {
            anyhow::bail!(
                "application '{}' is not deployed in namespace {namespace}",
                args.app
            );
        }
        Err(error) => {
            return Err(error)
                .with_context(|| format!("deleting application {namespace}/{}", args.app));
        }
    }
    writeln!(
        out,
        "undeploying application '{}' from {namespace}: deleting what the operator created (topics stay)",
        args.app
    )?;
    if args.no_wait {
        return Ok(Outcome::Passed);
    }
    let deadline = Instant::now() + args.timeout;
    loop {
        let remaining = apps
            .get_opt(&args.app)
            .await
            .with_context(|| format!("reading application {namespace}/{}", args.app))?;
        if remaining.is_none() {
            writeln!(out, "application '{}' is gone", args.app)?;
            return Ok(Outcome::Passed);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "application '{}' is still being deleted after {:?}; `kubectl get pods -l runnel.dev/app={}` shows what is left",
            args.app,
            args.timeout,
            args.app
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
