//! Exactly-once on Apache Kafka, from outside: 200,000 keyed inputs go through an
//! exactly-once copy run by member processes of one consumer group, each process killed with
//! SIGKILL at random moments 20 times in all, while the group scales from one member to three
//! and back to two. In between, a member is paused with SIGSTOP until a replacement (another
//! process, as a new pod would be) has taken its partitions over, then resumed: the zombie's
//! open transaction must not commit. A plain confluent-kafka consumer (Python, no Runnel
//! code) then reads the output read_committed: every input exactly once, each partition in
//! input order; read_uncommitted it sees the aborted records the kills left behind.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec, partition_for_key};
use runnel_host::HostSettings;
use runnel_kafka::{KafkaBackend, KafkaConfig};
use runnel_streamlet::prelude::*;
use tokio::sync::watch;

use crate::support::{self, ExactlyOnceCopy, Topics};

const INPUTS: usize = 200_000;
const KILLS: usize = 20;
const PARTITIONS: u32 = 6;
/// Distinct keys of the inputs.
const KEYS: usize = 101;
/// The environment variable that makes [`member`] a member process: the bootstrap servers,
/// the input, output and dead-letter topics and the member's replica name, one per line.
const MEMBER: &str = "RUNNEL_KAFKA_SOAK_MEMBER";
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/read_committed.py");

/// The backplane's settings for the members: a member gone is noticed after 6 s (Kafka's
/// default is 45 s, which would make every kill wait that long for a rebalance).
fn member_config(bootstrap: &str) -> KafkaConfig {
    KafkaConfig::new(bootstrap)
        .with("session.timeout.ms", "6000")
        .with("heartbeat.interval.ms", "1000")
}

/// A member process of the soak (run by [`exactly_once_survives_kills_scaling_and_a_zombie`]):
/// runs the copy as instance `copy` with its replica's transactional id, and, as the runtime's
/// supervisor does, starts it again after a failure (a revocation with work in flight, a
/// fenced producer), printing `failed: ...` to stderr.
#[test]
#[ignore = "a member process of exactly_once_survives_kills_scaling_and_a_zombie"]
fn member() {
    let setup = std::env::var(MEMBER).expect("run by the soak test");
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    // The test holds this process's stdin: when it ends, however it ends, so does this.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let [bootstrap, input, output, dead, replica] = setup
        .lines()
        .collect::<Vec<_>>()
        .try_into()
        .expect("five lines");
    let topics = Topics {
        input: input.into(),
        output: output.into(),
        dead: dead.into(),
    };
    let connecting = tokio::runtime::Runtime::new().unwrap();
    let backend = connecting
        .block_on(KafkaBackend::connect(member_config(bootstrap)))
        .unwrap();
    let (_never, ended) = watch::channel(false);
    loop {
        let settings = HostSettings {
            commit_interval: Duration::from_millis(100),
            ..HostSettings::default()
        };
        let transactional_id = format!("{}.copy.{replica}", topics.input);
        let (runtime, running) = support::start(
            // A millisecond's pause every 16 values, so kills land mid-stream.
            ExactlyOnceCopy {
                every: 16,
                pause: Duration::from_millis(1),
            },
            &backend,
            &topics,
            "copy",
            ended.clone(),
            settings,
            Some(transactional_id),
        );
        eprintln!("started");
        match runtime.block_on(running) {
            Ok(Err(error)) => eprintln!("failed: {error:#}"),
            Ok(Ok(())) => eprintln!("failed: the copy ended"),
            Err(panic) => eprintln!("failed: {panic}"),
        }
        runtime.shutdown_background();
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A member process and what it printed to stderr; killed when dropped.
struct Member {
    name: String,
    child: Child,
    said: Arc<Mutex<Vec<String>>>,
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Member {
    fn start(setup: &str, name: &str) -> Member {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "exactly_once_soak::member", "--ignored"])
            .args(["--nocapture", "--test-threads=1"])
            .env(MEMBER, format!("{setup}\n{name}"))
            // The consumer's assignments too, so the test knows who holds partitions.
            .env("RUST_LOG", "warn,runnel_kafka::consumer=info")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let keep = said.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(std::result::Result::ok) {
                keep.lock().unwrap().push(line);
            }
        });
        Member {
            name: name.into(),
            child,
            said,
        }
    }

    /// Lines of stderr from the `from`-th on that start with `failed:`.
    fn failures_since(&self, from: usize) -> Vec<String> {
        let said = self.said.lock().unwrap();
        said.iter()
            .skip(from)
            .filter(|line| line.starts_with("failed:"))
            .cloned()
            .collect()
    }

    /// Whether the member's consumer holds partitions, by the last assignment or revocation
    /// it logged (the group's rebalances are eager: an assignment lists all it holds).
    fn holds_partitions(&self) -> bool {
        let said = self.said.lock().unwrap();
        said.iter()
            .rev()
            .find_map(|line| {
                if line.contains("partitions revoked: ") {
                    return Some(false);
                }
                let at = line.find("partitions assigned: ")?;
                Some(!line[at..].trim_end().ends_with("none"))
            })
            .unwrap_or(false)
    }

    fn lines(&self) -> usize {
        self.said.lock().unwrap().len()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {}", self.name);
    }

    /// Kills the process with SIGKILL.
    fn kill(self) {
        drop(self);
    }
}

/// A small deterministic generator (xorshift), seeded from the clock and printed, so a
/// failing schedule can be replayed by setting the seed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// The records written to `topic` so far (committed, aborted and transaction markers).
fn written(runtime: &tokio::runtime::Runtime, backend: &KafkaBackend, topic: &str) -> u64 {
    runtime
        .block_on(backend.offsets(topic))
        .unwrap()
        .iter()
        .map(|partition| partition.end)
        .sum()
}

/// Waits until more than `target` records were written to `topic`.
fn progress_past(
    runtime: &tokio::runtime::Runtime,
    backend: &KafkaBackend,
    topic: &str,
    target: u64,
    what: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while written(runtime, backend, topic) <= target {
        assert!(
            Instant::now() < deadline,
            "no progress past {target}: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the outside reader read of `topic` with `isolation`, per partition.
fn read_outside(
    bootstrap: &str,
    topic: &str,
    count: usize,
    isolation: &str,
) -> BTreeMap<u32, Vec<String>> {
    let output = Command::new("python3")
        .arg(SCRIPT)
        .args([bootstrap, topic, &count.to_string(), isolation])
        .stderr(Stdio::inherit())
        .output()
        .expect("running python3");
    assert!(
        output.status.success(),
        "read_committed.py {isolation} failed"
    );
    let read: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut partitions = BTreeMap::new();
    for (partition, values) in read["partitions"].as_object().unwrap() {
        let values = values
            .as_array()
            .unwrap()
            .iter()
            .map(|text| serde_json::from_str(text.as_str().unwrap()).unwrap())
            .collect();
        partitions.insert(partition.parse().unwrap(), values);
    }
    partitions
}

/// The marks the copy's progress is checked against: the kills, the pause and the steps
/// after it, evenly spread over the inputs.
const MARKS: u64 = KILLS as u64 + 5;

/// The soak's members and schedule.
struct Soak<'a> {
    runtime: &'a tokio::runtime::Runtime,
    backend: &'a KafkaBackend,
    output: &'a str,
    /// What a member process is told, less its name.
    setup: String,
    dice: Dice,
    marks_passed: u64,
    members: Vec<Member>,
    kills: usize,
}

impl Soak<'_> {
    fn start(&mut self, name: &str) {
        self.members.push(Member::start(&self.setup, name));
    }

    /// Waits for the copy to pass the next mark in the output (aborted records and markers
    /// included, so the marks come a little early), then for a random moment up to 300 ms:
    /// mid-transaction, as transactions commit every 100 ms.
    fn wait_for_next_mark(&mut self, what: &str) {
        self.marks_passed += 1;
        let mark = self.marks_passed * INPUTS as u64 / (MARKS + 1);
        progress_past(self.runtime, self.backend, self.output, mark, what);
        std::thread::sleep(Duration::from_millis(self.dice.below(300)));
    }

    /// One of the members, chosen at random, taken out of the group's list.
    fn take_one(&mut self) -> Member {
        let chosen = self.dice.below(self.members.len() as u64) as usize;
        self.members.remove(chosen)
    }

    /// One of the members that hold partitions (so have a transaction open), chosen at
    /// random, taken out of the group's list; waits for one after a rebalance.
    fn take_one_holding_partitions(&mut self) -> Member {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let holding: Vec<usize> = (0..self.members.len())
                .filter(|&index| self.members[index].holds_partitions())
                .collect();
            if !holding.is_empty() {
                let chosen = holding[self.dice.below(holding.len() as u64) as usize];
                return self.members.remove(chosen);
            }
            assert!(
                Instant::now() < deadline,
                "no member logged holding partitions"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// At the next mark, kills a member chosen at random with SIGKILL and starts it again
    /// under the same name.
    fn kill_one(&mut self) {
        self.wait_for_next_mark("before a kill");
        let victim = self.take_one();
        let name = victim.name.clone();
        victim.kill();
        self.start(&name);
        self.kills += 1;
    }
}

#[test]
fn exactly_once_survives_kills_scaling_and_a_zombie() {
    let broker = support::kafka();
    let bootstrap = broker.bootstrap_servers();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = runtime
        .block_on(KafkaBackend::connect(broker.config()))
        .unwrap();
    let topics = Topics::unique("soak");
    let mut expected: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    runtime.block_on(async {
        for topic in [&topics.input, &topics.output, &topics.dead] {
            backend
                .create_topic(&TopicSpec::new(topic, PARTITIONS))
                .await
                .unwrap();
        }
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        for i in 0..INPUTS {
            let key = format!("k{}", i % KEYS);
            let value = format!("{key}-{i}");
            let partition = partition_for_key(key.as_bytes(), PARTITIONS);
            expected.entry(partition).or_default().push(value.clone());
            let record = Record::new(serde_json::to_vec(&value).unwrap()).with_key(key);
            drop(
                producer
                    .send(&topics.input, partition, record)
                    .await
                    .unwrap(),
            );
        }
        producer.flush().await.unwrap();
    });

    let seed = std::env::var("RUNNEL_SOAK_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("soak schedule seed {seed} (RUNNEL_SOAK_SEED replays it)");
    let mut soak = Soak {
        runtime: &runtime,
        backend: &backend,
        output: &topics.output,
        setup: format!(
            "{bootstrap}\n{}\n{}\n{}",
            topics.input, topics.output, topics.dead
        ),
        dice: Dice(seed),
        marks_passed: 0,
        members: Vec::new(),
        kills: 0,
    };
    soak.start("m0");
    // One member, killed and restarted.
    for _ in 0..6 {
        soak.kill_one();
    }
    // Scaled out to three, any of them killed.
    soak.start("m1");
    soak.start("m2");
    for _ in 0..7 {
        soak.kill_one();
    }

    // A zombie: one member paused mid-transaction until a replacement (a process of another
    // name, as a new pod would be) has its partitions and the copy has moved on, then resumed.
    soak.wait_for_next_mark("before the pause");
    // A member that was just restarted may not hold partitions yet, and so would have
    // nothing to notice.
    let zombie = soak.take_one_holding_partitions();
    zombie.signal("-STOP");
    soak.start("m3");
    soak.wait_for_next_mark("with a member paused");
    std::thread::sleep(Duration::from_secs(8)); // past the session timeout: the group moved on
    soak.wait_for_next_mark("after the group moved on");
    let before = zombie.lines();
    zombie.signal("-CONT");
    let deadline = Instant::now() + Duration::from_secs(60);
    while zombie.failures_since(before).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the resumed zombie {} never noticed it was replaced; it said:\n{}",
            zombie.name,
            zombie.said.lock().unwrap().join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "the resumed zombie {}: {:?}",
        zombie.name,
        zombie.failures_since(before)
    );
    zombie.kill();

    // Scaled in to two (one of the three stopped for good), then the rest of the kills.
    soak.take_one().kill();
    for _ in 0..(KILLS - 13) {
        soak.kill_one();
    }
    assert_eq!(soak.kills, KILLS);
    assert_eq!(soak.members.len(), 2);
    let members = std::mem::take(&mut soak.members);

    let copied = read_outside(&bootstrap, &topics.output, INPUTS, "read_committed");
    let everything = read_outside(&bootstrap, &topics.output, INPUTS, "read_uncommitted");
    for member in members {
        member.kill();
    }
    let count = |read: &BTreeMap<u32, Vec<String>>| read.values().map(Vec::len).sum::<usize>();
    eprintln!(
        "read committed: {}; read uncommitted: {} (aborted: {})",
        count(&copied),
        count(&everything),
        count(&everything) - count(&copied)
    );
    assert_eq!(count(&copied), INPUTS, "every input once, nothing aborted");
    assert!(
        copied == expected,
        "every input once, in input order per partition"
    );
    assert!(
        count(&everything) > INPUTS,
        "the kills left aborted records behind, which read_committed hid"
    );
}
