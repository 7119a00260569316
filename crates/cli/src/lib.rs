//! `runnel`: the Runnel command line, and the kubectl plugin `kubectl-runnel`.
//!
//! ```text
//! runnel verify --descriptor app.json [--format human|json] [--deny-warnings] BLUEPRINT
//! runnel graph [--descriptor app.json] [--format text|dot|mermaid] BLUEPRINT
//! runnel status [APP] [--admin 127.0.0.1:4040] [--watch] [-o table|json|yaml]
//! runnel state get INSTANCE KEY [--hex] [--admin 127.0.0.1:4040]... | [--app APP -n NS]
//! runnel new NAME [--path runnel/crates/runnel | --git URL]
//! runnel topics | tail TOPIC | produce TOPIC | dead-letters | groups | reset-offsets GROUP
//!        [--blueprint FILE] [--descriptor app.json] [--data-dir DIR | --kafka BOOTSTRAP]
//! runnel crd | operator run|manifests|image | deploy APP.yaml | undeploy APP | list
//! runnel scale APP S=N... | suspend APP | resume APP | configure APP [K=V]...
//!        | configuration APP | version
//! ```
//!
//! Exit codes: 0 when all is well, 1 when the blueprint or the configuration has errors
//! (or warnings under `--deny-warnings`, or the CLI and the operator speak different
//! protocols), or a local `status` reached no process, or `state get` no process holding
//! the key's partition, or the operator reports an app `suspend` or `resume` changed
//! Failed, 2 for usage errors such as a file that
//! cannot be read or a cluster that cannot be reached.
//!
//! The binary recognises its name: called as `kubectl-runnel` (a copy or a link on the
//! PATH, which is how kubectl finds plugins), it calls itself `kubectl runnel`.
//!
//! Where to begin: `args.rs` declares the commands; each command has its own file, the
//! Kubernetes ones under `cluster/`. [`main_with_args`] is the whole program, so tests can
//! run it in-process.

mod args;
mod cluster;
mod graph;
mod new;
mod verify;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

use crate::args::{Args, Command};

/// What a command concluded, mapped to the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Exit 0.
    Passed,
    /// Exit 1: the input has problems.
    Failed,
}

/// Runs the command line `args` (the first is the program name), printing to `out` and
/// `err`; returns the exit code.
pub fn main_with_args<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let plugin = args
        .first()
        .and_then(|program| std::path::Path::new(program).file_name())
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("kubectl-runnel"));
    let mut command = Args::command();
    if plugin {
        command = command.name("kubectl runnel").bin_name("kubectl runnel");
    }
    let parsed = command
        .try_get_matches_from(args)
        .and_then(|matches| Args::from_arg_matches(&matches));
    let args = match parsed {
        Ok(args) => args,
        Err(error) => {
            let text = error.render().to_string();
            return if error.use_stderr() {
                let _ = write!(err, "{text}");
                ExitCode::from(2)
            } else {
                let _ = write!(out, "{text}");
                ExitCode::SUCCESS
            };
        }
    };
    let result = match args.command {
        Command::Verify(command) => verify::run(&command, out),
        Command::Graph(command) => graph::run(&command, out, err),
        Command::Status(command) if command.app.is_none() => {
            return match command.local.show(None) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    let _ = writeln!(err, "error: {:#}", anyhow::Error::from(error));
                    ExitCode::FAILURE
                }
            };
        }
        Command::State(args::StateCommand::Get(command)) if command.app.is_none() => {
            return match command.local.get(None) {
                Ok(state) => {
                    let text = serde_json::to_string_pretty(&state).expect("JSON values print");
                    let _ = writeln!(out, "{text}");
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    let _ = writeln!(err, "error: {:#}", anyhow::Error::from(error));
                    ExitCode::FAILURE
                }
            };
        }
        Command::New(args) => new::run(&args, out),
        Command::Tools(command) => tools(&command),
        other => cluster::run(other, out, err),
    };
    match result {
        Ok(Outcome::Passed) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
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
