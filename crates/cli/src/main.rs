//! `runnel`: the Runnel command line.
//!
//! ```text
//! runnel verify --descriptor app.json [--format human|json] [--deny-warnings] BLUEPRINT
//! runnel graph [--descriptor app.json] [--format text|dot|mermaid] BLUEPRINT
//! runnel status [--app NAME] [--admin 127.0.0.1:4040] [--watch] [-o table|json|yaml]
//! runnel new NAME [--path runnel/crates/runnel | --git URL]
//! runnel topics | tail TOPIC | produce TOPIC | dead-letters | groups | reset-offsets GROUP
//!        [--blueprint FILE] [--descriptor app.json] [--data-dir DIR | --kafka BOOTSTRAP]
//! ```
//!
//! Exit codes: 0 when all is well, 1 when the blueprint has errors (or warnings under
//! `--deny-warnings`) or `status` reached no process (or the wrong app), 2 for usage
//! errors such as a file that cannot be read.
//!
//! Where to begin: `args.rs` declares the commands; each command has its own file. The
//! checking itself is `runnel_blueprint::verify`; this binary only reads files and prints.

mod args;
mod graph;
mod new;
mod verify;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Args, Command};

/// What a command concluded, mapped to the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Exit 0.
    Passed,
    /// Exit 1: the blueprint has problems.
    Failed,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Verify(command) => verify::run(&command),
        Command::Graph(command) => graph::run(&command),
        Command::Status(command) => return command.status.main(command.app.as_deref()),
        Command::New(args) => new::run(&args),
        Command::Tools(command) => tools(&command),
    };
    match result {
        Ok(Outcome::Passed) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs a topic or offset tool (on a runtime of its own: the tools are async).
fn tools(command: &runnel_tools::ToolCommand) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(runnel_tools::run(command, None, None))?;
    Ok(Outcome::Passed)
}

/// Reads a text file, saying which one failed.
fn read(path: &std::path::Path, what: &str) -> anyhow::Result<String> {
    use anyhow::Context as _;
    std::fs::read_to_string(path).with_context(|| format!("reading {what} {}", path.display()))
}

/// Reads and parses an app descriptor.
fn read_descriptor(
    path: &std::path::Path,
) -> anyhow::Result<runnel_blueprint::descriptor::AppDescriptor> {
    use anyhow::Context as _;
    let text = read(path, "descriptor")?;
    runnel_blueprint::descriptor::AppDescriptor::from_json(&text)
        .with_context(|| format!("reading descriptor {}", path.display()))
}
