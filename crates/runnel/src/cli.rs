//! The command line every app binary understands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The command line of a Runnel app.
#[derive(Debug, Parser)]
#[command(
    about = "A Runnel streaming application",
    long_about = "A Runnel streaming application: streamlets wired by a blueprint.\n\nRun the whole graph on this machine with `run`; check the wiring first with `verify`."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the app descriptor (every streamlet type with ports, schemas and parameters) as JSON.
    Describe(DescribeArgs),
    /// Check a blueprint against this app's streamlets; report every problem with its location.
    Verify(VerifyArgs),
    /// Run every streamlet of the blueprint on this machine.
    Run(RunArgs),
    /// Run one streamlet instance of the blueprint (one process per instance, as in a pod).
    RunStreamlet {
        /// The instance name from the blueprint.
        instance: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Show the status of a running app (streamlets, rates, lag, topics) from its admin endpoint.
    Status(runnel_status::StatusArgs),
    /// Read the keyed state of a running streamlet: `state get INSTANCE KEY` prints every
    /// state the key has and its pending timers as JSON, from the process holding the key's
    /// partition.
    #[command(subcommand)]
    State(runnel_status::StateCommand),
    #[command(flatten)]
    Tools(runnel_tools::ToolCommand),
    /// Run a SQL query over the app's topics, each a table named as its topic: over the
    /// records there now (then every window fires), or with --follow over new ones too.
    Sql(SqlArgs),
    /// Write what a Kubernetes cluster needs to run this app, without Docker: an OCI image
    /// (a layout directory and docker-archive and oci-archive tarballs) and the Application
    /// resource for `runnel deploy`.
    Build(BuildArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SqlArgs {
    /// The query, as in `SELECT auction, price FROM bids WHERE price > 1000`; a topic whose
    /// name is not a plain identifier is quoted: `FROM "q1-results"`.
    pub(crate) query: String,
    /// Keep reading new records and print results as they come, until interrupted.
    #[arg(long)]
    pub(crate) follow: bool,
    /// Print the changes of a query whose results update (an aggregate without a window,
    /// say), each with its kind (+I, -U, +U, -D) in a first column, `op`, rather than the
    /// rows they leave; `--follow` always prints the changes.
    #[arg(long)]
    pub(crate) changelog: bool,
    /// How results are printed.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ResultFormat,
    #[command(flatten)]
    pub(crate) source: runnel_tools::SourceArgs,
}

/// How `sql` prints results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ResultFormat {
    /// A table with a header, aligned.
    Table,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The blueprint file.
    #[arg(default_value = "blueprint.toml")]
    pub(crate) blueprint: PathBuf,
    /// The image reference the cluster pulls, registry/name:tag; default <app>:<version>.
    #[arg(long, value_name = "REFERENCE")]
    pub(crate) image: Option<String>,
    /// The app's version; default: the version the app declares (App::version), else 0.0.0.
    #[arg(long = "app-version", value_name = "VERSION")]
    pub(crate) version: Option<String>,
    /// Where to write the image and the Application.
    #[arg(long, value_name = "DIR", default_value = "runnel-build")]
    pub(crate) output: PathBuf,
    /// Configuration the Application carries as defaults (docs/kubernetes.md has the
    /// format); repeatable, later files win.
    #[arg(long = "conf", value_name = "FILE")]
    pub(crate) conf: Vec<PathBuf>,
    /// A configuration default as key=value, over the files (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) sets: Vec<String>,
    /// The Kafka bootstrap servers the app uses on the cluster; default: the operator's.
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// The requirements file (pip's format, hashes allowed) of the Python streamlets'
    /// packages; default: requirements.txt beside the blueprint, when there is one.
    #[arg(long = "python-requirements", value_name = "FILE")]
    pub(crate) python_requirements: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct DescribeArgs {
    /// Also describe the SQL streamlets this blueprint declares (each as the type
    /// `sql:<instance>`), planned against the schemas of the topics they read.
    #[arg(long, value_name = "BLUEPRINT")]
    pub(crate) blueprint: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The blueprint file.
    #[arg(default_value = "blueprint.toml")]
    pub(crate) blueprint: PathBuf,
    /// How to print problems.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub(crate) format: ReportFormat,
    /// Fail on warnings too.
    #[arg(long)]
    pub(crate) deny_warnings: bool,
    /// Also check the schemas against those kept for the topics in this embedded log's data
    /// directory: consumers must read every schema records were written with, producers
    /// must keep each topic's compatibility rule.
    #[arg(long, value_name = "DATA_DIR", conflicts_with = "kafka")]
    pub(crate) against: Option<PathBuf>,
    /// Also check the schemas against those a schema registry keeps for the topics on this
    /// Kafka cluster (`schema.registry.url` in `--kafka-setting` or the config file).
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// A Kafka client or schema registry setting (repeatable), with `--kafka`.
    #[arg(long = "kafka-setting", value_name = "KEY=VALUE", requires = "kafka")]
    pub(crate) kafka_settings: Vec<String>,
    /// The config file whose `[kafka]` table holds settings; default: local.toml beside the
    /// blueprint, if present.
    #[arg(long, value_name = "FILE", requires = "kafka")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// Messages with the offending source line, as rustc prints them.
    Human,
    /// A JSON list of {code, severity, message, file, line, column, facts, help}
    /// (docs/diagnostics.schema.json).
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The blueprint file.
    #[arg(default_value = "blueprint.toml")]
    pub(crate) blueprint: PathBuf,
    /// Parameter values ([streamlets.<instance>] tables) and Kafka settings ([kafka]);
    /// repeatable, later files win key by key; default: local.toml beside the blueprint, if
    /// present.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Vec<PathBuf>,
    /// Set a parameter, overriding the config file (repeatable).
    #[arg(long = "set", value_name = "INSTANCE.KEY=VALUE")]
    pub(crate) sets: Vec<String>,
    /// Run on a Kafka cluster instead of the embedded log: its bootstrap servers,
    /// host:port[,host:port...]. Needs the `kafka` feature of the runnel crate.
    #[arg(long, value_name = "BOOTSTRAP")]
    pub(crate) kafka: Option<String>,
    /// A Kafka client setting with librdkafka's name, such as security.protocol=SASL_SSL;
    /// wins over the config file's [kafka] table (repeatable).
    #[arg(long = "kafka-setting", value_name = "KEY=VALUE")]
    pub(crate) kafka_settings: Vec<String>,
    /// This process's stable name among the processes running the same instance (a pod
    /// ordinal, say), for the transactional ids of exactly-once streamlets; default: 0 for
    /// `run`, the process id for `run-streamlet`.
    #[arg(long, value_name = "NAME")]
    pub(crate) replica: Option<String>,
    /// Where the embedded log keeps its files; default: .runnel beside the blueprint.
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// When the embedded log syncs to disk: `always` (acknowledged means durable), `never`
    /// (the OS decides), or a duration such as `100ms` (at most that long after a write).
    #[arg(long, default_value = "always", value_parser = parse_fsync)]
    pub(crate) fsync: Fsync,
    /// How progress is shown: a live table on a terminal (`auto`), `plain` log lines, or `off`.
    #[arg(long, value_enum, default_value_t = View::Auto)]
    pub(crate) view: View,
    /// How often `plain` status lines are printed.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub(crate) status_every: Duration,
    /// Where the admin endpoint (web view, /metrics, /health, /api/status) listens, or `off`;
    /// default 127.0.0.1:4040, or a free port when that one is taken.
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) admin: Option<String>,
    /// How often committed input offsets are written.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub(crate) commit_interval: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum View {
    /// A live table on a terminal, plain lines otherwise.
    Auto,
    /// Plain status lines every few seconds.
    Plain,
    /// Only the streamlets' own logs.
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fsync {
    Always,
    Never,
    Every(Duration),
}

fn parse_fsync(text: &str) -> Result<Fsync, String> {
    match text {
        "always" => Ok(Fsync::Always),
        "never" => Ok(Fsync::Never),
        other => parse_duration(other)
            .map(Fsync::Every)
            .map_err(|_| format!("'{other}' is not always, never, or a duration such as 100ms")),
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|error| format!("'{text}' is not a duration: {error}"))
}
