//! [`GroupMember`]: an app process that is one member of a consumer group on Kafka, whose
//! partition assignments the test follows from its log.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

/// An app process whose `partitions assigned: ...` log lines (the Kafka backplane logs one
/// per rebalance) arrive on a channel, so a test can wait for the group to settle. Killed
/// when dropped, so a failed test leaves nothing running.
#[derive(Debug)]
pub struct GroupMember {
    /// The process.
    pub child: Child,
    assignments: mpsc::Receiver<(String, BTreeSet<String>)>,
    /// The last assignment logged for each group.
    latest: BTreeMap<String, BTreeSet<String>>,
    /// Every line of its standard output so far.
    lines: Arc<Mutex<Vec<String>>>,
}

impl GroupMember {
    /// Starts `command` with its standard output read for assignments and echoed to the
    /// test's standard error as `[name] line`.
    ///
    /// # Panics
    ///
    /// If the process cannot be started.
    pub fn start(name: &'static str, mut command: Command) -> GroupMember {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the member process starts");
        let stdout = child.stdout.take().expect("its output is piped");
        let (sender, assignments) = mpsc::channel();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                eprintln!("[{name}] {line}");
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line.clone());
                if let Some(list) = line.split("partitions assigned: ").nth(1) {
                    let (partitions, group) = list.split_once(" group=").unwrap_or((list, ""));
                    let group = group.split_whitespace().next().unwrap_or_default();
                    let owned: BTreeSet<String> = partitions
                        .split(", ")
                        .filter(|partition| *partition != "none")
                        .map(str::to_owned)
                        .collect();
                    let _ = sender.send((group.to_owned(), owned));
                }
            }
        });
        GroupMember {
            child,
            assignments,
            latest: BTreeMap::new(),
            lines,
        }
    }

    /// The partitions (`topic/partition`) the process owns: what the last logged assignment
    /// of each of its groups gave it.
    pub fn owns(&mut self) -> BTreeSet<String> {
        while let Ok((group, owned)) = self.assignments.try_recv() {
            self.latest.insert(group, owned);
        }
        self.latest.values().flatten().cloned().collect()
    }

    /// Whether a line of its standard output so far contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().any(|line| line.contains(text))
    }

    /// Kills the process with SIGKILL (no drain, no commit, no leaving the group) and
    /// reaps it.
    ///
    /// # Panics
    ///
    /// If it cannot be signalled.
    pub fn kill(&mut self) {
        self.child.kill().expect("the member can be killed");
        let _ = self.child.wait();
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
