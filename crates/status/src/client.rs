//! Reading a running process's status over its admin endpoint, for `runnel status` and
//! `app status`, and finding that endpoint.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::{Snapshot, StatusFormat, format_status};

/// The default admin address of a Runnel process.
pub const DEFAULT_ADMIN_ADDRESS: &str = "127.0.0.1:4040";

/// Why the status could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// The endpoint did not answer, or answered with an error.
    #[error("no runnel process answered at {url}")]
    Request {
        /// The URL asked.
        url: String,
        /// The cause.
        #[source]
        source: Box<ureq::Error>,
    },
    /// The answer is not a status.
    #[error("{url} did not return a runnel status")]
    Decode {
        /// The URL asked.
        url: String,
        /// The cause.
        #[source]
        source: Box<ureq::Error>,
    },
    /// The endpoint belongs to another app than the one asked about.
    #[error("the process at {url} runs app '{found}', not '{expected}'")]
    OtherApp {
        /// The URL asked.
        url: String,
        /// The app asked about.
        expected: String,
        /// The app that answered.
        found: String,
    },
    /// The status could not be written as YAML.
    #[error("writing the status as yaml failed")]
    Yaml(#[source] serde_norway::Error),
}

/// The URL of the status API at `address` (`host:port`, or a full `http://` URL).
///
/// ```
/// assert_eq!(runnel_status::status_url("127.0.0.1:4040"), "http://127.0.0.1:4040/api/status");
/// ```
pub fn status_url(address: &str) -> String {
    let base = if address.starts_with("http://") || address.starts_with("https://") {
        address.trim_end_matches('/').to_owned()
    } else {
        format!("http://{address}")
    };
    format!("{base}/api/status")
}

/// Reads the status from `url`.
///
/// # Errors
///
/// When the endpoint does not answer or the answer is not a status.
pub fn fetch_status(url: &str) -> Result<Snapshot, StatusError> {
    let mut response = ureq::get(url)
        .call()
        .map_err(|source| StatusError::Request {
            url: url.to_owned(),
            source: Box::new(source),
        })?;
    response
        .body_mut()
        .read_json()
        .map_err(|source| StatusError::Decode {
            url: url.to_owned(),
            source: Box::new(source),
        })
}

/// The arguments of `runnel status` and `app status`, shared by both command lines.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The admin endpoint of the running app, `host:port` or a URL; default: the address
    /// the app recorded when it started (see `--app`), else 127.0.0.1:4040.
    #[arg(long)]
    pub admin: Option<String>,
    /// Refresh every two seconds until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// How to print the status: table, json or yaml.
    #[arg(short = 'o', long = "output", default_value = "table", value_parser = parse_format)]
    pub output: StatusFormat,
}

impl StatusArgs {
    /// Prints the status as asked, of `app` when it is given (the app's own `status`
    /// command, or `runnel status --app`): found at the address that app recorded at start
    /// unless `--admin` says otherwise, and checked to be that app. Returns the exit code:
    /// 0 once a status was printed, 1 when no process answered or the wrong app did (the
    /// error goes to standard error).
    pub fn main(&self, app: Option<&str>) -> ExitCode {
        match self.show(app) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                let _ = writeln!(std::io::stderr(), "error: {}", error_chain(&error));
                ExitCode::FAILURE
            }
        }
    }

    /// Prints the status as [`main`](StatusArgs::main) does.
    ///
    /// # Errors
    ///
    /// When the endpoint cannot be read, serves another app, or the status cannot be
    /// formatted.
    pub fn show(&self, app: Option<&str>) -> Result<(), StatusError> {
        let address = self
            .admin
            .clone()
            .or_else(|| app.and_then(recorded_admin_address))
            .unwrap_or_else(|| DEFAULT_ADMIN_ADDRESS.to_owned());
        show_status(&address, app, self.output, self.watch)
    }
}

fn parse_format(text: &str) -> Result<StatusFormat, String> {
    text.parse()
}

/// `error: cause: cause`, each cause once.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Prints the status of the process whose admin endpoint is at `address` (`host:port` or
/// a URL) in `format`, checking that it runs `app` when given; with `watch`, again every
/// two seconds (clearing a terminal first) until the process is interrupted.
///
/// # Errors
///
/// When the endpoint cannot be read, serves another app, or the status cannot be
/// formatted.
pub fn show_status(
    address: &str,
    app: Option<&str>,
    format: StatusFormat,
    watch: bool,
) -> Result<(), StatusError> {
    use std::io::IsTerminal;
    let url = status_url(address);
    let clear = watch && std::io::stdout().is_terminal();
    loop {
        let snapshot = fetch_status(&url)?;
        if let Some(expected) = app
            && snapshot.app != expected
        {
            return Err(StatusError::OtherApp {
                url,
                expected: expected.to_owned(),
                found: snapshot.app,
            });
        }
        let text = format_status(&snapshot, format)?;
        let mut out = std::io::stdout().lock();
        if clear {
            // Clear the screen and go home, like `watch`.
            let _ = write!(out, "\x1b[2J\x1b[H");
        }
        let _ = write!(out, "{text}");
        let _ = out.flush();
        if !watch {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// Where a process running `app` records its admin address while it runs:
/// `$XDG_RUNTIME_DIR/runnel/<app>.admin`, or `<temp dir>/runnel-<user>/<app>.admin`.
///
/// ```
/// let path = runnel_status::admin_record_path("sensor-data");
/// assert!(path.ends_with("sensor-data.admin"));
/// ```
pub fn admin_record_path(app: &str) -> PathBuf {
    let directory = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(runtime) if !runtime.is_empty() => PathBuf::from(runtime).join("runnel"),
        _ => {
            let user = std::env::var("USER").unwrap_or_else(|_| "default".to_owned());
            std::env::temp_dir().join(format!("runnel-{user}"))
        }
    };
    directory.join(format!("{app}.admin"))
}

/// The admin address `app` recorded, if a process of it is running (or died without
/// removing its record; then nothing answers there, and the status says so).
pub fn recorded_admin_address(app: &str) -> Option<String> {
    let text = std::fs::read_to_string(admin_record_path(app)).ok()?;
    let address = text.lines().next()?.trim();
    (!address.is_empty()).then(|| address.to_owned())
}

/// Records `address` as `app`'s admin address until the returned guard is dropped, so
/// `status` finds the process wherever its endpoint ended up.
///
/// # Errors
///
/// When the record cannot be written.
pub fn record_admin_address(app: &str, address: &str) -> std::io::Result<AdminRecord> {
    let path = admin_record_path(app);
    if let Some(directory) = path.parent() {
        std::fs::create_dir_all(directory)?;
    }
    std::fs::write(&path, format!("{address}\n{}\n", std::process::id()))?;
    Ok(AdminRecord { path })
}

/// The record [`record_admin_address`] wrote; removed when dropped.
#[derive(Debug)]
pub struct AdminRecord {
    path: PathBuf,
}

impl AdminRecord {
    /// Where the record is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for AdminRecord {
    fn drop(&mut self) {
        // Only our own record: another process of the app may have replaced it.
        let ours = std::fs::read_to_string(&self.path)
            .is_ok_and(|text| text.lines().nth(1) == Some(std::process::id().to_string().as_str()));
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
