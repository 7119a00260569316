//! `runnel operator run | manifests | image`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use runnel_operator::admission::AdmissionContext;
use runnel_operator::leader::{LEASE_NAME, LeaderConfig};
use runnel_operator::manifests::{Install, install, service_names};
use runnel_operator::webhook::WebhookTls;
use runnel_operator::{KafkaBackplanes, OperatorConfig};
use tokio_util::sync::CancellationToken;

use super::{connect, webhook_certificate};
use crate::Outcome;
use crate::args::{
    ClusterArgs, ManifestsArgs, OperatorCommand, OperatorImageArgs, OperatorRunArgs,
};

pub(crate) async fn run(
    command: OperatorCommand,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    match command {
        OperatorCommand::Run(args) => operate(&args, err).await,
        OperatorCommand::Manifests(args) => manifests(&args, out),
        OperatorCommand::Image(args) => image(&args, out),
    }
}

async fn operate(args: &OperatorRunArgs, err: &mut dyn Write) -> anyhow::Result<Outcome> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let cluster = ClusterArgs {
        namespace: args.namespace.clone(),
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    let (client, namespace) = connect(&cluster).await?;
    let mut kafka_settings = BTreeMap::new();
    for setting in &args.kafka_settings {
        // The text is never echoed: it may hold a secret.
        let (key, value) = setting
            .split_once('=')
            .context("--kafka-setting expects KEY=VALUE")?;
        kafka_settings.insert(key.trim().to_owned(), value.to_owned());
    }
    let identity = args
        .identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("runnel-operator-{}", std::process::id()));
    let version = env!("CARGO_PKG_VERSION").to_owned();
    let leader = (!args.no_leader_election).then(|| LeaderConfig {
        namespace: args
            .lease_namespace
            .clone()
            .unwrap_or_else(|| namespace.clone()),
        name: LEASE_NAME.to_owned(),
        identity: identity.clone(),
        lease_duration: Duration::from_secs(15),
        version: version.clone(),
    });
    let config = OperatorConfig {
        namespace: (!args.all_namespaces).then(|| namespace.clone()),
        default_bootstrap_servers: args.kafka.clone(),
        kafka_settings,
        leader,
        identity: identity.clone(),
        version,
    };
    writeln!(
        err,
        "runnel operator {} as {identity}, managing {}",
        env!("CARGO_PKG_VERSION"),
        if args.all_namespaces {
            "every namespace".to_owned()
        } else {
            format!("namespace {namespace}")
        }
    )?;
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("listening for SIGTERM");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        stopping.cancel();
    });
    if let Some(address) = &args.webhook_listen {
        let tls = WebhookTls {
            certificate: args
                .webhook_certificate
                .clone()
                .context("--webhook-certificate")?,
            key: args.webhook_key.clone().context("--webhook-key")?,
        };
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening for the admission webhook on {address}"))?;
        writeln!(
            err,
            "admission webhook on https://{}{}",
            listener.local_addr()?,
            runnel_operator::webhook::PATH
        )?;
        let context = AdmissionContext {
            operator_version: config.version.clone(),
            default_bootstrap_servers: config.default_bootstrap_servers.clone(),
        };
        let serving = runnel_operator::webhook::serve(listener, tls, context, stop.clone());
        let operating = runnel_operator::run(
            client,
            config,
            Arc::new(KafkaBackplanes::default()),
            stop.clone(),
        );
        // Both end on SIGTERM; either failing stops the other.
        let (served, operated) = tokio::join!(
            async {
                let served = serving.await;
                stop.cancel();
                served
            },
            async {
                let operated = operating.await;
                stop.cancel();
                operated
            }
        );
        served?;
        operated?;
        return Ok(Outcome::Passed);
    }
    runnel_operator::run(client, config, Arc::new(KafkaBackplanes::default()), stop).await?;
    Ok(Outcome::Passed)
}

fn manifests(args: &ManifestsArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let webhook = if args.no_webhook {
        None
    } else {
        let mut names = service_names(&args.namespace);
        if let Some(url) = &args.webhook_url {
            let parsed: http::Uri = url
                .parse()
                .with_context(|| format!("--webhook-url '{url}' is not a URL"))?;
            anyhow::ensure!(
                parsed.scheme_str() == Some("https") && parsed.host().is_some(),
                "--webhook-url '{url}' must be https://HOST[:PORT]/PATH: the API server calls webhooks over TLS only"
            );
            let host = parsed.host().unwrap_or_default();
            names.push(
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
            );
        }
        Some(
            webhook_certificate::webhook(names, args.webhook_url.clone())
                .context("making the webhook's certificates")?,
        )
    };
    let objects = install(&Install {
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        kafka: args.kafka.clone(),
        cluster_wide: args.cluster_wide,
        webhook,
    });
    for object in objects {
        writeln!(out, "---")?;
        write!(out, "{}", runnel_application::to_yaml(&object)?)?;
    }
    Ok(Outcome::Passed)
}

fn image(args: &OperatorImageArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let executable = std::env::current_exe().context("finding this executable")?;
    let mut spec = runnel_image::ImageSpec::new(&args.image, executable);
    spec.cmd = vec!["operator".to_owned(), "run".to_owned()];
    spec.labels.insert(
        "org.opencontainers.image.title".to_owned(),
        "runnel-operator".to_owned(),
    );
    spec.labels.insert(
        "org.opencontainers.image.version".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    let image = spec.build()?;
    let layout = args.output.join("image");
    image.write_layout(&layout)?;
    let docker = args.output.join("runnel-operator.docker.tar");
    image.write_docker_archive(&docker)?;
    writeln!(
        out,
        "built image {} ({})",
        args.image, image.manifest_digest
    )?;
    writeln!(
        out,
        "  {} (OCI image layout, tag {})",
        layout.display(),
        image.tag
    )?;
    writeln!(out, "  {} (docker-archive)", docker.display())?;
    writeln!(
        out,
        "push it: skopeo copy oci:{}:{} docker://{}",
        layout.display(),
        image.tag,
        args.image
    )?;
    Ok(Outcome::Passed)
}
