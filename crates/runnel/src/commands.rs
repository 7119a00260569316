//! What each subcommand does.

use crate::output::print_line;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use runnel_blueprint::{
    Blueprint, BlueprintFiles, render_human_with_files, render_json, verify_with_queries,
};
use runnel_runtime::{Console, LocalConfig, Outcome, Registry, RunOptions, ViewMode};
use tokio_util::sync::CancellationToken;

use crate::AppError;
use crate::backplane;
use crate::cli::{ReportFormat, RunArgs, VerifyArgs, View};
use crate::declared::Declared;

/// The default name of the config file beside the blueprint.
const LOCAL_CONFIG: &str = "local.toml";

pub(crate) fn describe(app: &str, registry: &Registry) -> Result<(), AppError> {
    let json =
        serde_json::to_string_pretty(&registry.descriptor(app)).map_err(AppError::Describe)?;
    print_line!("{json}");
    Ok(())
}

pub(crate) fn read(path: &Path) -> Result<String, AppError> {
    std::fs::read_to_string(path).map_err(|source| AppError::Read {
        path: path.to_owned(),
        source,
    })
}

pub(crate) fn verify_command(
    app: &str,
    declared: &Declared,
    args: &VerifyArgs,
) -> Result<(), AppError> {
    let text = read(&args.blueprint)?;
    let files = BlueprintFiles::beside(&args.blueprint, &text);
    let descriptor = declared.registry.descriptor(app);
    let problems = &declared.problems;
    let mut verification =
        verify_with_queries(&args.blueprint, &text, &descriptor, None, problems, &files);
    if let (Some(blueprint), true) = (
        &verification.blueprint,
        args.against.is_some() || args.kafka.is_some(),
    ) {
        let source = runnel_tools::SourceArgs {
            blueprint: args.blueprint.clone(),
            data_dir: args.against.clone(),
            kafka: args.kafka.clone(),
            kafka_settings: args.kafka_settings.clone(),
            config: args.config.clone(),
            descriptor: None,
        };
        let topics = blueprint.topics.iter().map(|topic| topic.name.as_str());
        let kept = crate::app::runtime().block_on(runnel_tools::kept_schemas(&source, topics))?;
        verification = verify_with_queries(
            &args.blueprint,
            &text,
            &descriptor,
            Some(&kept),
            problems,
            &files,
        );
    }
    match args.format {
        ReportFormat::Json => print_line!("{}", render_json(&verification.diagnostics)),
        ReportFormat::Human if verification.diagnostics.is_empty() => {
            if let Some(blueprint) = &verification.blueprint {
                print_line!(
                    "{}: ok ({} streamlets, {} topics)",
                    args.blueprint.display(),
                    blueprint.streamlets.len(),
                    blueprint.topics.len()
                );
            }
        }
        ReportFormat::Human => crate::output::text(&render_human_with_files(
            &verification.diagnostics,
            &text,
            &files,
        )),
    }
    if verification.has_errors() || (args.deny_warnings && verification.has_warnings()) {
        return Err(AppError::VerificationFailed);
    }
    Ok(())
}

/// Verifies the blueprint for a run; prints the report and refuses to go on with errors.
pub(crate) fn checked_blueprint(
    app: &str,
    declared: &Declared,
    path: &Path,
) -> Result<Blueprint, AppError> {
    let text = read(path)?;
    let files = BlueprintFiles::beside(path, &text);
    let descriptor = declared.registry.descriptor(app);
    let verification =
        verify_with_queries(path, &text, &descriptor, None, &declared.problems, &files);
    if !verification.diagnostics.is_empty() {
        eprint!(
            "{}",
            render_human_with_files(&verification.diagnostics, &text, &files)
        );
    }
    verification
        .blueprint
        .ok_or_else(|| AppError::InvalidBlueprint(path.to_owned()))
}

fn local_config(args: &RunArgs) -> Result<LocalConfig, AppError> {
    let paths = if args.config.is_empty() {
        Some(beside(&args.blueprint, LOCAL_CONFIG))
            .filter(|path| path.exists())
            .into_iter()
            .collect()
    } else {
        args.config.clone()
    };
    let mut config = LocalConfig::default();
    for path in paths {
        config.merge(LocalConfig::parse(&path, &read(&path)?)?);
    }
    for assignment in &args.sets {
        config.set(assignment)?;
    }
    Ok(config)
}

/// `name` in the directory of `blueprint`.
fn beside(blueprint: &Path, name: &str) -> PathBuf {
    blueprint
        .parent()
        .map_or_else(|| PathBuf::from(name), |directory| directory.join(name))
}

pub(crate) async fn run_command(
    app: &str,
    declared: &Declared,
    args: &RunArgs,
    only: Option<String>,
    console: Console,
) -> Result<(), AppError> {
    let registry = &declared.registry;
    let blueprint = checked_blueprint(app, declared, &args.blueprint)?;
    if blueprint.name != app {
        tracing::warn!(
            "the blueprint is named '{}' but this app is '{app}'",
            blueprint.name
        );
    }
    let config = local_config(args)?;
    let plan = runnel_runtime::plan(&blueprint, &registry.descriptor(app), registry, &config)?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| beside(&args.blueprint, ".runnel"));
    let backplane = backplane::open(args, &config, data_dir).await?;

    let admin = admin_listener(args.admin.as_deref()).await?;
    let admin_address = admin
        .as_ref()
        .and_then(|listener| listener.local_addr().ok());
    let admin_url = admin_address.map(|address| format!("http://{address}/"));
    // `status` finds the endpoint wherever it ended up.
    let _admin_record = match admin_address {
        Some(address) => {
            let default = runnel_status::DEFAULT_ADMIN_ADDRESS;
            if args.admin.is_none() && address.to_string() != default {
                tracing::warn!(
                    "the admin address {default} is taken (by another app?); serving on {address} instead, where `{app} status` finds it"
                );
            }
            match runnel_status::record_admin_address(app, &address.to_string()) {
                Ok(record) => Some(record),
                Err(error) => {
                    tracing::warn!("recording the admin address for `status` failed: {error}");
                    None
                }
            }
        }
        None => None,
    };
    console.print(&banner(
        &blueprint,
        &plan,
        &backplane.describe,
        only.as_deref(),
        admin_url.as_deref(),
    ));
    let replica = args.replica.clone().unwrap_or_else(|| match &only {
        None => "0".to_owned(),
        Some(_) => std::process::id().to_string(),
    });
    // `run` is the whole app in one process, started again under the same name.
    let static_members = only.is_none();
    let shutdown = CancellationToken::new();
    runnel_runtime::stop_on_signals(shutdown.clone(), console.clone());
    let options = RunOptions {
        only,
        host: runnel_host::HostSettings {
            commit_interval: args.commit_interval,
            ..runnel_host::HostSettings::default()
        },
        view: match args.view {
            View::Auto => ViewMode::Auto,
            View::Plain => ViewMode::Plain,
            View::Off => ViewMode::Off,
        },
        plain_every: args.status_every,
        footer: format!("{} · {} · Ctrl-C to stop", plan.app, backplane.short),
        static_members,
        replica,
        ..RunOptions::default()
    };
    let running = runnel_runtime::start(
        plan,
        backplane.backend.clone(),
        options,
        console.clone(),
        shutdown,
    )
    .await;
    let report = match running {
        Ok(running) => {
            let stop_admin = CancellationToken::new();
            let serving = admin.map(|listener| {
                tokio::spawn(runnel_web::serve(
                    listener,
                    running.board().clone(),
                    stop_admin.clone(),
                ))
            });
            let report = running.wait().await;
            stop_admin.cancel();
            if let Some(serving) = serving {
                let _ = serving.await;
            }
            report
        }
        Err(error) => Err(error),
    };
    // Dropping the last handle stops the embedded log's writers after a final sync.
    drop(backplane);
    let report = report?;
    let finished = report
        .outcomes
        .iter()
        .filter(|(_, outcome)| *outcome == Outcome::Finished)
        .count();
    console.print(&format!(
        "{}: {} streamlets finished, {} stopped; offsets committed\n",
        app,
        finished,
        report.outcomes.len() - finished
    ));
    Ok(())
}

fn banner(
    blueprint: &Blueprint,
    plan: &runnel_runtime::Plan,
    data: &str,
    only: Option<&str>,
    admin: Option<&str>,
) -> String {
    let mut text = format!("runnel: running '{}'", plan.app);
    if let Some(instance) = only {
        text.push_str(&format!(" (only streamlet '{instance}')"));
    }
    text.push_str("\n\n");
    text.push_str(&runnel_blueprint::graph::render_text(blueprint));
    text.push_str(&format!(
        "dead letters go to topic {}\n",
        plan.dead_letter_topic
    ));
    text.push_str(&format!("\n{data}\n"));
    if let Some(url) = admin {
        text.push_str(&format!(
            "view: {url} (metrics at {url}metrics, status at {url}api/status)\n"
        ));
    }
    text.push_str("stop: Ctrl-C or SIGTERM drains in-flight records and commits; a second signal exits at once\n\n");
    text
}

/// The admin endpoint's listener: none for `off`; the default address with a fallback to a
/// free port; or exactly the address asked for.
async fn admin_listener(
    address: Option<&str>,
) -> Result<Option<tokio::net::TcpListener>, AppError> {
    let (text, fall_back) = match address {
        Some("off") => return Ok(None),
        Some(text) => (text, false),
        None => (runnel_status::DEFAULT_ADMIN_ADDRESS, true),
    };
    let address = text
        .parse()
        .map_err(|_| AppError::AdminAddress(text.to_owned()))?;
    Ok(Some(runnel_web::bind(address, fall_back).await?))
}

/// Whether standard output is a terminal that can show the live table.
pub(crate) fn interactive() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("TERM").is_some_and(|term| term != "dumb")
}
