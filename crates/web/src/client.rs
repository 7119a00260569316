//! Reading a running process's status over its admin endpoint, and printing it, for
//! `runnel status` and `app status`.

use runnel_runtime::{Snapshot, render_table};

/// The default admin address of a Runnel process.
pub const DEFAULT_ADMIN_ADDRESS: &str = "127.0.0.1:4040";

/// Why the status could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// The endpoint did not answer, or answered with an error.
    #[error("reading {url} failed")]
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
    /// The status could not be written as YAML.
    #[error("writing the status as yaml failed")]
    Yaml(#[source] serde_norway::Error),
}

/// How `status` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFormat {
    /// Tables of streamlets and topics.
    Table,
    /// The JSON of `/api/status`, pretty-printed.
    Json,
    /// The same as YAML.
    Yaml,
}

impl StatusFormat {
    /// The names `-o` accepts.
    pub const NAMES: [&'static str; 3] = ["table", "json", "yaml"];
}

impl std::str::FromStr for StatusFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "table" => Ok(StatusFormat::Table),
            "json" => Ok(StatusFormat::Json),
            "yaml" => Ok(StatusFormat::Yaml),
            other => Err(format!("'{other}' is not table, json or yaml")),
        }
    }
}

/// The URL of the status API at `address` (`host:port`, or a full `http://` URL).
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

/// The status in `format`.
///
/// ```
/// use runnel_runtime::Snapshot;
/// use runnel_web::{StatusFormat, format_status};
/// let snapshot = Snapshot { app: "demo".into(), ..Snapshot::default() };
/// assert!(format_status(&snapshot, StatusFormat::Json)?.contains("\"app\": \"demo\""));
/// # Ok::<(), runnel_web::StatusError>(())
/// ```
///
/// # Errors
///
/// When YAML cannot be written.
pub fn format_status(snapshot: &Snapshot, format: StatusFormat) -> Result<String, StatusError> {
    match format {
        StatusFormat::Json => Ok(serde_json::to_string_pretty(snapshot)
            .expect("a snapshot is always valid json")
            + "\n"),
        StatusFormat::Yaml => serde_norway::to_string(snapshot).map_err(StatusError::Yaml),
        StatusFormat::Table => Ok(table(snapshot)),
    }
}

/// The arguments of `runnel status` and `app status`, shared by both command lines.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The admin endpoint of the running app, `host:port` or a URL.
    #[arg(long, default_value = DEFAULT_ADMIN_ADDRESS)]
    pub admin: String,
    /// Refresh every two seconds until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// How to print the status: table, json or yaml.
    #[arg(short = 'o', long = "output", default_value = "table", value_parser = parse_format)]
    pub output: StatusFormat,
}

impl StatusArgs {
    /// Prints the status as asked ([`show_status`]).
    ///
    /// # Errors
    ///
    /// When the endpoint cannot be read or the status cannot be formatted.
    pub fn show(&self) -> Result<(), StatusError> {
        show_status(&self.admin, self.output, self.watch)
    }
}

fn parse_format(text: &str) -> Result<StatusFormat, String> {
    text.parse()
}

/// Prints the status of the app whose admin endpoint is at `address` (`host:port` or a URL)
/// in `format`; with `watch`, again every two seconds (clearing a terminal first) until the
/// process is interrupted. What `runnel status` and `app status` do.
///
/// # Errors
///
/// When the endpoint cannot be read or the status cannot be formatted.
pub fn show_status(address: &str, format: StatusFormat, watch: bool) -> Result<(), StatusError> {
    use std::io::{IsTerminal, Write};
    let url = status_url(address);
    let clear = watch && std::io::stdout().is_terminal();
    loop {
        let text = format_status(&fetch_status(&url)?, format)?;
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

fn table(snapshot: &Snapshot) -> String {
    let ready = if snapshot.ready { "ready" } else { "starting" };
    let mut text = format!("app {} ({ready})\n\n", snapshot.app);
    text.push_str(&render_table(snapshot, ""));
    let width = snapshot
        .topics
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max(5);
    text.push_str(&format!(
        "{:<width$}  {:>10}  {:>12}  {:>9}\n",
        "topic", "partitions", "end offsets", "lag"
    ));
    for topic in &snapshot.topics {
        let end: u64 = topic.partitions.iter().map(|p| p.end).sum();
        text.push_str(&format!(
            "{:<width$}  {:>10}  {:>12}  {:>9}\n",
            topic.name,
            topic.partitions.len(),
            end,
            topic.lag
        ));
    }
    text
}
