//! Reading the keyed state of one key from running processes, for `runnel state get` and
//! `app state get`: each admin endpoint given is asked in turn until the process whose
//! consumer holds the key's partition answers.

use std::io::Write as _;
use std::process::ExitCode;

use crate::client::{DEFAULT_ADMIN_ADDRESS, recorded_admin_address};

/// The `state` commands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum StateCommand {
    /// Print the keyed state of one key of a running streamlet as JSON: every state with
    /// its value and the key's pending timers, from the process holding the key's partition.
    ///
    /// Exits 1 when no process asked holds it, or none answered.
    Get(StateGetArgs),
}

/// The arguments of `state get`.
#[derive(Debug, Clone, clap::Args)]
pub struct StateGetArgs {
    /// The streamlet instance (with keyed state).
    pub instance: String,
    /// The key: UTF-8 text, or hexadecimal bytes with --hex.
    pub key: String,
    /// The key is hexadecimal (for keys that are not UTF-8).
    #[arg(long)]
    pub hex: bool,
    /// The admin endpoint of a process running the instance, `host:port` or a URL; repeat
    /// it for every process of a scaled instance, and the one holding the key's partition
    /// answers. Default: the address the app recorded when it started, else 127.0.0.1:4040.
    #[arg(long = "admin", value_name = "ADDRESS")]
    pub admin: Vec<String>,
}

/// Why the state of a key could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The key given with `--hex` is not hexadecimal.
    #[error("the key '{0}' is not an even number of hexadecimal digits")]
    Hex(String),
    /// The endpoint did not answer.
    #[error("no runnel process answered at {url}")]
    Request {
        /// The URL asked.
        url: String,
        /// The cause.
        #[source]
        source: Box<ureq::Error>,
    },
    /// The process could not be reached (through a proxy), or did not answer in time.
    #[error("{url} did not answer: {reason}")]
    Unreachable {
        /// What was asked (a URL, or a pod).
        url: String,
        /// Why not.
        reason: String,
    },
    /// The endpoint refused the query: an unknown instance, one without keyed state, one
    /// not running now.
    #[error("{url} answered {status}: {reason}")]
    Refused {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The reason it gave.
        reason: String,
    },
    /// The endpoint answered, but this process does not hold the key's partition.
    #[error("{url}: {message}")]
    NotHeld {
        /// The URL asked.
        url: String,
        /// Which partition the key is on and which this process holds.
        message: String,
    },
    /// Several endpoints were asked and none holds the key's partition.
    #[error("no process asked holds the key's partition:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    NoOwner(Vec<StateError>),
}

impl StateGetArgs {
    /// Prints the key's state as JSON, asking the endpoints given (or the one `app`
    /// recorded, or the default); returns the exit code: 0 once the owner's answer was
    /// printed, 1 otherwise (the error goes to standard error).
    pub fn main(&self, app: Option<&str>) -> ExitCode {
        match self.get(app) {
            Ok(state) => {
                let text = serde_json::to_string_pretty(&state).expect("JSON values print");
                let _ = writeln!(std::io::stdout(), "{text}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                let _ = writeln!(std::io::stderr(), "error: {}", error_chain(&error));
                ExitCode::FAILURE
            }
        }
    }

    /// The query string of the key: `key=TEXT` (escaped), or `key_hex=HEX` with `--hex`.
    ///
    /// # Errors
    ///
    /// When the key given with `--hex` is not hexadecimal.
    pub fn query(&self) -> Result<String, StateError> {
        if self.hex {
            let hex = self.key.to_ascii_lowercase();
            let valid =
                hex.len().is_multiple_of(2) && hex.bytes().all(|byte| byte.is_ascii_hexdigit());
            if !valid {
                return Err(StateError::Hex(self.key.clone()));
            }
            Ok(format!("key_hex={hex}"))
        } else {
            Ok(format!("key={}", percent_encode(self.key.as_bytes())))
        }
    }

    /// The answer of the process holding the key's partition (a `KeyState` as JSON).
    ///
    /// # Errors
    ///
    /// When no endpoint asked holds the key's partition, or none answered.
    pub fn get(&self, app: Option<&str>) -> Result<serde_json::Value, StateError> {
        let addresses = if self.admin.is_empty() {
            vec![
                app.and_then(recorded_admin_address)
                    .unwrap_or_else(|| DEFAULT_ADMIN_ADDRESS.to_owned()),
            ]
        } else {
            self.admin.clone()
        };
        let query = self.query()?;
        let mut failures = Vec::new();
        for address in &addresses {
            let url = state_url(address, &self.instance, &query);
            match fetch_state(&url) {
                Ok(state) => return Ok(state),
                Err(error) => failures.push(error),
            }
        }
        Err(no_owner(failures))
    }
}

/// The URL of the state of `instance` at `address` (`host:port` or a URL), with `query`
/// (`key=...` or `key_hex=...`).
///
/// ```
/// assert_eq!(
///     runnel_status::state_url("127.0.0.1:4040", "counts", "key=a%20b"),
///     "http://127.0.0.1:4040/api/state/counts?key=a%20b"
/// );
/// ```
pub fn state_url(address: &str, instance: &str, query: &str) -> String {
    let base = if address.starts_with("http://") || address.starts_with("https://") {
        address.trim_end_matches('/').to_owned()
    } else {
        format!("http://{address}")
    };
    format!("{base}{}", state_path(instance, query))
}

/// The path and query of the state of `instance` on an admin endpoint.
///
/// ```
/// assert_eq!(runnel_status::state_path("counts", "key=a"), "/api/state/counts?key=a");
/// ```
pub fn state_path(instance: &str, query: &str) -> String {
    format!("/api/state/{}?{query}", percent_encode(instance.as_bytes()))
}

/// Asks `url` for a key's state: the answer of the process holding the key's partition.
///
/// # Errors
///
/// When the endpoint does not answer, refuses the query, or does not hold the partition.
pub fn fetch_state(url: &str) -> Result<serde_json::Value, StateError> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let request = |source| StateError::Request {
        url: url.to_owned(),
        source: Box::new(source),
    };
    let mut response = agent.get(url).call().map_err(request)?;
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().map_err(request)?;
    state_answer(url, status, &body)
}

/// What an answer of `/api/state` with HTTP `status` and `body` from `url` means: the
/// state, when the process holds the key's partition.
///
/// # Errors
///
/// When the process does not hold the key's partition (421), or refused the query.
pub fn state_answer(url: &str, status: u16, body: &str) -> Result<serde_json::Value, StateError> {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let text = |field: &str| {
        json.as_ref()
            .and_then(|json| json[field].as_str())
            .map(str::to_owned)
    };
    match status {
        200 if json.is_some() => Ok(json.unwrap_or_default()),
        421 => Err(StateError::NotHeld {
            url: url.to_owned(),
            message: text("message")
                .unwrap_or_else(|| "this process does not hold the key's partition".to_owned()),
        }),
        _ => Err(StateError::Refused {
            url: url.to_owned(),
            status,
            reason: text("error").unwrap_or_else(|| body.trim().to_owned()),
        }),
    }
}

/// The error of asking several processes, none of which answered as the owner: the one
/// error when one was asked.
pub fn no_owner(mut failures: Vec<StateError>) -> StateError {
    if failures.len() == 1 {
        failures.remove(0)
    } else {
        StateError::NoOwner(failures)
    }
}

/// Bytes as a URL component: unreserved characters as they are, others as `%XX`.
fn percent_encode(bytes: &[u8]) -> String {
    let mut encoded = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// `error: cause: cause`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_instances_are_escaped_in_the_url() {
        assert_eq!(percent_encode("a b/ü?".as_bytes()), "a%20b%2F%C3%BC%3F");
        assert_eq!(
            state_url("http://h:1/", "my-counts", "key_hex=00ff"),
            "http://h:1/api/state/my-counts?key_hex=00ff"
        );
    }

    #[test]
    fn a_key_given_as_hex_must_be_hex() {
        let args = StateGetArgs {
            instance: "counts".into(),
            key: "0g".into(),
            hex: true,
            admin: vec!["127.0.0.1:1".into()],
        };
        assert_eq!(
            args.get(None).unwrap_err().to_string(),
            "the key '0g' is not an even number of hexadecimal digits"
        );
    }
}
