//! The Kubernetes commands: connecting, and what they share (reading an Application,
//! asking which operator runs, printing tables, JSON or YAML).

mod configure;
mod deploy;
mod list;
mod operator;
mod scale;
mod state;
mod status;
mod suspend;
mod undeploy;
mod version;
mod webhook_certificate;

use std::io::Write;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use runnel_operator::Application;
use runnel_operator::leader::{LEASE_NAME, PROTOCOL_ANNOTATION, VERSION_ANNOTATION};

use crate::Outcome;
use crate::args::{ClusterArgs, Command, Output};

/// The field manager of the CLI's server-side applies.
pub(crate) const FIELD_MANAGER: &str = "runnel-cli";

/// Runs a Kubernetes command on a Tokio runtime of its own.
pub(crate) fn run(
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the Tokio runtime")?;
    runtime.block_on(async move {
        match command {
            Command::Crd(args) => {
                print(out, args.output, &runnel_operator::crd())?;
                Ok(Outcome::Passed)
            }
            Command::Operator(command) => operator::run(command, out, err).await,
            Command::Deploy(args) => deploy::run(&args, out, err).await,
            Command::Undeploy(args) => undeploy::run(&args, out).await,
            Command::List(args) => list::run(&args, out).await,
            Command::Status(args) => status::run(&args, out).await,
            Command::State(crate::args::StateCommand::Get(args)) => {
                state::run(&args, out, err).await
            }
            Command::Scale(args) => scale::run(&args, out).await,
            Command::Suspend(args) => suspend::run(&args, true, out, err).await,
            Command::Resume(args) => suspend::run(&args, false, out, err).await,
            Command::Configure(args) => configure::run(&args, out, err).await,
            Command::Configuration(args) => configure::show(&args, out).await,
            Command::Version(args) => version::run(&args, out, err).await,
            Command::Verify(_) | Command::Graph(_) | Command::New(_) | Command::Tools(_) => {
                unreachable!("not a cluster command")
            }
        }
    })
}

/// A client of the cluster the arguments name, and the namespace to use.
pub(crate) async fn connect(args: &ClusterArgs) -> anyhow::Result<(Client, String)> {
    let (config, namespace) = cluster_config(args).await?;
    let client = Client::try_from(config).context("making a Kubernetes client")?;
    Ok((client, namespace))
}

/// The client configuration of the cluster the arguments name, and the namespace to use.
pub(crate) async fn cluster_config(args: &ClusterArgs) -> anyhow::Result<(Config, String)> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        cluster: None,
        user: None,
    };
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("using kubeconfig {}", path.display()))?
        }
        None => match Config::from_kubeconfig(&options).await {
            Ok(config) => config,
            Err(from_file) => Config::incluster().map_err(|_| from_file).context(
                "finding the cluster ($KUBECONFIG, ~/.kube/config, or a pod's service account)",
            )?,
        },
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    Ok((config, namespace))
}

/// The Application `name`, or an error saying it is not deployed there.
pub(crate) async fn application(
    client: &Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Application> {
    let apps: Api<Application> = Api::namespaced(client.clone(), namespace);
    apps.get_opt(name)
        .await
        .with_context(|| format!("reading application {namespace}/{name}"))?
        .with_context(|| format!("application '{name}' is not deployed in namespace {namespace}"))
}

/// The operator the lease in `namespace` names: version and protocol version.
pub(crate) async fn operator_version(
    client: &Client,
    namespace: &str,
) -> anyhow::Result<Option<(String, u32)>> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let Some(lease) = leases
        .get_opt(LEASE_NAME)
        .await
        .with_context(|| format!("reading the operator's lease {namespace}/{LEASE_NAME}"))?
    else {
        return Ok(None);
    };
    let annotations = lease.metadata.annotations.unwrap_or_default();
    let version = annotations
        .get(VERSION_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let protocol = annotations
        .get(PROTOCOL_ANNOTATION)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Ok(Some((version, protocol)))
}

/// What to do about the operator's protocol: `None` when it matches (or no operator is
/// found, which `warn` says), else the message naming what to upgrade.
pub(crate) fn protocol_mismatch(operator: Option<&(String, u32)>) -> Option<String> {
    let (version, protocol) = operator?;
    let ours = runnel_application::PROTOCOL_VERSION;
    let client = env!("CARGO_PKG_VERSION");
    if *protocol == ours {
        return None;
    }
    let upgrade = if *protocol < ours {
        format!("upgrade the operator to runnel {client} (or use runnel {version} here)")
    } else {
        format!("upgrade this runnel to {version} (the operator's version)")
    };
    Some(format!(
        "this runnel ({client}) speaks protocol {ours}, the operator (runnel {version}) speaks protocol {protocol}: {upgrade}"
    ))
}

/// Prints `value` as JSON or YAML (a table is the caller's business).
pub(crate) fn print<T: serde::Serialize>(
    out: &mut dyn Write,
    output: Output,
    value: &T,
) -> anyhow::Result<()> {
    match output {
        Output::Json => writeln!(out, "{}", serde_json::to_string_pretty(value)?)?,
        Output::Yaml | Output::Table => write!(out, "{}", runnel_application::to_yaml(value)?)?,
    }
    Ok(())
}

/// `text` for one cell of a table: its first line, and when it has more, where to read the
/// rest (`more`: the command that prints it whole).
pub(crate) fn first_line(text: &str, more: &str) -> String {
    let text = text.trim();
    match text.split_once('\n') {
        Some((first, _)) => format!("{} (more: {more})", first.trim_end()),
        None => text.to_owned(),
    }
}

/// A left-aligned table: a header row and rows, columns two spaces apart.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (index, cell) in row.iter().enumerate() {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            if index + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  ", width = widths[index]));
            }
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut text = line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        text.push_str(&line(row.clone()));
    }
    text
}
