//! A schema registry for tests: [`ApicurioRegistry`], a real Apicurio Registry (through
//! `scripts/registry-dev`) serving the Confluent-compatible API at `/apis/ccompat/v7`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::test_broker::{end_watchdogs, free_port, watched};

/// How long [`ApicurioRegistry::start`] waits for the registry to answer.
const REGISTRY_START_TIMEOUT: Duration = Duration::from_secs(90);

/// A real Apicurio Registry on `127.0.0.1` with in-memory storage (H2 in memory: it starts
/// empty and forgets everything when it stops), serving the Confluent schema registry API.
///
/// `scripts/registry-dev` runs it as a JVM from what `scripts/registry-dev install` built
/// into `$RUNNEL_REGISTRY_HOME` (by default `~/.cache/runnel-registry/<version>`);
/// `docs/schema-registry.md` says which version and why. Its pid file and logs live in a
/// directory of its own under the temporary directory ([`dir`]). The registry is killed when
/// dropped and when the process that started it exits, even by a crash; the directory is
/// removed when dropped, except while panicking, when the logs stay for a look.
///
/// ```no_run
/// use runnel_kafka::test_registry::ApicurioRegistry;
///
/// let registry = ApicurioRegistry::start();
/// let (status, subjects) = registry.request("GET", "/subjects", None).unwrap();
/// assert_eq!((status, subjects.as_str()), (200, "[]"));
/// ```
///
/// [`dir`]: ApicurioRegistry::dir
#[derive(Debug)]
pub struct ApicurioRegistry {
    /// Its pid file and logs.
    dir: PathBuf,
    port: u16,
    /// The shell running the registry's JVM, which kills the JVM (SIGKILL) when it gets
    /// SIGTERM or when the test process is gone.
    watchdog: Option<Child>,
}

impl ApicurioRegistry {
    /// Starts a registry on a free port and waits until its Confluent-compatible API answers
    /// (2 to 3 s here).
    ///
    /// # Panics
    ///
    /// When the registry is not installed (the message says to run
    /// `scripts/registry-dev install`), or it does not answer within 90 seconds (the message
    /// holds the end of its logs).
    pub fn start() -> ApicurioRegistry {
        static REGISTRIES: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "runnel-registry-test-{}-{}",
            std::process::id(),
            REGISTRIES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
        let port = free_port();
        let stdout = dir.join("stdout.log");
        let output = std::fs::File::create(&stdout)
            .unwrap_or_else(|error| panic!("creating {}: {error}", stdout.display()));
        let script = registry_dev();
        let watchdog = watched(&script, "KILL", None)
            .args(["run", "--port", &port.to_string(), "--dir"])
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(
                output
                    .try_clone()
                    .expect("sharing the registry's output file"),
            )
            .stderr(output)
            .spawn()
            .unwrap_or_else(|error| panic!("starting {} failed: {error}", script.display()));
        let mut registry = ApicurioRegistry {
            dir,
            port,
            watchdog: Some(watchdog),
        };
        registry.wait_until_ready();
        registry
    }

    /// The base of the Confluent-compatible API: `http://127.0.0.1:<port>/apis/ccompat/v7`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/apis/ccompat/v7", self.port)
    }

    /// Where the registry keeps its pid file and logs (`registry.log`, `stdout.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sends one HTTP/1.0 request to `path` under [`url`](ApicurioRegistry::url) (so
    /// `"/subjects"` is `GET <url>/subjects`), with `body` as
    /// `application/vnd.schemaregistry.v1+json`, and returns the status and the body of the
    /// response.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or its answer is not HTTP.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), String> {
        http(self.port, method, &format!("/apis/ccompat/v7{path}"), body)
    }

    fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + REGISTRY_START_TIMEOUT;
        loop {
            let last = match self.request("GET", "/subjects", None) {
                Ok((200, _)) => return,
                Ok((status, body)) => format!("it answered {status}: {body}"),
                Err(error) => error,
            };
            if let Some(status) = self
                .watchdog
                .as_mut()
                .and_then(|watchdog| watchdog.try_wait().ok().flatten())
            {
                panic!(
                    "{}",
                    self.failure(&format!("the registry exited ({status})"))
                );
            }
            assert!(
                Instant::now() < deadline,
                "{}",
                self.failure(&format!(
                    "the registry did not answer on port {} within {} s ({last})",
                    self.port,
                    REGISTRY_START_TIMEOUT.as_secs()
                ))
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `what`, followed by the end of the registry's logs.
    fn failure(&self, what: &str) -> String {
        let mut message = format!("{what}; its logs are in {}", self.dir.display());
        for file in ["stdout.log", "registry.log"] {
            let path = self.dir.join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(20)..];
            message.push_str(&format!("\n--- the end of {} ---\n", path.display()));
            message.push_str(&tail.join("\n"));
        }
        message
    }
}

impl Drop for ApicurioRegistry {
    fn drop(&mut self) {
        end_watchdogs(self.watchdog.take().into_iter().collect());
        if std::thread::panicking() {
            eprintln!("the registry's logs stay in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One HTTP/1.0 request to `127.0.0.1:port`: the status and body of the response.
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .map_err(|error| format!("connecting to port {port}: {error}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|error| error.to_string())?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\
         Accept: application/vnd.schemaregistry.v1+json, application/json\r\n\
         Content-Type: application/vnd.schemaregistry.v1+json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|error| format!("sending {method} {path}: {error}"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|error| format!("reading the answer to {method} {path}: {error}"))?;
    let (head, content) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("the answer to {method} {path} has no end of headers"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| format!("the answer to {method} {path} has no status: {head}"))?;
    Ok((status, content.to_owned()))
}

/// `scripts/registry-dev` of the repository this crate was built from.
fn registry_dev() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/registry-dev")
}
