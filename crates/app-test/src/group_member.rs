//! [`GroupMember`]: an app process that is one member of a consumer group on Kafka, whose
//! partition assignments the test follows from its log.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// An app process whose `partitions assigned: ...` log lines (the Kafka backplane logs one
/// per rebalance) arrive on a channel, so a test can wait for the group to settle. Killed
/// when dropped, so a failed test leaves nothing running.
#[derive(Debug)]
pub struct GroupMember {
    /// The process.
    pub child: Child,
    assignments: mpsc::Receiver<BTreeSet<String>>,
    latest: Option<BTreeSet<String>>,
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
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                eprintln!("[{name}] {line}");
                if let Some(list) = line.split("partitions assigned: ").nth(1) {
                    let owned: BTreeSet<String> = list
                        .split(" group=")
                        .next()
                        .unwrap_or_default()
                        .split(", ")
                        .filter(|partition| *partition != "none")
                        .map(str::to_owned)
                        .collect();
                    let _ = sender.send(owned);
                }
            }
        });
        GroupMember {
            child,
            assignments,
            latest: None,
        }
    }

    /// The partitions the member's last logged assignment gave it (`topic/partition`).
    pub fn owns(&mut self) -> BTreeSet<String> {
        while let Ok(owned) = self.assignments.try_recv() {
            self.latest = Some(owned);
        }
        self.latest.clone().unwrap_or_default()
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
