//! How to start a Python streamlet's process: the interpreter, the streamlet, and where its
//! modules are.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::package;

/// The interpreter and streamlet reference of a Python streamlet, and the directories its
/// modules are imported from.
///
/// ```
/// use runnel_python::PythonCommand;
/// let command = PythonCommand::new("runnel.examples:too_hot").interpreter("python3");
/// assert_eq!(command.reference(), "runnel.examples:too_hot");
/// ```
#[derive(Clone, Debug)]
pub struct PythonCommand {
    interpreter: PathBuf,
    reference: String,
    module_paths: Vec<PathBuf>,
    site_packages: bool,
}

impl PythonCommand {
    /// The streamlet `module:attribute`, run by `python3` from the `PATH`.
    pub fn new(reference: impl Into<String>) -> Self {
        PythonCommand {
            interpreter: PathBuf::from("python3"),
            reference: reference.into(),
            module_paths: Vec::new(),
            site_packages: true,
        }
    }

    /// Runs it with `interpreter`: a path to `python3`, such as a virtual environment's
    /// `bin/python`, whose packages the streamlet may import.
    pub fn interpreter(mut self, interpreter: impl Into<PathBuf>) -> Self {
        self.interpreter = interpreter.into();
        self
    }

    /// Imports the streamlet's modules from `directory` too (before the `PYTHONPATH` the
    /// host was started with).
    pub fn module_path(mut self, directory: impl Into<PathBuf>) -> Self {
        self.module_paths.push(directory.into());
        self
    }

    /// Runs the interpreter without its site packages (`python -S`: neither its own nor the
    /// user's), so the streamlet imports only the standard library and the module paths:
    /// how `build` checks that an image's packages are all a streamlet needs.
    ///
    /// ```
    /// use runnel_python::PythonCommand;
    /// let command = PythonCommand::new("scoring:Score").module_path("packages").without_site_packages();
    /// assert!(!command.uses_site_packages());
    /// ```
    pub fn without_site_packages(mut self) -> Self {
        self.site_packages = false;
        self
    }

    /// Whether the interpreter imports from its site packages (the default).
    pub fn uses_site_packages(&self) -> bool {
        self.site_packages
    }

    /// The streamlet reference, `module:attribute`.
    pub fn reference(&self) -> &str {
        &self.reference
    }

    /// The interpreter.
    pub fn interpreter_path(&self) -> &Path {
        &self.interpreter
    }

    /// `python -m <module> <arguments>` with the `runnel` package (the host's own copy) and
    /// the module paths first on the `PYTHONPATH`.
    pub(crate) fn command(&self, module: &str, arguments: &[&str]) -> std::io::Result<Command> {
        self.std_command(module, arguments).map(Command::from)
    }

    /// As [`command`](Self::command), for a caller that waits for it without a runtime.
    pub(crate) fn std_command(
        &self,
        module: &str,
        arguments: &[&str],
    ) -> std::io::Result<std::process::Command> {
        let package = package::materialize(&std::env::temp_dir())?;
        let mut paths = vec![package];
        paths.extend(self.module_paths.iter().cloned());
        if let Some(existing) = std::env::var_os("PYTHONPATH") {
            paths.extend(std::env::split_paths(&existing));
        }
        let python_path: OsString = std::env::join_paths(paths)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
        let mut command = std::process::Command::new(&self.interpreter);
        if !self.site_packages {
            command.arg("-S");
        }
        command
            .arg("-m")
            .arg(module)
            .args(arguments)
            .env("PYTHONPATH", python_path)
            // Tracebacks and prints arrive as they happen, not when a buffer fills.
            .env("PYTHONUNBUFFERED", "1");
        Ok(command)
    }
}
