//! [`App`]: the `main` of every Runnel app binary.

use crate::output::print_line;
use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use runnel_runtime::{Console, Registry};
use runnel_streamlet::Streamlet;
use tracing_subscriber::EnvFilter;

use crate::AppError;
use crate::cli::{Cli, Command};
use crate::commands;

/// A Runnel application: its name and streamlet types, and the command line that runs them.
///
/// ```no_run
/// use runnel::prelude::*;
///
/// # #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
/// # const IN: Inlet<Reading> = Inlet::new("in");
/// # const OUT: Outlet<Reading> = Outlet::new("out");
/// fn main() -> std::process::ExitCode {
///     runnel::App::new("sensor-data")
///         .streamlet("plausible", || Processor::new(IN, OUT, |r: Reading| (r.celsius < 150.0).then_some(r)))
///         .streamlet("printer", || Egress::new(OUT.as_inlet(), |r: Reading| async move {
///             println!("{r:?}");
///             Ok(())
///         }))
///         .main()
/// }
/// ```
///
/// The binary then understands `describe`, `verify [BLUEPRINT]`, `run [BLUEPRINT]`,
/// `run-streamlet INSTANCE [BLUEPRINT]`, `status`, `state get INSTANCE KEY` and
/// `build [BLUEPRINT]` (an image and an Application for Kubernetes); `--help` lists their
/// options.
#[derive(Debug)]
pub struct App {
    name: String,
    version: Option<String>,
    registry: Registry,
    /// How the blueprint's SQL streamlets are planned.
    planner: crate::declared::Planner,
}

impl App {
    /// An app called `name` (the `name` of its blueprint) with no streamlet types yet.
    pub fn new(name: &str) -> Self {
        App {
            name: name.to_owned(),
            version: None,
            registry: Registry::new(),
            planner: crate::declared::default_planner(),
        }
    }

    /// Adds the app's own SQL functions (scalar and aggregate, in Rust) to those the
    /// blueprint's SQL streamlets may call (with the `sql` feature).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use runnel::sql::datafusion::arrow::datatypes::DataType;
    /// use runnel::sql::datafusion::expr::{ColumnarValue, Volatility, create_udf};
    ///
    /// let double = create_udf("double", vec![DataType::Float64], DataType::Float64, Volatility::Immutable,
    ///     Arc::new(|arguments: &[ColumnarValue]| {
    ///         use runnel::sql::datafusion::arrow::{array::Float64Array, compute::kernels::numeric};
    ///         let arrays = ColumnarValue::values_to_arrays(arguments)?;
    ///         Ok(ColumnarValue::Array(numeric::mul(&arrays[0], &Float64Array::new_scalar(2.0))?))
    ///     }));
    /// runnel::App::new("readings")
    ///     .sql_functions(runnel::sql::Functions::standard().with_scalar(double))
    ///     .main();
    /// ```
    #[cfg(feature = "sql")]
    pub fn sql_functions(mut self, functions: runnel_sql::Functions) -> Self {
        self.planner = Some(functions);
        self
    }

    /// The app's version, which `build` puts into the image and the Application
    /// (`.version(env!("CARGO_PKG_VERSION"))` takes the crate's).
    pub fn version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Registers a streamlet type under `type_name`, the name blueprints use. `factory` makes
    /// a fresh streamlet for every start and restart of an instance.
    pub fn streamlet<S, F>(mut self, type_name: &str, factory: F) -> Self
    where
        S: Streamlet,
        F: Fn() -> S + Send + Sync + 'static,
    {
        self.registry = self.registry.register(type_name, factory);
        self
    }

    /// The registered streamlet types.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Parses the process's arguments and runs the command; returns the exit code:
    /// 0 on success, 1 when the command failed, 2 for usage errors.
    pub fn main(self) -> ExitCode {
        self.main_with_args(std::env::args_os())
    }

    /// [`App::main`] with explicit arguments (the first one is the program name).
    pub fn main_with_args<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(error) => {
                let _ = error.print();
                return if error.use_stderr() {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
        };
        if let Command::Status(args) = &cli.command {
            return args.main(Some(&self.name));
        }
        if let Command::State(runnel_status::StateCommand::Get(args)) = &cli.command {
            return args.main(Some(&self.name));
        }
        if let Command::Tools(command) = &cli.command {
            return self.tool(command);
        }
        if let Command::Sql(args) = &cli.command {
            return self.sql(args);
        }
        let console = Console::stdout(commands::interactive());
        tracing_subscriber::fmt()
            .with_env_filter(
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
            )
            .with_writer(console.clone())
            .with_target(false)
            .with_ansi(console.is_interactive())
            .init();
        match self.execute(cli.command, console) {
            Ok(()) => ExitCode::SUCCESS,
            Err(AppError::VerificationFailed) => ExitCode::FAILURE,
            Err(error) => {
                eprintln!("error: {}", chain(&error));
                ExitCode::FAILURE
            }
        }
    }

    /// Runs a topic or offset tool: its output on standard output, logs (warnings and
    /// worse) on standard error, so the output can be piped.
    fn tool(&self, command: &runnel_tools::ToolCommand) -> ExitCode {
        log_warnings_to_stderr();
        let declared = self.declared(&command.source().blueprint);
        let descriptor = declared.registry.descriptor(&self.name);
        let ran = runtime().block_on(runnel_tools::run(
            command,
            Some(&self.name),
            Some(&descriptor),
        ));
        match ran {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {}", chain(&error));
                ExitCode::FAILURE
            }
        }
    }

    /// Runs an ad hoc query over the app's topics: results on standard output, logs
    /// (warnings and worse: records skipped) on standard error.
    fn sql(&self, args: &crate::cli::SqlArgs) -> ExitCode {
        log_warnings_to_stderr();
        let declared = self.declared(&args.source.blueprint);
        let descriptor = declared.registry.descriptor(&self.name);
        let stdout = std::io::stdout();
        let ran = runtime().block_on(crate::adhoc::query_topics(
            &self.name,
            &descriptor,
            &self.planner,
            args,
            &mut stdout.lock(),
        ));
        match ran {
            Ok(()) => ExitCode::SUCCESS,
            // The reader went away (`| head`): nothing more to print.
            Err(AppError::Write { source, .. })
                if source.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {}", chain(&error));
                ExitCode::FAILURE
            }
        }
    }

    /// The app's types with the SQL streamlets of the blueprint at `path` (if it can be
    /// read: a command that needs it reports the error).
    fn declared(&self, path: &std::path::Path) -> crate::declared::Declared {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        crate::declared::declare(&self.name, &self.registry, &self.planner, path, &text)
    }

    fn execute(self, command: Command, console: Console) -> Result<(), AppError> {
        match command {
            Command::Describe(args) => {
                let declared = match &args.blueprint {
                    Some(path) => self.declared(path),
                    None => crate::declared::Declared {
                        registry: self.registry.clone(),
                        problems: Vec::new(),
                    },
                };
                commands::describe(&self.name, &declared.registry)
            }
            Command::Verify(args) => {
                commands::verify_command(&self.name, &self.declared(&args.blueprint), &args)
            }
            Command::Run(args) => runtime().block_on(commands::run_command(
                &self.name,
                &self.declared(&args.blueprint),
                &args,
                None,
                console,
            )),
            Command::Status(args) => Ok(args.show(Some(&self.name))?),
            Command::State(runnel_status::StateCommand::Get(args)) => {
                let state = args.get(Some(&self.name))?;
                let text = serde_json::to_string_pretty(&state).expect("JSON values print");
                print_line!("{text}");
                Ok(())
            }
            Command::Tools(command) => {
                let declared = self.declared(&command.source().blueprint);
                let descriptor = declared.registry.descriptor(&self.name);
                let ran = runnel_tools::run(&command, Some(&self.name), Some(&descriptor));
                Ok(runtime().block_on(ran)?)
            }
            Command::Sql(args) => {
                let declared = self.declared(&args.source.blueprint);
                let descriptor = declared.registry.descriptor(&self.name);
                let stdout = std::io::stdout();
                runtime().block_on(crate::adhoc::query_topics(
                    &self.name,
                    &descriptor,
                    &self.planner,
                    &args,
                    &mut stdout.lock(),
                ))
            }
            Command::Build(args) => crate::build::build(
                &self.name,
                self.version.as_deref(),
                &self.declared(&args.blueprint),
                &args,
            ),
            Command::RunStreamlet { instance, run } => runtime().block_on(commands::run_command(
                &self.name,
                &self.declared(&run.blueprint),
                &run,
                Some(instance),
                console,
            )),
        }
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runnel-worker")
        .build()
        .expect("starting the Tokio runtime")
}

/// An error and its causes, `: `-separated, each printed once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Logs warnings and worse on standard error, for commands whose output on standard output
/// may be piped.
fn log_warnings_to_stderr() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
