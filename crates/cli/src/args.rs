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
    /// Show the status of a running app (streamlets, rates, lag, topics) from its admin
    /// endpoint.
    ///
    /// Exits 1 when no process answers, or one of another app than `--app` does.
    Status(StatusCommand),
    /// Create a new app: one streamlet with its test, main, a blueprint and a README.
    New(NewArgs),
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

/// `runnel status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusCommand {
    /// The app whose status to show: found at the admin address it recorded when it
    /// started, and checked to be that app.
    #[arg(long)]
    pub(crate) app: Option<String>,
    #[command(flatten)]
    pub(crate) status: runnel_status::StatusArgs,
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Args::command().debug_assert();
    }
}
