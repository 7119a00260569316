//! The command line: what users write, parsed by clap.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Runnel: streaming apps of streamlets wired by a blueprint.
#[derive(Debug, Parser)]
#[command(name = "runnel", version, about)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Check a blueprint against an app descriptor and report every problem.
    ///
    /// Exits 0 when the blueprint is valid, 1 when it has errors (or warnings with
    /// --deny-warnings), 2 when a file cannot be read.
    Verify(VerifyArgs),
    /// Draw the graph of a blueprint: streamlets and the topics between them.
    ///
    /// Without --descriptor only what the blueprint alone says is checked. A blueprint with
    /// errors is not drawn: its report is printed and the command exits 1.
    Graph(GraphArgs),
    /// Show the status of an app: deployed on Kubernetes (`status APP`: streamlets,
    /// replicas ready/desired, restarts, last error, lag), or running locally (`status`,
    /// from its admin endpoint).
    ///
    /// Exits 1 when the local endpoint does not answer (as an app's own `status` does), 2
    /// when the cluster cannot be read.
    Status(AppStatusArgs),
    /// Read the keyed state of a running streamlet: `state get INSTANCE KEY` prints, as
    /// JSON, every state the key has and its pending timers, answered by the process
    /// holding the key's partition: among the --admin endpoints given, or with --app among
    /// the app's pods on Kubernetes.
    ///
    /// Exits 1 when no process asked holds the key's partition, or none answered; 2 when
    /// the cluster cannot be read.
    #[command(subcommand)]
    State(StateCommand),
    /// Create a new app: one streamlet with its test, main, a blueprint and a README.
    New(NewArgs),
    /// Print the Application CustomResourceDefinition.
    Crd(CrdArgs),
    /// Run the operator, print what installs it, or build its image.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// Deploy an app (the YAML `app build` wrote) to Kubernetes, or update it.
    ///
    /// Verifies the blueprint and checks every configuration value against the descriptor
    /// before anything is written, shows what will change, then writes the Application.
    /// Configuration set earlier (by deploy or configure) stays unless overridden here.
    Deploy(DeployArgs),
    /// Delete an app from Kubernetes: everything the operator created for it (never its
    /// topics), waiting until its pods are gone.
    Undeploy(UndeployArgs),
    /// List the apps deployed in a namespace.
    List(ListArgs),
    /// Set the replicas of streamlets: `scale APP STREAMLET=N...`.
    Scale(ScaleArgs),
    /// Suspend an app: the operator keeps its objects, topics and offsets and scales every
    /// streamlet to 0 replicas (autoscaled ones too) until `resume`.
    ///
    /// Waits until the operator reports the app Suspended (exit 1 when it reports the app
    /// Failed).
    Suspend(SuspendArgs),
    /// Resume a suspended app: every streamlet runs its replicas again (autoscaled ones
    /// from the spec's replicas, externally scaled ones as their autoscaler says).
    ///
    /// Waits until the operator reports the app no longer suspended (exit 1 when it
    /// reports the app Failed).
    Resume(SuspendArgs),
    /// Change the configuration of a deployed app; only the streamlets it affects restart.
    Configure(ConfigureArgs),
    /// Print the configuration of a deployed app (secret values masked).
    Configuration(ConfigurationArgs),
    /// Print the versions of this client and of the operator, with their protocol versions.
    Version(VersionArgs),
    #[command(flatten)]
    Tools(runnel_tools::ToolCommand),
}

/// `runnel new`.
#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The app's name (a cargo package name and DNS label: lowercase letters, digits, '-').
    pub(crate) name: String,
    /// Where to create it; default: a directory named after the app.
    #[arg(long, value_name = "DIR")]
    pub(crate) directory: Option<std::path::PathBuf>,
    /// Depend on the runnel crate at this path (crates/runnel of a checkout); default: the
    /// checkout this binary was built from, if it is still there.
    #[arg(long, value_name = "DIR", conflicts_with = "git")]
    pub(crate) path: Option<std::path::PathBuf>,
    /// Depend on Runnel from this git repository instead.
    #[arg(long, value_name = "URL")]
    pub(crate) git: Option<String>,
}

/// Where the cluster is: kubeconfig, context and namespace from the usual places
/// (`$KUBECONFIG`, `~/.kube/config`, the context's namespace), or as given.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ClusterArgs {
    /// The namespace; default: the kubeconfig context's.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub(crate) namespace: Option<String>,
    /// The kubeconfig file; default: $KUBECONFIG, else ~/.kube/config.
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; default: the current one.
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
}

/// How cluster commands print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// Tables for people.
    Table,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// `runnel verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// The app descriptor, as printed by `app describe`.
    #[arg(long, value_name = "FILE")]
    pub(crate) descriptor: PathBuf,
    /// How to print the report.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub(crate) format: ReportFormat,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    pub(crate) deny_warnings: bool,
    /// The blueprint file.
    #[arg(value_name = "BLUEPRINT")]
    pub(crate) blueprint: PathBuf,
}

/// `runnel graph`.
#[derive(Debug, clap::Args)]
pub(crate) struct GraphArgs {
    /// The app descriptor, to check the blueprint fully before drawing it.
    #[arg(long, value_name = "FILE")]
    pub(crate) descriptor: Option<PathBuf>,
    /// How to draw the graph.
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    pub(crate) format: GraphFormat,
    /// The blueprint file.
    #[arg(value_name = "BLUEPRINT")]
    pub(crate) blueprint: PathBuf,
}

/// `runnel status`.
#[derive(Debug, clap::Args)]
pub(crate) struct AppStatusArgs {
    /// The deployed app; without it, the app running locally at --admin.
    #[arg(value_name = "APP")]
    pub(crate) app: Option<String>,
    #[command(flatten)]
    pub(crate) local: runnel_status::StatusArgs,
    /// With APP: print messages and last errors whole (the table shows their first line).
    #[arg(long, requires = "app")]
    pub(crate) details: bool,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel state ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum StateCommand {
    /// Print the keyed state of one key of a running streamlet as JSON: every state with
    /// its value and the key's pending timers, from the process holding the key's
    /// partition.
    Get(StateGet),
}

/// `runnel state get`.
#[derive(Debug, clap::Args)]
pub(crate) struct StateGet {
    #[command(flatten)]
    pub(crate) local: runnel_status::StateGetArgs,
    /// The app deployed on Kubernetes: ask the instance's pods, through the API server's
    /// pod proxy, instead of --admin endpoints.
    #[arg(long, value_name = "APP", conflicts_with = "admin")]
    pub(crate) app: Option<String>,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel crd`.
#[derive(Debug, clap::Args)]
pub(crate) struct CrdArgs {
    /// yaml or json.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Yaml)]
    pub(crate) output: Output,
}

/// `runnel operator ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum OperatorCommand {
    /// Run the operator until SIGTERM or SIGINT.
    Run(OperatorRunArgs),
    /// Print the objects that install the operator (ServiceAccount, RBAC, Deployment), a
    /// Role for people who deploy apps and the validating admission webhook (with a new
    /// certificate), as YAML; apply them after the CRD.
    Manifests(ManifestsArgs),
    /// Build an OCI image of this `runnel` binary, for the operator's Deployment.
    Image(OperatorImageArgs),
}

/// `runnel operator run`.
#[derive(Debug, clap::Args)]
pub(crate) struct OperatorRunArgs {
    /// The namespace to manage; default: the kubeconfig context's (in a pod: its own).
    #[arg(
        short = 'n',
        long,
        value_name = "NAMESPACE",
        conflicts_with = "all_namespaces"
    )]
    pub(crate) namespace: Option<String>,
    /// Manage Applications in every namespace (needs the cluster-wide RBAC).
    #[arg(long)]
    pub(crate) all_namespaces: bool,
    /// The Kafka cluster of Applications that name none, host:port[,host:port...].
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// A Kafka client setting for the operator's own clients (repeatable).
    #[arg(long = "kafka-setting", value_name = "KEY=VALUE")]
    pub(crate) kafka_settings: Vec<String>,
    /// Run without leader election (only ever one replica).
    #[arg(long)]
    pub(crate) no_leader_election: bool,
    /// The namespace of the leader lease; default: the managed namespace.
    #[arg(long, value_name = "NAMESPACE")]
    pub(crate) lease_namespace: Option<String>,
    /// This replica's name; default: $POD_NAME, else the host name.
    #[arg(long, value_name = "NAME")]
    pub(crate) identity: Option<String>,
    /// The kubeconfig file (outside a cluster); default: $KUBECONFIG, ~/.kube/config, or
    /// the pod's service account.
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
    /// Serve the validating admission webhook on this address (`0.0.0.0:8443`), over TLS
    /// with --webhook-certificate and --webhook-key.
    #[arg(long, value_name = "ADDRESS", requires_all = ["webhook_certificate", "webhook_key"])]
    pub(crate) webhook_listen: Option<String>,
    /// The webhook's certificate, PEM (`tls.crt` of the Secret `runnel-operator-webhook`).
    #[arg(long, value_name = "FILE", requires = "webhook_listen")]
    pub(crate) webhook_certificate: Option<PathBuf>,
    /// The webhook's private key, PEM (`tls.key`).
    #[arg(long, value_name = "FILE", requires = "webhook_listen")]
    pub(crate) webhook_key: Option<PathBuf>,
}

/// `runnel operator manifests`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManifestsArgs {
    /// The operator image.
    #[arg(long, value_name = "REFERENCE")]
    pub(crate) image: String,
    /// The operator's namespace.
    #[arg(short = 'n', long, value_name = "NAMESPACE", default_value = "default")]
    pub(crate) namespace: String,
    /// The Kafka cluster of Applications that name none.
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// Manage every namespace: a ClusterRole instead of a Role.
    #[arg(long)]
    pub(crate) cluster_wide: bool,
    /// Install no validating admission webhook: Applications the operator cannot run are
    /// stored, and fail in their status.
    #[arg(long)]
    pub(crate) no_webhook: bool,
    /// Where the API server calls the webhook, for an operator run outside the cluster
    /// (`https://HOST:PORT/validate`, with `runnel operator run --webhook-listen`); by
    /// default the operator's pods, through the Service `runnel-operator-webhook`.
    #[arg(long, value_name = "URL", conflicts_with = "no_webhook")]
    pub(crate) webhook_url: Option<String>,
}

/// `runnel operator image`.
#[derive(Debug, clap::Args)]
pub(crate) struct OperatorImageArgs {
    /// The image reference, registry/name:tag.
    #[arg(long, value_name = "REFERENCE")]
    pub(crate) image: String,
    /// Where to write the OCI layout and the archives.
    #[arg(long, value_name = "DIR", default_value = "runnel-operator-image")]
    pub(crate) output: PathBuf,
}

/// `runnel deploy`.
#[derive(Debug, clap::Args)]
pub(crate) struct DeployArgs {
    /// The Application YAML written by `app build`.
    #[arg(value_name = "APP.yaml")]
    pub(crate) file: PathBuf,
    /// Configuration values, KEY=VALUE (they win over every --conf file).
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) assignments: Vec<String>,
    /// Replicas of a streamlet, STREAMLET=N (repeatable).
    #[arg(long = "scale", value_name = "STREAMLET=N")]
    pub(crate) scale: Vec<String>,
    /// A configuration file (repeatable; later files win).
    #[arg(long = "conf", value_name = "FILE")]
    pub(crate) conf: Vec<PathBuf>,
    /// The Kafka bootstrap servers, over the file's and the operator's.
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// Show what would change and write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel undeploy`.
#[derive(Debug, clap::Args)]
pub(crate) struct UndeployArgs {
    /// The app.
    #[arg(value_name = "APP")]
    pub(crate) app: String,
    /// Return at once instead of waiting until everything is gone.
    #[arg(long)]
    pub(crate) no_wait: bool,
    /// How long to wait.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub(crate) timeout: std::time::Duration,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// table, json or yaml.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,
    /// Every namespace.
    #[arg(short = 'A', long)]
    pub(crate) all_namespaces: bool,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel scale`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScaleArgs {
    /// The app.
    #[arg(value_name = "APP")]
    pub(crate) app: String,
    /// STREAMLET=N, one or more.
    #[arg(value_name = "STREAMLET=N", required = true)]
    pub(crate) replicas: Vec<String>,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel suspend` and `runnel resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct SuspendArgs {
    /// The app.
    #[arg(value_name = "APP")]
    pub(crate) app: String,
    /// Return once the Application is written, without waiting for the operator.
    #[arg(long)]
    pub(crate) no_wait: bool,
    /// How long to wait for the operator.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub(crate) timeout: std::time::Duration,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel configure`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigureArgs {
    /// The app.
    #[arg(value_name = "APP")]
    pub(crate) app: String,
    /// Configuration values, KEY=VALUE (they win over every --conf file).
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) assignments: Vec<String>,
    /// A configuration file (repeatable; later files win).
    #[arg(long = "conf", value_name = "FILE")]
    pub(crate) conf: Vec<PathBuf>,
    /// Show what would change and write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel configuration`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigurationArgs {
    /// The app.
    #[arg(value_name = "APP")]
    pub(crate) app: String,
    /// table (the configuration file format), json or yaml.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `runnel version`.
#[derive(Debug, clap::Args)]
pub(crate) struct VersionArgs {
    /// Only this client's version; do not ask the cluster.
    #[arg(long)]
    pub(crate) client: bool,
    /// table, json or yaml.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// Report formats of `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// rustc-style, with the source line of each problem.
    Human,
    /// A JSON array of {code, severity, message, file, line, column, facts, help}
    /// (docs/diagnostics.schema.json).
    Json,
}

/// Graph formats of `graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GraphFormat {
    /// Indented text for the terminal.
    Text,
    /// Graphviz dot.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let value: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration such as 90s or 5m"))?;
    match unit {
        "s" | "" => Ok(std::time::Duration::from_secs(value)),
        "m" => Ok(std::time::Duration::from_secs(value * 60)),
        "h" => Ok(std::time::Duration::from_secs(value * 3600)),
        _ => Err(format!("'{text}' is not a duration such as 90s or 5m")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Args::command().debug_assert();
    }
}
